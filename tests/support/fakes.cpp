#include "tests/support/fakes.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace archctl::fakes {

namespace qb = clients::qbittorrent;
namespace st = clients::syncthing;
using nlohmann::json;

// --- Recorder ---

std::size_t Recorder::count(const std::string& name) const {
    return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(), [&](const Call& c) { return c.name == name; }));
}

std::vector<json> Recorder::args_of(const std::string& name) const {
    std::vector<json> out;
    for (const auto& c : calls)
        if (c.name == name) out.push_back(c.args);
    return out;
}

void Recorder::fail_next(const std::string& name, Error error) { m_next[name].push_back(std::move(error)); }

void Recorder::fail_always(const std::string& name, Error error) { m_always.insert_or_assign(name, std::move(error)); }

void Recorder::heal(const std::string& name) {
    m_next.erase(name);
    m_always.erase(name);
}

std::optional<Error> Recorder::record(const std::string& name, json args) {
    if (on_call) on_call(name);
    calls.push_back({name, std::move(args)});
    if (auto it = m_next.find(name); it != m_next.end() && !it->second.empty()) {
        Error e = std::move(it->second.front());
        it->second.pop_front();
        return e;
    }
    if (auto it = m_always.find(name); it != m_always.end()) return it->second;
    return std::nullopt;
}

// --- FakeQb ---

namespace {

Error qb_not_found(const std::string& id) { return Error(ErrorCode::QB_NOT_FOUND, fmt::format("qBittorrent has no torrent '{}'", id)); }

void set_state(qb::TorrentInfo& info, const QbState& s) {
    info.state = s.state;
    info.run_state = qb::parse_run_state(s.state);
    info.progress = s.progress;
}

json info_json(const qb::TorrentInfo& t) {
    std::string tags;
    for (const auto& tag : t.tags) tags += (tags.empty() ? "" : ", ") + tag;
    return {{"name", t.name},          {"save_path", t.save_path}, {"content_path", t.content_path},
            {"download_path", t.download_path}, {"state", t.state}, {"progress", t.progress},
            {"amount_left", t.amount_left}, {"size", t.size},   {"total_size", t.total_size},
            {"auto_tmm", t.auto_tmm},  {"tags", tags},             {"infohash_v1", t.infohash_v1},
            {"infohash_v2", t.infohash_v2}, {"category", t.category}, {"added_on", t.added_on},
            {"completion_on", t.completion_on}, {"last_activity", t.last_activity},
            {"seeding_time", t.seeding_time}, {"ratio", t.ratio}};
}

}  // namespace

FakeQb::Torrent& FakeQb::put(qb::TorrentInfo info, std::vector<qb::TorrentFile> files) {
    info.run_state = qb::parse_run_state(info.state);
    Torrent t;
    t.info = std::move(info);
    t.files = std::move(files);
    if (Torrent* existing = find(t.info.id)) {
        *existing = std::move(t);
        return *existing;
    }
    torrent_list.push_back(std::move(t));
    return torrent_list.back();
}

FakeQb::Torrent* FakeQb::find(const std::string& id) {
    for (auto& t : torrent_list)
        if (t.info.id == id) return &t;
    return nullptr;
}

void FakeQb::script_recheck(const std::string& id, std::vector<QbState> states) {
    if (Torrent* t = find(id)) t->script.assign(states.begin(), states.end());
}

void FakeQb::script_rechecks(const std::string& id, std::vector<std::vector<QbState>> scripts) {
    Torrent* t = find(id);
    if (t == nullptr || scripts.empty()) return;
    t->script.assign(scripts[0].begin(), scripts[0].end());
    t->later_scripts.assign(scripts.begin() + 1, scripts.end());
}

qb::TorrentInfo FakeQb::read(Torrent& t) {
    if (!t.pending.empty()) {
        set_state(t.info, t.pending.front());
        t.pending.pop_front();
    }
    return t.info;
}

Result<qb::Capabilities> FakeQb::capabilities() {
    if (auto e = record("capabilities")) return *e;
    return qb::Capabilities(*qb::Version::parse(app_version), *qb::Version::parse(webapi_version));
}

Result<nlohmann::json> FakeQb::preferences() {
    if (auto e = record("preferences")) return *e;
    return prefs;
}

