#include "lib/clients/qbittorrent/client.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace archctl::clients::qbittorrent {
namespace {

constexpr std::size_t k_ids_per_request = 100;
constexpr const char* k_api = "/api/v2/";

http::Request get(const std::string& endpoint, http::Params query = {}) {
    http::Request r;
    r.method = http::Method::get;
    r.path = k_api + endpoint;
    r.query = std::move(query);
    return r;
}

http::Request post_form(const std::string& endpoint, http::Params form) {
    http::Request r;
    r.method = http::Method::post;
    r.path = k_api + endpoint;
    r.body_kind = http::BodyKind::form;
    r.form = std::move(form);
    return r;
}

std::string trimmed(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
    return std::string(text);
}

bool contains_nocase(std::string_view text, std::string_view word) {
    auto it = std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != text.end();
}

ErrorCode code_for_status(long status) {
    switch (status) {
        case 400: return ErrorCode::QB_BAD_REQUEST;
        case 401: return ErrorCode::QB_REJECTED;
        case 403: return ErrorCode::QB_FORBIDDEN;
        case 404: return ErrorCode::QB_NOT_FOUND;
        case 405: return ErrorCode::QB_BAD_REQUEST;
        case 409: return ErrorCode::QB_CONFLICT;
        case 415: return ErrorCode::QB_INVALID_TORRENT;
        default: return status >= 500 ? ErrorCode::QB_SERVER_ERROR : ErrorCode::QB_UNEXPECTED;
    }
}

std::string layout_name(ContentLayout layout) {
    switch (layout) {
        case ContentLayout::original: return "Original";
        case ContentLayout::subfolder: return "Subfolder";
        case ContentLayout::no_subfolder: return "NoSubfolder";
    }
    return "Original";
}

std::vector<std::vector<std::string>> chunks(const std::vector<std::string>& ids) {
    std::vector<std::vector<std::string>> out;
    for (std::size_t i = 0; i < ids.size(); i += k_ids_per_request) {
        const auto end = std::min(ids.size(), i + k_ids_per_request);
        out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(i), ids.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return out;
}

std::string join_tags(const std::vector<std::string>& tags) {
    std::string out;
    for (const auto& t : tags) {
        if (!out.empty()) out.push_back(',');
        out += t;
    }
    return out;
}

}  // namespace

std::string join_ids(const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) {
        if (!out.empty()) out.push_back('|');
        out += id;
    }
    return out;
}

Client::Client(Settings settings)
    : m_settings([&] {
          if (settings.http.service.empty()) settings.http.service = "qBittorrent";
          return std::move(settings);
      }()),
      m_http(m_settings.http) {
    m_http.add_secret(m_settings.password);
}

Error Client::login_error(const http::Response& response) const {
    const auto& node = m_settings.http.node;
    if (response.status == 403) {
        if (contains_nocase(response.body, "banned")) {
            return Error(ErrorCode::QB_BANNED,
                         fmt::format("login to qBittorrent on '{}' refused: this address is banned after too many failed logins", node),
                         "wait for the ban to expire (WebUI\\BanDuration) or restart qBittorrent, then check the password");
        }
        return Error(ErrorCode::QB_FORBIDDEN, fmt::format("login to qBittorrent on '{}' refused (HTTP 403)", node));
    }
    std::string where;
    if (m_settings.password.empty()) {
        where = " (no password configured)";
    } else if (!m_settings.password_file.empty()) {
        where = fmt::format(" (password from '{}')", m_settings.password_file);
    }
    std::string hint = fmt::format("check nodes.{}.qbittorrent.username and the password", node);
    if (response.status == 401) {
        hint += "; a 401 can also mean qBittorrent's Host-header or CSRF check rejected the request";
    }
    // Built from fixed text only (no server data), so it needs no redaction: a password that is an
    // ordinary word must not garble the message.
    return Error(ErrorCode::QB_AUTH, fmt::format("login to qBittorrent on '{}' failed: wrong username or password{}", node, where),
                 hint);
}

