#include "lib/clients/syncthing/client.hpp"

#include <fmt/format.h>

namespace archctl::clients::syncthing {
namespace {

constexpr auto k_poll_margin = std::chrono::seconds(15);

ErrorCode code_for_status(long status) {
    switch (status) {
        case 400: return ErrorCode::ST_BAD_REQUEST;
        case 401:
        case 403: return ErrorCode::ST_AUTH;
        case 404: return ErrorCode::ST_NOT_FOUND;
        case 405: return ErrorCode::ST_BAD_REQUEST;
        default: return status >= 500 ? ErrorCode::ST_SERVER_ERROR : ErrorCode::ST_UNEXPECTED;
    }
}

// db/need's first page size; a full page is asked again twice as large.
constexpr std::size_t k_need_page = 65536;

}  // namespace

Client::Client(Settings settings)
    : m_settings([&] {
          if (settings.http.service.empty()) settings.http.service = "Syncthing";
          return std::move(settings);
      }()),
      m_http(m_settings.http) {
    m_http.add_secret(m_settings.api_key);
}

http::Request Client::request(http::Method method, const std::string& path, http::Params query) const {
    http::Request r;
    r.method = method;
    r.path = "/rest/" + path;
    r.query = std::move(query);
    r.headers.push_back("X-API-Key: " + m_settings.api_key);
    return r;
}

http::Request Client::json_request(http::Method method, const std::string& path, const nlohmann::json& body) const {
    http::Request r = request(method, path);
    r.body_kind = http::BodyKind::raw;
    r.content_type = "application/json";
    r.body = body.dump();
    return r;
}

Result<http::Response> Client::call_ok(const http::Request& request, const std::string& subject) {
    ARCHCTL_TRY_ASSIGN(auto response, m_http.send(request));
    if (response.ok()) return response;
    return error_for(request, response, subject);
}

Error Client::error_for(const http::Request& request, const http::Response& response, const std::string& subject) const {
    const auto& node = m_settings.http.node;
    // Syncthing's GUI on a loopback address answers a Host other than localhost, 127.0.0.1 or
    // ::1 with 403 "Host check error" (against DNS rebinding): what a URL naming the host its
    // certificate names gets. The API key was never looked at.
    if (response.status == 403 && response.body.find("Host check error") != std::string::npos) {
        const std::string url = http::display_url(m_settings.http.base_url);
        const auto authority = url.find("://") == std::string::npos ? 0 : url.find("://") + 3;
        const auto colon = url.find(':', url.find(']', authority) == std::string::npos ? authority : url.find(']', authority));
        const std::string port = colon == std::string::npos ? "8384" : url.substr(colon + 1, url.find('/', colon) - colon - 1);
        return Error(ErrorCode::ST_BAD_REQUEST,
                     fmt::format("Syncthing on '{}' refused the host name of {} (\"Host check error\"): its GUI listens on a "
                                 "loopback address and accepts only localhost, 127.0.0.1 or ::1 as the host",
                                 node, url),
                     fmt::format("set insecureSkipHostcheck to true in Syncthing's GUI settings (Actions > Advanced > GUI), or "
                                 "give its GUI a certificate that names 127.0.0.1 (https-cert.pem and https-key.pem in its home) "
                                 "and set nodes.{}.syncthing.url to https://127.0.0.1:{}",
                                 node, port));
    }
    if (response.status == 403 || response.status == 401) {
        return Error(ErrorCode::ST_AUTH, fmt::format("Syncthing on '{}' rejected the API key (HTTP {})", node, response.status),
                     fmt::format("check nodes.{}.syncthing.api_key (the <apikey> in Syncthing's config.xml)", node));
    }
    if (response.status == 404 && !subject.empty()) {
        return Error(ErrorCode::ST_NOT_FOUND, fmt::format("{} not found on Syncthing '{}'", subject, node));
    }
    return m_http.status_error(request, response, code_for_status(response.status));
}

Result<nlohmann::json> Client::call_json(const http::Request& request, const std::string& subject) {
    ARCHCTL_TRY_ASSIGN(auto response, call_ok(request, subject));
    auto parsed = nlohmann::json::parse(response.body, nullptr, false);
    if (parsed.is_discarded()) {
        return Error(ErrorCode::ST_BAD_REPLY, fmt::format("Syncthing on '{}': {} returned invalid JSON", m_settings.http.node, request.path));
    }
    return parsed;
}

Result<std::optional<nlohmann::json>> Client::get_optional(const http::Request& request) {
    ARCHCTL_TRY_ASSIGN(auto response, m_http.send(request));
    if (response.status == 404) return std::optional<nlohmann::json>();
    if (!response.ok()) return error_for(request, response, {});
    auto parsed = nlohmann::json::parse(response.body, nullptr, false);
    if (parsed.is_discarded()) {
        return Error(ErrorCode::ST_BAD_REPLY, fmt::format("Syncthing on '{}': {} returned invalid JSON", m_settings.http.node, request.path));
    }
    return std::optional<nlohmann::json>(std::move(parsed));
}

Status Client::ping() {
    ARCHCTL_TRY_ASSIGN(auto reply, call_json(request(http::Method::get, "system/ping")));
    if (reply.value("ping", std::string()) != "pong") {
        return Error(ErrorCode::ST_BAD_REPLY, fmt::format("Syncthing on '{}' answered ping without pong", m_settings.http.node));
    }
    return ok_status();
}

Result<SystemStatus> Client::status() {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "system/status")));
    SystemStatus s;
    s.my_id = o.value("myID", std::string());
    s.start_time = o.value("startTime", std::string());
    if (auto it = o.find("uptime"); it != o.end() && it->is_number_integer()) s.uptime_s = it->get<std::int64_t>();
    s.raw = std::move(o);
    return s;
}