Result<std::vector<qb::TorrentInfo>> FakeQb::torrents(const std::vector<std::string>& ids) {
    if (auto e = record("torrents", {{"ids", ids}})) return *e;
    std::vector<qb::TorrentInfo> out;
    for (auto& t : torrent_list)
        if (std::find(ids.begin(), ids.end(), t.info.id) != ids.end()) out.push_back(read(t));
    return out;
}

Result<std::vector<qb::TorrentInfo>> FakeQb::all_torrents() {
    if (auto e = record("all_torrents")) return *e;
    std::vector<qb::TorrentInfo> out;
    for (auto& t : torrent_list) out.push_back(read(t));
    return out;
}

Result<std::vector<qb::TorrentFile>> FakeQb::files(const std::string& id) {
    if (auto e = record("files", {{"id", id}})) return *e;
    Torrent* t = find(id);
    if (!t) return qb_not_found(id);
    return t->files;
}

Result<std::string> FakeQb::export_torrent(const std::string& id) {
    if (auto e = record("export_torrent", {{"id", id}})) return *e;
    Torrent* t = find(id);
    if (!t) return qb_not_found(id);
    return t->metainfo;
}

Result<qb::Announce> FakeQb::announce(const std::string& id) {
    if (auto e = record("announce", {{"id", id}})) return *e;
    Torrent* t = find(id);
    if (!t) return qb_not_found(id);
    return t->announce;
}

Status FakeQb::add(const qb::AddTorrent& torrent) {
    if (auto e = record("add", {{"save_path", torrent.save_path},
                                {"started", torrent.start == qb::AddStart::started},
                                {"skip_checking", torrent.skip_checking},
                                {"tags", torrent.tags},
                                {"category", torrent.category},
                                {"no_share_limits", torrent.no_share_limits},
                                {"bytes", torrent.metainfo.size()}}))
        return *e;
    if (on_add) return on_add(torrent);
    return ok_status();
}

Status FakeQb::set_file_priority(const std::string& id, const std::vector<std::uint32_t>& indices, qb::FilePriority priority) {
    if (auto e = record("set_file_priority", {{"id", id}, {"indices", indices}, {"priority", static_cast<int>(priority)}})) return *e;
    Torrent* t = find(id);
    if (!t) return qb_not_found(id);
    for (std::uint32_t i : indices) {
        auto f = std::find_if(t->files.begin(), t->files.end(), [&](const qb::TorrentFile& x) { return x.index == i; });
        if (f == t->files.end()) return Error(ErrorCode::QB_CONFLICT, fmt::format("torrent '{}' has no file {}", id, i));
        if (priority != qb::FilePriority::skip && refuse_select.count(i)) continue;
        f->priority = static_cast<int>(priority);
    }
    return ok_status();
}

Status FakeQb::recheck(const std::vector<std::string>& ids) {
    if (auto e = record("recheck", {{"ids", ids}})) return *e;
    for (const auto& id : ids) {
        Torrent* t = find(id);
        if (t == nullptr) continue;
        if (recheck_during_check_sticks && t->info.run_state == qb::RunState::checking && t->info.state != "checkingResumeData") {
            t->pending.clear();
            set_state(t->info, {"checkingDL", 0});
            continue;
        }
        t->pending = t->script;
        if (!t->later_scripts.empty()) {
            t->script.assign(t->later_scripts.front().begin(), t->later_scripts.front().end());
            t->later_scripts.pop_front();
        }
    }
    return ok_status();
}

Status FakeQb::stop(const std::vector<std::string>& ids) {
    if (auto e = record("stop", {{"ids", ids}})) return *e;
    for (const auto& id : ids) {
        Torrent* t = find(id);
        if (t == nullptr) continue;
        // A stop ends a running check.
        if (t->info.run_state == qb::RunState::checking) {
            t->pending.clear();
            set_state(t->info, {"pausedDL", 0});
        } else {
            set_state(t->info, {t->info.progress >= 1.0 ? "pausedUP" : "pausedDL", t->info.progress});
        }
    }
    return ok_status();
}

Status FakeQb::start(const std::vector<std::string>& ids) {
    if (auto e = record("start", {{"ids", ids}})) return *e;
    for (const auto& id : ids)
        if (Torrent* t = find(id)) set_state(t->info, {t->info.progress >= 1.0 ? "stalledUP" : "stalledDL", t->info.progress});
    return ok_status();
}

