#include "lib/clients/syncthing/types.hpp"

#include <algorithm>

namespace archctl::clients::syncthing {
namespace {

std::string str(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t int64(const nlohmann::json& o, const char* key, std::int64_t fallback = 0) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return fallback;
    if (it->is_number_float()) return static_cast<std::int64_t>(it->get<double>());
    return it->get<std::int64_t>();
}

bool boolean(const nlohmann::json& o, const char* key, bool fallback = false) {
    auto it = o.find(key);
    return it != o.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::vector<std::string> strings(const nlohmann::json& o, const char* key) {
    std::vector<std::string> out;
    auto it = o.find(key);
    if (it == o.end() || !it->is_array()) return out;
    for (const auto& v : *it) if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

FileEntry parse_entry(const nlohmann::json& o) {
    FileEntry e;
    if (!o.is_object()) return e;
    e.name = str(o, "name");
    e.size = int64(o, "size");
    e.deleted = boolean(o, "deleted");
    e.invalid = boolean(o, "invalid");
    e.ignored = boolean(o, "ignored");
    e.sequence = int64(o, "sequence");
    e.version = strings(o, "version");
    e.modified = str(o, "modified");
    return e;
}

}  // namespace

nlohmann::json Device::to_json() const {
    nlohmann::json o = raw.is_object() ? raw : nlohmann::json::object();
    o["deviceID"] = device_id;
    o["name"] = name;
    o["addresses"] = addresses.empty() ? std::vector<std::string>{"dynamic"} : addresses;
    o["paused"] = paused;
    o["introducer"] = introducer;
    o["autoAcceptFolders"] = auto_accept_folders;
    return o;
}

Device Device::from_json(const nlohmann::json& o) {
    Device d;
    if (!o.is_object()) return d;
    d.device_id = str(o, "deviceID");
    d.name = str(o, "name");
    d.addresses = strings(o, "addresses");
    d.paused = boolean(o, "paused");
    d.introducer = boolean(o, "introducer");
    d.auto_accept_folders = boolean(o, "autoAcceptFolders");
    d.raw = o;
    return d;
}

nlohmann::json Folder::to_json() const {
    nlohmann::json o = raw.is_object() ? raw : nlohmann::json::object();
    o["id"] = id;
    o["label"] = label;
    o["path"] = path;
    o["type"] = type;
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& device : devices) {
        nlohmann::json entry = {{"deviceID", device}};
        if (auto old = raw.find("devices"); old != raw.end() && old->is_array()) {
            for (const auto& e : *old) {
                if (e.is_object() && e.value("deviceID", std::string()) == device) entry = e;
            }
        }
        entries.push_back(std::move(entry));
    }
    o["devices"] = std::move(entries);
    o["paused"] = paused;
    o["ignorePerms"] = ignore_perms;
    o["fsWatcherEnabled"] = fs_watcher_enabled;
    o["fsWatcherDelayS"] = fs_watcher_delay_s;
    o["rescanIntervalS"] = rescan_interval_s;
    nlohmann::json versioning = o.contains("versioning") && o["versioning"].is_object() ? o["versioning"] : nlohmann::json::object();
    versioning["type"] = versioning_type;
    if (!versioning.contains("params")) versioning["params"] = nlohmann::json::object();
    o["versioning"] = std::move(versioning);
    return o;
}

Folder Folder::from_json(const nlohmann::json& o) {
    Folder f;
    if (!o.is_object()) return f;
    f.id = str(o, "id");
    f.label = str(o, "label");
    f.path = str(o, "path");
    f.type = str(o, "type");
    if (auto it = o.find("devices"); it != o.end() && it->is_array()) {
        for (const auto& e : *it) if (e.is_object()) f.devices.push_back(str(e, "deviceID"));
    }
    f.paused = boolean(o, "paused");
    f.ignore_perms = boolean(o, "ignorePerms");
    f.fs_watcher_enabled = boolean(o, "fsWatcherEnabled", true);
    f.fs_watcher_delay_s = int64(o, "fsWatcherDelayS", 10);
    f.rescan_interval_s = int64(o, "rescanIntervalS", 3600);
    if (auto it = o.find("versioning"); it != o.end() && it->is_object()) f.versioning_type = str(*it, "type");
    f.raw = o;
    return f;
}

FolderStatus parse_folder_status(const nlohmann::json& o) {
    FolderStatus s;
    if (!o.is_object()) return s;
    s.state = str(o, "state");
    s.error = str(o, "error");
    s.global_bytes = int64(o, "globalBytes");
    s.global_files = int64(o, "globalFiles");
    s.global_deleted = int64(o, "globalDeleted");
    s.local_bytes = int64(o, "localBytes");
    s.local_files = int64(o, "localFiles");
    s.local_deleted = int64(o, "localDeleted");
    s.need_bytes = int64(o, "needBytes");
    s.need_files = int64(o, "needFiles");
    s.need_deletes = int64(o, "needDeletes");
    s.need_total_items = int64(o, "needTotalItems");
    s.in_sync_bytes = int64(o, "inSyncBytes");
    s.errors = std::max(int64(o, "errors"), int64(o, "pullErrors"));  // the same count; 1.19 has both
    s.sequence = int64(o, "sequence");
    s.raw = o;
    return s;
}

Completion parse_completion(const nlohmann::json& o) {
    Completion c;
    if (!o.is_object()) return c;
    if (auto it = o.find("completion"); it != o.end() && it->is_number()) c.completion = it->get<double>();
    c.global_bytes = int64(o, "globalBytes");
    c.need_bytes = int64(o, "needBytes");
    c.global_items = int64(o, "globalItems");
    c.need_items = int64(o, "needItems");
    c.need_deletes = int64(o, "needDeletes");
    c.sequence = int64(o, "sequence");
    c.remote_state = str(o, "remoteState");
    c.raw = o;
    return c;
}

FileRecord parse_file_record(const nlohmann::json& o) {
    FileRecord r;
    if (!o.is_object()) return r;
    if (auto it = o.find("global"); it != o.end()) r.global = parse_entry(*it);
    if (auto it = o.find("local"); it != o.end()) r.local = parse_entry(*it);
    if (auto it = o.find("availability"); it != o.end() && it->is_array()) {
        for (const auto& a : *it) if (a.is_object()) r.availability.push_back(str(a, "id"));
    }
    return r;
}

std::vector<Event> parse_events(const nlohmann::json& array) {
    std::vector<Event> out;
    if (!array.is_array()) return out;
    for (const auto& o : array) {
        if (!o.is_object()) continue;
        Event e;
        e.id = int64(o, "id");
        e.global_id = int64(o, "globalID");
        e.type = str(o, "type");
        e.time = str(o, "time");
        if (auto it = o.find("data"); it != o.end()) e.data = *it;
        out.push_back(std::move(e));
    }
    return out;
}

namespace {

bool is_directory_type(const nlohmann::json& type) {
    if (type.is_string()) return type.get<std::string>().find("DIRECTORY") != std::string::npos;
    return type.is_number_integer() && type.get<std::int64_t>() == 1;
}

void flatten_browse(const nlohmann::json& children, const std::string& parent, std::vector<GlobalEntry>& out) {
    if (!children.is_array()) return;
    for (const auto& c : children) {
        if (!c.is_object()) continue;
        GlobalEntry e;
        e.name = parent.empty() ? str(c, "name") : parent + "/" + str(c, "name");
        e.size = int64(c, "size");
        auto type = c.find("type");
        e.directory = type != c.end() && is_directory_type(*type);
        const std::string name = e.name;
        out.push_back(std::move(e));
        if (auto it = c.find("children"); it != c.end()) flatten_browse(*it, name, out);
    }
}

std::vector<NeedEntry> need_entries(const nlohmann::json& o, const char* key) {
    std::vector<NeedEntry> out;
    auto it = o.find(key);
    if (it == o.end() || !it->is_array()) return out;  // null when empty
    for (const auto& e : *it) {
        if (!e.is_object()) continue;
        out.push_back({str(e, "name"), int64(e, "size")});
    }
    return out;
}

}  // namespace

std::vector<GlobalEntry> parse_browse(const nlohmann::json& tree, const std::string& prefix) {
    std::vector<GlobalEntry> out;
    std::string parent = prefix;
    while (!parent.empty() && parent.back() == '/') parent.pop_back();
    flatten_browse(tree, parent, out);
    return out;
}

NeedList parse_need(const nlohmann::json& o) {
    NeedList n;
    if (!o.is_object()) return n;
    n.progress = need_entries(o, "progress");
    n.queued = need_entries(o, "queued");
    n.rest = need_entries(o, "rest");
    return n;
}

}  // namespace archctl::clients::syncthing