Status Client::login() {
    // Credentials qBittorrent refused are never sent twice: a few refusals ban the address, and
    // with it every other WebUI client on this host.
    if (m_refused) return *m_refused;
    const auto& node = m_settings.http.node;
    if (m_settings.logins && m_settings.logins->refused(node, m_settings.username, m_settings.password)) {
        m_refused = Error(ErrorCode::QB_AUTH,
                          fmt::format("login to qBittorrent on '{}' was refused for these credentials before; archctl does not send them again", node),
                          fmt::format("check nodes.{}.qbittorrent.username and the password (changed credentials are tried again), or run "
                                      "'archctl node check {}' to try these once more",
                                      node, node));
        return *m_refused;
    }
    m_http.clear_cookies();
    m_logged_in = false;
    ARCHCTL_TRY_ASSIGN(auto response, m_http.send(post_form("auth/login", {{"username", m_settings.username},
                                                                            {"password", m_settings.password}})));
    const std::string body = trimmed(response.body);
    const bool ok = response.status == 204 || (response.status == 200 && (body == "Ok." || body.empty()));
    if (ok) {
        m_logged_in = true;
        if (m_settings.logins) m_settings.logins->forget(node);
        return ok_status();
    }
    if (response.status == 200 || response.status == 401 || response.status == 403) {
        Error e = login_error(response);
        if (e.is(ErrorCode::QB_AUTH)) {
            e.hint += fmt::format("; archctl does not send these credentials again until they change or you run 'archctl node check {}' "
                                  "(qBittorrent bans an address after repeated failed logins)",
                                  node);
            m_refused = e;
            if (m_settings.logins) m_settings.logins->remember(node, m_settings.username, m_settings.password);
        }
        return e;
    }
    return m_http.status_error(post_form("auth/login", {}), response, code_for_status(response.status));
}

Result<http::Response> Client::call(const http::Request& request) {
    if (!m_logged_in) ARCHCTL_TRY_STATUS(login());
    ARCHCTL_TRY_ASSIGN(auto response, m_http.send(request));
    if (response.status != 403) return response;
    ARCHCTL_TRY_STATUS(login());
    return m_http.send(request);
}

Result<http::Response> Client::call_ok(const http::Request& request, const std::string& subject) {
    ARCHCTL_TRY_ASSIGN(auto response, call(request));
    if (response.ok()) return response;
    if (response.status == 404 && !subject.empty()) {
        return Error(ErrorCode::QB_NOT_FOUND, fmt::format("torrent '{}' not found on qBittorrent '{}'", subject, m_settings.http.node));
    }
    return m_http.status_error(request, response, code_for_status(response.status));
}

Result<nlohmann::json> Client::call_json(const http::Request& request, const std::string& subject) {
    ARCHCTL_TRY_ASSIGN(auto response, call_ok(request, subject));
    auto parsed = nlohmann::json::parse(response.body, nullptr, false);
    if (parsed.is_discarded()) {
        return Error(ErrorCode::QB_BAD_REPLY, fmt::format("qBittorrent on '{}': {} returned invalid JSON", m_settings.http.node, request.path));
    }
    return parsed;
}

Status Client::action(const std::string& endpoint, http::Params form, const std::string& subject) {
    ARCHCTL_TRY_STATUS(call_ok(post_form(endpoint, std::move(form)), subject));
    return ok_status();
}

Result<Capabilities> Client::capabilities() {
    if (m_capabilities) return *m_capabilities;
    ARCHCTL_TRY_ASSIGN(auto app, call_ok(get("app/version")));
    auto app_version = Version::parse(app.body);
    std::optional<Version> api_version = app_version ? known_webapi(*app_version) : std::nullopt;
    if (app_version && !api_version) {
        ARCHCTL_TRY_ASSIGN(auto api, call_ok(get("app/webapiVersion")));
        api_version = Version::parse(api.body);
    }
    if (!app_version || !api_version) {
        return Error(ErrorCode::QB_BAD_REPLY, fmt::format("qBittorrent on '{}' sent an unreadable version", m_settings.http.node));
    }
    m_capabilities = Capabilities(*app_version, *api_version);
    return *m_capabilities;
}