Status FakeQb::remove(const std::vector<std::string>& ids, qb::DeleteData data) {
    if (auto e = record("remove", {{"ids", ids}, {"delete_data", data == qb::DeleteData::yes_for_tests}})) return *e;
    std::erase_if(torrent_list, [&](const Torrent& t) { return std::find(ids.begin(), ids.end(), t.info.id) != ids.end(); });
    return ok_status();
}

Status FakeQb::add_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) {
    if (auto e = record("add_tags", {{"ids", ids}, {"tags", tags}})) return *e;
    for (const auto& id : ids)
        if (Torrent* t = find(id))
            for (const auto& tag : tags)
                if (std::find(t->info.tags.begin(), t->info.tags.end(), tag) == t->info.tags.end()) t->info.tags.push_back(tag);
    return ok_status();
}

Status FakeQb::remove_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) {
    if (auto e = record("remove_tags", {{"ids", ids}, {"tags", tags}})) return *e;
    for (const auto& id : ids)
        if (Torrent* t = find(id))
            std::erase_if(t->info.tags, [&](const std::string& x) { return std::find(tags.begin(), tags.end(), x) != tags.end(); });
    return ok_status();
}

Status FakeQb::delete_tags(const std::vector<std::string>& tags) {
    if (auto e = record("delete_tags", {{"tags", tags}})) return *e;
    for (auto& t : torrent_list)
        std::erase_if(t.info.tags, [&](const std::string& x) { return std::find(tags.begin(), tags.end(), x) != tags.end(); });
    return ok_status();
}

Status FakeQb::clear_share_limits(const std::vector<std::string>& ids) {
    if (auto e = record("clear_share_limits", {{"ids", ids}})) return *e;
    for (auto& t : torrent_list)
        if (std::find(ids.begin(), ids.end(), t.info.id) != ids.end()) {
            t.info.ratio_limit = -1;
            t.info.seeding_time_limit = -1;
            t.info.inactive_seeding_time_limit = -1;
        }
    return ok_status();
}

Result<qb::Categories> FakeQb::categories() {
    if (auto e = record("categories")) return *e;
    return category_list;
}

Status FakeQb::create_category(const std::string& name, const std::string& save_path) {
    if (auto e = record("create_category", {{"name", name}, {"save_path", save_path}})) return *e;
    for (const auto& c : category_list)
        if (c.first == name) return Error(ErrorCode::QB_CONFLICT, fmt::format("category '{}' exists", name));
    category_list.emplace_back(name, save_path);
    return ok_status();
}

Status FakeQb::sync(qb::MainData& data) {
    if (auto e = record("sync", {{"rid", data.rid()}})) return *e;
    // Always a full update: the simplest reply qBittorrent may send.
    json torrents = json::object();
    json tags = json::array();
    for (const auto& t : torrent_list) {
        torrents[t.info.id] = info_json(t.info);
        for (const auto& tag : t.info.tags) tags.push_back(tag);
    }
    data.apply({{"rid", ++m_rid}, {"full_update", true}, {"torrents", torrents}, {"tags", tags}});
    return ok_status();
}

// --- FakeSyncthing ---

FakeSyncthing::FakeSyncthing() {
    system.my_id = "FAKEDEV-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA";
    system.start_time = "2026-12-01T00:00:00Z";
    version_info.version = "v1.19.2";
}

void FakeSyncthing::push_event(const std::string& type, json data) {
    st::Event e;
    e.id = e.global_id = m_next_event++;
    e.type = type;
    e.time = "2026-12-01T00:00:00Z";
    e.data = std::move(data);
    event_queue.push_back(std::move(e));
}

Result<st::SystemStatus> FakeSyncthing::status() {
    if (auto e = record("status")) return *e;
    return system;
}

Result<st::VersionInfo> FakeSyncthing::version() {
    if (auto e = record("version")) return *e;
    return version_info;
}

Result<std::vector<st::Connection>> FakeSyncthing::connections() {
    if (auto e = record("connections")) return *e;
    return connection_list;
}

Result<std::vector<st::Device>> FakeSyncthing::devices() {
    if (auto e = record("devices")) return *e;
    std::vector<st::Device> out;
    for (const auto& [_, d] : device_map) out.push_back(d);
    return out;
}

Result<std::optional<st::Device>> FakeSyncthing::device(const std::string& device_id) {
    if (auto e = record("device", {{"id", device_id}})) return *e;
    auto it = device_map.find(device_id);
    if (it == device_map.end()) return std::optional<st::Device>();
    return std::optional<st::Device>(it->second);
}