Result<VersionInfo> Client::version() {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "system/version")));
    VersionInfo v;
    v.version = o.value("version", std::string());
    v.long_version = o.value("longVersion", std::string());
    v.raw = std::move(o);
    return v;
}

Result<std::vector<Connection>> Client::connections() {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "system/connections")));
    std::vector<Connection> out;
    if (auto it = o.find("connections"); it != o.end() && it->is_object()) {
        for (const auto& [id, c] : it->items()) {
            Connection conn;
            conn.device_id = id;
            conn.connected = c.value("connected", false);
            conn.paused = c.value("paused", false);
            conn.address = c.value("address", std::string());
            conn.type = c.value("type", std::string());
            out.push_back(std::move(conn));
        }
    }
    return out;
}

Result<std::vector<Device>> Client::devices() {
    ARCHCTL_TRY_ASSIGN(auto array, call_json(request(http::Method::get, "config/devices")));
    std::vector<Device> out;
    for (const auto& o : array) out.push_back(Device::from_json(o));
    return out;
}

Result<std::optional<Device>> Client::device(const std::string& device_id) {
    ARCHCTL_TRY_ASSIGN(auto o, get_optional(request(http::Method::get, "config/devices/" + http::url_encode(device_id))));
    if (!o) return std::optional<Device>();
    return std::optional<Device>(Device::from_json(*o));
}

Status Client::put_device(const Device& device) {
    ARCHCTL_TRY_STATUS(call_ok(json_request(http::Method::put, "config/devices/" + http::url_encode(device.device_id), device.to_json())));
    return ok_status();
}

Status Client::patch_device(const std::string& device_id, const nlohmann::json& changes) {
    ARCHCTL_TRY_STATUS(call_ok(json_request(http::Method::patch, "config/devices/" + http::url_encode(device_id), changes),
                               fmt::format("device '{}'", device_id)));
    return ok_status();
}

Status Client::delete_device(const std::string& device_id) {
    ARCHCTL_TRY_STATUS(call_ok(request(http::Method::del, "config/devices/" + http::url_encode(device_id))));
    return ok_status();
}

Result<std::vector<Folder>> Client::folders() {
    ARCHCTL_TRY_ASSIGN(auto array, call_json(request(http::Method::get, "config/folders")));
    std::vector<Folder> out;
    for (const auto& o : array) out.push_back(Folder::from_json(o));
    return out;
}