Result<std::vector<TorrentInfo>> Client::torrents(const std::vector<std::string>& ids) {
    std::vector<TorrentInfo> out;
    for (const auto& batch : chunks(ids)) {
        ARCHCTL_TRY_ASSIGN(auto array, call_json(get("torrents/info", {{"hashes", join_ids(batch)}})));
        for (const auto& o : array) out.push_back(parse_torrent_info(o));
    }
    return out;
}

Result<std::vector<TorrentInfo>> Client::all_torrents() {
    ARCHCTL_TRY_ASSIGN(auto array, call_json(get("torrents/info")));
    std::vector<TorrentInfo> out;
    for (const auto& o : array) out.push_back(parse_torrent_info(o));
    return out;
}

Result<TorrentProperties> Client::properties(const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto object, call_json(get("torrents/properties", {{"hash", id}}), id));
    auto props = parse_properties(object);
    if (props.id.empty()) props.id = id;
    return props;
}

Result<std::vector<TorrentFile>> Client::files(const std::string& id) {
    const http::Request request = get("torrents/files", {{"hash", id}});
    ARCHCTL_TRY_ASSIGN(auto response, call_ok(request, id));
    auto files = parse_files_body(response.body);
    if (!files) {
        return Error(ErrorCode::QB_BAD_REPLY, fmt::format("qBittorrent on '{}': {} returned invalid JSON", m_settings.http.node, request.path));
    }
    return std::move(*files);
}

Result<std::string> Client::export_torrent(const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto caps, capabilities());
    if (!caps.has(Feature::export_torrent)) {
        return Error(ErrorCode::QB_UNSUPPORTED, fmt::format("qBittorrent on '{}' ({}) cannot export torrents (needs 4.5 or later)",
                                                   m_settings.http.node, caps.app().text));
    }
    http::Request request = get("torrents/export", {{"hash", id}});
    request.total_timeout = m_settings.export_timeout;
    request.retry = http::RetryMode::connect_only;
    auto response = call_ok(request, id);
    if (!response.ok() && response.error().is(ErrorCode::HTTP_TIMEOUT)) return export_timeout_error(id);
    if (!response.ok()) return response.take_error();
    return std::move(response->body);
}

Result<Announce> Client::announce(const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto trackers, call_json(get("torrents/trackers", {{"hash", id}}), id));
    ARCHCTL_TRY_ASSIGN(auto seeds, call_json(get("torrents/webseeds", {{"hash", id}}), id));
    Announce out;
    auto bad = [&](const char* path) {
        return Error(ErrorCode::QB_BAD_REPLY, fmt::format("qBittorrent on '{}': {} returned an unexpected answer", m_settings.http.node, path));
    };
    if (!trackers.is_array() || !seeds.is_array()) return bad(trackers.is_array() ? "torrents/webseeds" : "torrents/trackers");
    for (const auto& t : trackers) {
        if (!t.is_object() || !t.contains("url") || !t["url"].is_string()) return bad("torrents/trackers");
        const std::string url = t["url"].get<std::string>();
        const auto tier = t.value("tier", nlohmann::json(-1));
        // DHT, PeX and LSD are listed as "** [DHT] **" with tier -1 (a string "" on older versions).
        if (!tier.is_number_integer() || tier.get<std::int64_t>() < 0 || url.empty() || url.starts_with("** ")) continue;
        auto at = static_cast<std::size_t>(tier.get<std::int64_t>());
        if (at > 1000) return bad("torrents/trackers");
        if (out.tiers.size() <= at) out.tiers.resize(at + 1);
        out.tiers[at].push_back(url);
    }
    std::erase_if(out.tiers, [](const auto& tier) { return tier.empty(); });
    for (const auto& w : seeds) {
        if (!w.is_object() || !w.contains("url") || !w["url"].is_string()) return bad("torrents/webseeds");
        out.web_seeds.push_back(w["url"].get<std::string>());
    }
    return out;
}