Status FakeSyncthing::put_device(const st::Device& device) {
    if (auto e = record("put_device", device.to_json())) return *e;
    device_map.insert_or_assign(device.device_id, device);
    return ok_status();
}

Status FakeSyncthing::delete_device(const std::string& device_id) {
    if (auto e = record("delete_device", {{"id", device_id}})) return *e;
    device_map.erase(device_id);
    return ok_status();
}

Result<std::vector<st::Folder>> FakeSyncthing::folders() {
    if (auto e = record("folders")) return *e;
    std::vector<st::Folder> out;
    for (const auto& [_, f] : folder_map) out.push_back(f);
    return out;
}

Result<std::optional<st::Folder>> FakeSyncthing::folder(const std::string& folder_id) {
    if (auto e = record("folder", {{"id", folder_id}})) return *e;
    auto it = folder_map.find(folder_id);
    if (it == folder_map.end()) return std::optional<st::Folder>();
    return std::optional<st::Folder>(it->second);
}

Status FakeSyncthing::put_folder(const st::Folder& folder) {
    if (auto e = record("put_folder", folder.to_json())) return *e;
    if (folder.path.empty()) return Error(ErrorCode::ST_INVALID, fmt::format("folder '{}' has no path", folder.id));
    folder_map.insert_or_assign(folder.id, folder);
    return ok_status();
}

Status FakeSyncthing::delete_folder(const std::string& folder_id) {
    if (auto e = record("delete_folder", {{"id", folder_id}})) return *e;
    folder_map.erase(folder_id);
    return ok_status();
}

Status FakeSyncthing::patch_folder(const std::string& folder_id, const json& changes) {
    if (auto e = record("patch_folder", {{"id", folder_id}, {"changes", changes}})) return *e;
    auto it = folder_map.find(folder_id);
    if (it == folder_map.end()) return Error(ErrorCode::ST_NOT_FOUND, fmt::format("folder '{}' not found on Syncthing", folder_id));
    if (changes.contains("paused")) it->second.paused = changes["paused"].get<bool>();
    if (changes.contains("path")) it->second.path = changes["path"].get<std::string>();
    return ok_status();
}

Result<json> FakeSyncthing::options() {
    if (auto e = record("options")) return *e;
    return options_json;
}

Result<st::FolderStatus> FakeSyncthing::db_status(const std::string& folder_id) {
    if (auto e = record("db_status", {{"folder", folder_id}})) return *e;
    auto it = folder_status.find(folder_id);
    if (it == folder_status.end()) return Error(ErrorCode::ST_NOT_FOUND, fmt::format("Syncthing has no folder '{}'", folder_id));
    return it->second;
}

Result<st::Completion> FakeSyncthing::completion(const std::string& folder_id, const std::string& device_id) {
    if (auto e = record("completion", {{"folder", folder_id}, {"device", device_id}})) return *e;
    auto it = completions.find({folder_id, device_id});
    if (it == completions.end()) return Error(ErrorCode::ST_NOT_FOUND, fmt::format("Syncthing has no completion of '{}' for '{}'", folder_id, device_id));
    return it->second;
}

Result<std::vector<st::FolderError>> FakeSyncthing::folder_errors(const std::string& folder_id) {
    if (auto e = record("folder_errors", {{"folder", folder_id}})) return *e;
    if (!folder_map.count(folder_id) && !folder_status.count(folder_id))
        return Error(ErrorCode::ST_NOT_FOUND, fmt::format("Syncthing has no folder '{}'", folder_id));
    auto it = folder_error_lists.find(folder_id);
    return it == folder_error_lists.end() ? std::vector<st::FolderError>{} : it->second;
}

Result<st::Ignores> FakeSyncthing::ignores(const std::string& folder_id) {
    if (auto e = record("ignores", {{"folder", folder_id}})) return *e;
    st::Ignores out;
    if (auto it = ignore_lines.find(folder_id); it != ignore_lines.end()) out.lines = it->second;
    return out;
}

Status FakeSyncthing::set_ignores(const std::string& folder_id, const std::vector<std::string>& lines) {
    if (auto e = record("set_ignores", {{"folder", folder_id}, {"lines", lines}})) return *e;
    ignore_lines[folder_id] = lines;
    return ok_status();
}