Result<std::optional<Folder>> Client::folder(const std::string& folder_id) {
    ARCHCTL_TRY_ASSIGN(auto o, get_optional(request(http::Method::get, "config/folders/" + http::url_encode(folder_id))));
    if (!o) return std::optional<Folder>();
    return std::optional<Folder>(Folder::from_json(*o));
}

Status Client::put_folder(const Folder& folder) {
    if (folder.id.empty() || folder.path.empty()) {
        return Error(ErrorCode::ST_INVALID, fmt::format("cannot configure folder '{}' on Syncthing '{}': id and path are required",
                                               folder.id, m_settings.http.node));
    }
    ARCHCTL_TRY_STATUS(call_ok(json_request(http::Method::put, "config/folders/" + http::url_encode(folder.id), folder.to_json())));
    return ok_status();
}

Status Client::patch_folder(const std::string& folder_id, const nlohmann::json& changes) {
    ARCHCTL_TRY_STATUS(call_ok(json_request(http::Method::patch, "config/folders/" + http::url_encode(folder_id), changes),
                               fmt::format("folder '{}'", folder_id)));
    return ok_status();
}

Status Client::delete_folder(const std::string& folder_id) {
    ARCHCTL_TRY_STATUS(call_ok(request(http::Method::del, "config/folders/" + http::url_encode(folder_id))));
    return ok_status();
}

Result<nlohmann::json> Client::options() { return call_json(request(http::Method::get, "config/options")); }

Status Client::patch_options(const nlohmann::json& changes) {
    ARCHCTL_TRY_STATUS(call_ok(json_request(http::Method::patch, "config/options", changes)));
    return ok_status();
}

Result<FolderStatus> Client::db_status(const std::string& folder_id) {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "db/status", {{"folder", folder_id}}),
                                         fmt::format("folder '{}'", folder_id)));
    return parse_folder_status(o);
}

Result<Completion> Client::completion(const std::string& folder_id, const std::string& device_id) {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "db/completion", {{"folder", folder_id}, {"device", device_id}}),
                                         fmt::format("folder '{}'", folder_id)));
    return parse_completion(o);
}

Result<std::optional<FileRecord>> Client::file(const std::string& folder_id, const std::string& path) {
    ARCHCTL_TRY_ASSIGN(auto o, get_optional(request(http::Method::get, "db/file", {{"folder", folder_id}, {"file", path}})));
    if (!o) return std::optional<FileRecord>();
    return std::optional<FileRecord>(parse_file_record(*o));
}

Status Client::scan(const std::string& folder_id, const std::vector<std::string>& subs) {
    http::Params query = {{"folder", folder_id}};
    for (const auto& sub : subs) query.emplace_back("sub", sub);
    auto r = request(http::Method::post, "db/scan", std::move(query));
    r.total_timeout = m_settings.scan_timeout;
    ARCHCTL_TRY_STATUS(call_ok(r));
    return ok_status();
}

Result<std::vector<GlobalEntry>> Client::browse(const std::string& folder_id, const std::string& prefix) {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "db/browse", {{"folder", folder_id}, {"prefix", prefix}}),
                                         fmt::format("folder '{}'", folder_id)));
    return parse_browse(o, prefix);
}

Result<NeedList> Client::need(const std::string& folder_id) {
    for (std::size_t perpage = k_need_page;; perpage *= 2) {
        ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "db/need",
                                                     {{"folder", folder_id}, {"page", "1"}, {"perpage", std::to_string(perpage)}}),
                                             fmt::format("folder '{}'", folder_id)));
        NeedList n = parse_need(o);
        if (n.total() < perpage) return n;
    }
}

Result<std::vector<FolderError>> Client::folder_errors(const std::string& folder_id) {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "folder/errors", {{"folder", folder_id}}),
                                         fmt::format("folder '{}'", folder_id)));
    std::vector<FolderError> out;
    if (auto it = o.find("errors"); it != o.end() && it->is_array()) {  // null when there are none
        for (const auto& e : *it) {
            if (e.is_object()) out.push_back({e.value("path", std::string()), e.value("error", std::string())});
        }
    }
    return out;
}