Error Client::export_timeout_error(const std::string& id) const {
    const auto& node = m_settings.http.node;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(m_settings.export_timeout).count();
    return Error(ErrorCode::QB_TIMEOUT,
                 fmt::format("qBittorrent on '{}' did not finish exporting torrent '{}' within {} s (torrents/export of a large v2 or "
                             "hybrid torrent can take minutes; it was not asked again)",
                             node, id.substr(0, 12), seconds),
                 fmt::format("raise nodes.{}.qbittorrent.export_timeout (e.g. \"30m\"), wait until qBittorrent's web interface answers "
                             "again, and rerun",
                             node));
}

Status Client::add(const AddTorrent& torrent) {
    ARCHCTL_TRY_ASSIGN(auto caps, capabilities());
    const std::string stopped = torrent.start == AddStart::stopped ? "true" : "false";
    http::Request r;
    r.method = http::Method::post;
    r.path = std::string(k_api) + "torrents/add";
    r.body_kind = http::BodyKind::multipart;
    r.retry = http::RetryMode::connect_only;  // a repeated add after a timeout reads as a duplicate
    r.form = {{"savepath", torrent.save_path},
              {"autoTMM", "false"},
              {"paused", stopped},   // ≤ 4.6
              {"stopped", stopped},  // 5.0+
              {caps.skip_check_param(), torrent.skip_checking ? "true" : "false"},
              {"contentLayout", layout_name(torrent.layout)},
              {"useDownloadPath", "false"}};
    if (!torrent.rename.empty()) r.form.emplace_back("rename", torrent.rename);
    if (!torrent.tags.empty()) r.form.emplace_back("tags", join_tags(torrent.tags));
    if (!torrent.category.empty()) r.form.emplace_back("category", torrent.category);
    if (torrent.no_share_limits) {
        r.form.emplace_back("ratioLimit", "-1");
        r.form.emplace_back("seedingTimeLimit", "-1");
        r.form.emplace_back("inactiveSeedingTimeLimit", "-1");
    }
    ++m_uploads;
    r.files.push_back({"torrents", fmt::format("archctl-{}-{}.torrent", ::getpid(), m_uploads),
                       "application/x-bittorrent", torrent.metainfo});
    ARCHCTL_TRY_ASSIGN(auto response, call(r));
    const std::string body = trimmed(response.body);
    const auto& node = m_settings.http.node;
    if (response.status == 415) {
        return Error(ErrorCode::QB_INVALID_TORRENT, fmt::format("qBittorrent on '{}' rejected the metainfo as not a valid torrent", node));
    }
    const bool refused = (response.status == 200 && body == "Fails.") || response.status == 409;
    if (refused) {
        return Error(ErrorCode::QB_ADD_REFUSED, fmt::format("qBittorrent on '{}' added nothing (torrent already present, or refused)", node));
    }
    if (!response.ok()) return m_http.status_error(r, response, code_for_status(response.status));
    if (caps.has(Feature::add_returns_json) && !body.empty()) {
        auto parsed = nlohmann::json::parse(body, nullptr, false);
        if (parsed.is_object() && parsed.value("success_count", 0) == 0 && parsed.value("pending_count", 0) == 0) {
            return Error(ErrorCode::QB_ADD_REFUSED, fmt::format("qBittorrent on '{}' added nothing", node));
        }
    }
    return ok_status();
}

Status Client::set_file_priority(const std::string& id, const std::vector<std::uint32_t>& indices,
                                 FilePriority priority) {
    if (indices.empty()) return ok_status();
    std::string list;
    for (auto index : indices) {
        if (!list.empty()) list.push_back('|');
        list += std::to_string(index);
    }
    return action("torrents/filePrio",
                  {{"hash", id}, {"id", list}, {"priority", std::to_string(static_cast<int>(priority))}}, id);
}

Status Client::recheck(const std::vector<std::string>& ids) {
    for (const auto& batch : chunks(ids)) ARCHCTL_TRY_STATUS(action("torrents/recheck", {{"hashes", join_ids(batch)}}));
    return ok_status();
}

Status Client::stop(const std::vector<std::string>& ids) {
    ARCHCTL_TRY_ASSIGN(auto caps, capabilities());
    for (const auto& batch : chunks(ids)) ARCHCTL_TRY_STATUS(action(caps.stop_endpoint(), {{"hashes", join_ids(batch)}}));
    return ok_status();
}