Result<std::optional<st::FileRecord>> FakeSyncthing::file(const std::string& folder_id, const std::string& path) {
    if (auto e = record("file", {{"folder", folder_id}, {"path", path}})) return *e;
    auto it = file_records.find({folder_id, path});
    if (it == file_records.end()) return std::optional<st::FileRecord>();
    return std::optional<st::FileRecord>(it->second);
}

Result<std::vector<st::GlobalEntry>> FakeSyncthing::browse(const std::string& folder_id, const std::string& prefix) {
    if (auto e = record("browse", {{"folder", folder_id}, {"prefix", prefix}})) return *e;
    std::vector<st::GlobalEntry> out;
    for (const auto& [key, rec] : file_records)
        if (key.first == folder_id && key.second.rfind(prefix + "/", 0) == 0 && !rec.global.deleted && !rec.global.version.empty())
            out.push_back({key.second, rec.global.size, false});
    return out;
}

Result<st::NeedList> FakeSyncthing::need(const std::string& folder_id) {
    if (auto e = record("need", {{"folder", folder_id}})) return *e;
    st::NeedList out;
    for (const auto& [key, rec] : file_records)
        if (key.first == folder_id && !rec.local_is_current() && !rec.global.deleted) out.rest.push_back({key.second, rec.global.size});
    return out;
}

Status FakeSyncthing::scan(const std::string& folder_id, const std::vector<std::string>& subs) {
    if (auto e = record("scan", {{"folder", folder_id}, {"subs", subs}})) return *e;
    return ok_status();
}

Result<std::vector<st::Event>> FakeSyncthing::events(const st::EventQuery& query) {
    if (auto e = record("events", {{"since", query.since}, {"types", query.types}, {"timeout_s", query.timeout.count()}})) return *e;
    std::vector<st::Event> out;
    for (const auto& ev : event_queue) {
        if (ev.id <= query.since) continue;
        if (!query.types.empty() && std::find(query.types.begin(), query.types.end(), ev.type) == query.types.end()) continue;
        out.push_back(ev);
    }
    if (query.limit > 0 && out.size() > static_cast<std::size_t>(query.limit))
        out.erase(out.begin(), out.end() - query.limit);
    return out;
}

// --- FakeTransport ---

const FakeHandlers::Handler* FakeHandlers::find(node::Op op) const {
    auto it = m_handlers.find(op);
    return it == m_handlers.end() ? nullptr : &it->second;
}

node::Op FakeHandlers::op_named(std::string_view name) {
    if (auto op = node::parse_op(name)) return *op;
    throw std::invalid_argument(fmt::format("fake transport: no node operation is named '{}'", name));
}

FakeTransport::FakeTransport(std::string node_name) : m_name(std::move(node_name)) { m_hello.archctl_version = "fake"; }

Result<node::Response> FakeTransport::call(node::Request request, node::ProgressSink*) {
    if (auto e = record(request.op, request.args)) return *e;
    node::Response response;
    response.id = request.id == 0 ? m_next_id++ : request.id;
    const std::optional<node::Op> op = node::parse_op(request.op);
    const Handler* handler = op ? handlers.find(*op) : nullptr;
    Result<json> answer = !op        ? Result<json>(Error(ErrorCode::UNKNOWN_OPERATION, fmt::format("unknown node operation '{}'", request.op)))
                          : !handler ? Result<json>(Error(ErrorCode::UNKNOWN_OPERATION,
                                                          fmt::format("fake node '{}' has no handler for '{}'", m_name, request.op)))
                                     : (*handler)(request.args);
    if (answer.ok()) {
        response.result = std::move(answer).value();
    } else {
        response.ok = false;
        response.error = answer.take_error();
    }
    return response;
}

// --- ManualClock ---

ManualClock::ManualClock() : m_system(std::chrono::sys_days(std::chrono::year(2026) / 12 / 1)), m_steady(std::chrono::hours(1000)) {}

void ManualClock::sleep_for(std::chrono::milliseconds d) {
    ++sleeps;
    slept += d;
    advance(d);
}

void ManualClock::advance(std::chrono::milliseconds d) {
    m_system += d;
    m_steady += d;
}

clients::qbittorrent::TorrentFile qb_file(std::uint32_t index, const std::string& name, std::int64_t size, double progress, int priority) {
    clients::qbittorrent::TorrentFile f;
    f.index = index;
    f.name = name;
    f.size = size;
    f.progress = progress;
    f.priority = priority;
    return f;
}

}  // namespace archctl::fakes