namespace {

Ignores ignores_from(const nlohmann::json& o) {
    Ignores out;
    if (!o.is_object()) return out;
    if (auto it = o.find("ignore"); it != o.end() && it->is_array()) {  // null when there is no .stignore
        for (const auto& line : *it)
            if (line.is_string()) out.lines.push_back(line.get<std::string>());
    }
    if (auto it = o.find("error"); it != o.end() && it->is_string()) out.error = it->get<std::string>();
    return out;
}

}  // namespace

Result<Ignores> Client::ignores(const std::string& folder_id) {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "db/ignores", {{"folder", folder_id}}),
                                         fmt::format("folder '{}'", folder_id)));
    return ignores_from(o);
}

Status Client::set_ignores(const std::string& folder_id, const std::vector<std::string>& lines) {
    auto r = json_request(http::Method::post, "db/ignores", {{"ignore", lines}});
    r.query = {{"folder", folder_id}};
    ARCHCTL_TRY_ASSIGN(auto o, call_json(r, fmt::format("folder '{}'", folder_id)));
    Ignores written = ignores_from(o);
    if (!written.error.empty())
        return Error(ErrorCode::ST_INVALID, fmt::format("Syncthing on '{}' refused the ignore patterns of folder '{}': {}",
                                                        m_settings.http.node, folder_id, written.error));
    return ok_status();
}

Result<std::vector<PendingDevice>> Client::pending_devices() {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "cluster/pending/devices")));
    std::vector<PendingDevice> out;
    if (!o.is_object()) return out;
    for (const auto& [id, d] : o.items()) {
        out.push_back({id, d.value("name", std::string()), d.value("address", std::string())});
    }
    return out;
}

Result<std::vector<PendingFolder>> Client::pending_folders() {
    ARCHCTL_TRY_ASSIGN(auto o, call_json(request(http::Method::get, "cluster/pending/folders")));
    std::vector<PendingFolder> out;
    if (!o.is_object()) return out;
    for (const auto& [id, f] : o.items()) {
        PendingFolder p;
        p.folder_id = id;
        if (auto by = f.find("offeredBy"); by != f.end() && by->is_object()) {
            for (const auto& [device, offer] : by->items()) {
                p.offered_by.push_back(device);
                if (p.label.empty() && offer.is_object()) p.label = offer.value("label", std::string());
            }
        }
        out.push_back(std::move(p));
    }
    return out;
}

Result<std::vector<Event>> Client::events(const EventQuery& query) {
    http::Params params = {{"since", std::to_string(query.since)}, {"timeout", std::to_string(query.timeout.count())}};
    if (!query.types.empty()) params.emplace_back("events", mask_of(query.types));
    if (query.limit > 0) params.emplace_back("limit", std::to_string(query.limit));
    auto r = request(http::Method::get, "events", std::move(params));
    r.total_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(query.timeout + k_poll_margin);
    ARCHCTL_TRY_ASSIGN(auto array, call_json(r));
    return parse_events(array);
}

Result<EventBatch> EventStream::next(const std::vector<std::string>& types, std::chrono::seconds timeout) {
    auto [it, inserted] = m_cursors.try_emplace(mask_of(types), types);
    EventCursor& cursor = it->second;
    if (inserted) {
        ARCHCTL_TRY_ASSIGN(auto status, m_client.status());
        cursor.observe_start_time(status.start_time);
    }
    ARCHCTL_TRY_ASSIGN(auto events, m_client.events({cursor.since(), types, timeout, 0}));
    EventBatch batch = cursor.accept(std::move(events));
    if (batch.events.empty() && cursor.since() > 0) {
        // A stale cursor after a restart blocks until timeout: check whether Syncthing restarted.
        ARCHCTL_TRY_ASSIGN(auto status, m_client.status());
        batch.restarted = cursor.observe_start_time(status.start_time);
    }
    return batch;
}

}  // namespace archctl::clients::syncthing