Status Client::start(const std::vector<std::string>& ids) {
    ARCHCTL_TRY_ASSIGN(auto caps, capabilities());
    for (const auto& batch : chunks(ids)) ARCHCTL_TRY_STATUS(action(caps.start_endpoint(), {{"hashes", join_ids(batch)}}));
    return ok_status();
}

Status Client::remove(const std::vector<std::string>& ids, DeleteData data) {
    const std::string delete_files = data == DeleteData::yes_for_tests ? "true" : "false";
    for (const auto& batch : chunks(ids)) {
        ARCHCTL_TRY_STATUS(action("torrents/delete", {{"hashes", join_ids(batch)}, {"deleteFiles", delete_files}}));
    }
    return ok_status();
}


Status Client::add_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) {
    for (const auto& batch : chunks(ids))
        ARCHCTL_TRY_STATUS(action("torrents/addTags", {{"hashes", join_ids(batch)}, {"tags", join_tags(tags)}}));
    return ok_status();
}

Status Client::remove_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) {
    for (const auto& batch : chunks(ids))
        ARCHCTL_TRY_STATUS(action("torrents/removeTags", {{"hashes", join_ids(batch)}, {"tags", join_tags(tags)}}));
    return ok_status();
}

Status Client::delete_tags(const std::vector<std::string>& tags) {
    if (tags.empty()) return ok_status();
    return action("torrents/deleteTags", {{"tags", join_tags(tags)}});
}

Status Client::clear_share_limits(const std::vector<std::string>& ids) {
    // 4.6+ requires the inactive seeding limit as well; 4.5 ignores a parameter it does not know.
    for (const auto& batch : chunks(ids))
        ARCHCTL_TRY_STATUS(action("torrents/setShareLimits", {{"hashes", join_ids(batch)},
                                                              {"ratioLimit", "-1"},
                                                              {"seedingTimeLimit", "-1"},
                                                              {"inactiveSeedingTimeLimit", "-1"}}));
    return ok_status();
}

Result<Categories> Client::categories() {
    ARCHCTL_TRY_ASSIGN(auto object, call_json(get("torrents/categories")));
    Categories out;
    if (!object.is_object()) return out;
    for (const auto& [name, c] : object.items()) {
        std::string save_path;
        if (c.is_object()) {
            auto it = c.find("savePath");
            if (it != c.end() && it->is_string()) save_path = it->get<std::string>();
        }
        out.emplace_back(name, save_path);
    }
    return out;
}

Status Client::create_category(const std::string& name, const std::string& save_path) {
    return action("torrents/createCategory", {{"category", name}, {"savePath", save_path}});
}

Result<nlohmann::json> Client::add_peers(const std::vector<std::string>& ids, const std::vector<std::string>& peers) {
    std::string peer_list;
    for (const auto& p : peers) {
        if (!peer_list.empty()) peer_list.push_back('|');
        peer_list += p;
    }
    ARCHCTL_TRY_ASSIGN(auto response, call_ok(post_form("torrents/addPeers", {{"hashes", join_ids(ids)}, {"peers", peer_list}})));
    auto parsed = nlohmann::json::parse(response.body, nullptr, false);
    return parsed.is_discarded() ? nlohmann::json::object() : parsed;
}

Status Client::sync(MainData& data) {
    ARCHCTL_TRY_ASSIGN(auto reply, call_json(get("sync/maindata", {{"rid", std::to_string(data.rid())}})));
    data.apply(reply);
    return ok_status();
}

Result<nlohmann::json> Client::preferences() { return call_json(get("app/preferences")); }

Status Client::set_preferences(const nlohmann::json& changes) {
    return action("app/setPreferences", {{"json", changes.dump()}});
}

Result<BuildInfo> Client::build_info() {
    ARCHCTL_TRY_ASSIGN(auto object, call_json(get("app/buildInfo")));
    return parse_build_info(object);
}

}  // namespace archctl::clients::qbittorrent
