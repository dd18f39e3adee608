#pragma once
// Plain types for what archctl reads from and writes to Syncthing's REST API (1.19 → 2.x).
//
// Config objects (Folder, Device) keep the raw JSON they were read from: to_json() writes the
// typed fields over that raw object, so a read-modify-write never drops keys archctl does not
// model (Syncthing's PUT rebuilds an object from defaults, so an omitted key would be reset).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace archctl::clients::syncthing {

struct SystemStatus {
    std::string my_id;       // this device's ID
    std::string start_time;  // RFC 3339; changes when Syncthing restarts
    std::int64_t uptime_s = 0;
    nlohmann::json raw;
};

struct VersionInfo {
    std::string version;  // "v1.19.2-ds1"
    std::string long_version;
    nlohmann::json raw;
};

struct Connection {
    std::string device_id;
    bool connected = false;
    bool paused = false;
    std::string address;
    std::string type;
};

struct Device {
    std::string device_id;
    std::string name;
    std::vector<std::string> addresses;  // e.g. "tcp://127.0.0.1:22001" or "dynamic"
    bool paused = false;
    bool introducer = false;
    bool auto_accept_folders = false;
    nlohmann::json raw = nlohmann::json::object();

    [[nodiscard]] nlohmann::json to_json() const;
    [[nodiscard]] static Device from_json(const nlohmann::json& object);
};

struct Folder {
    std::string id;
    std::string label;
    std::string path;
    std::string type = "sendreceive";     // sendreceive | sendonly | receiveonly | receiveencrypted
    std::vector<std::string> devices;     // device IDs sharing the folder
    bool paused = false;
    bool ignore_perms = false;
    bool fs_watcher_enabled = true;
    std::int64_t fs_watcher_delay_s = 10;
    std::int64_t rescan_interval_s = 3600;
    std::string versioning_type;          // "" = none
    nlohmann::json raw = nlohmann::json::object();

    // raw + typed fields. Device entries already in raw keep their other keys.
    [[nodiscard]] nlohmann::json to_json() const;
    [[nodiscard]] static Folder from_json(const nlohmann::json& object);
};

// db/status (also FolderSummary event data.summary).
struct FolderStatus {
    std::string state;  // idle, scanning, syncing, …; "" = folder not running (paused)
    std::string error;
    std::int64_t global_bytes = 0, global_files = 0, global_deleted = 0;
    std::int64_t local_bytes = 0, local_files = 0, local_deleted = 0;
    std::int64_t need_bytes = 0, need_files = 0, need_deletes = 0, need_total_items = 0;
    std::int64_t in_sync_bytes = 0;
    std::int64_t errors = 0;  // per-file pull errors (`errors`, or 1.19's `pullErrors`)
    std::int64_t sequence = 0;
    nlohmann::json raw;
};

struct Completion {
    double completion = 0;  // percent 0–100
    std::int64_t global_bytes = 0, need_bytes = 0, global_items = 0, need_items = 0, need_deletes = 0;
    std::int64_t sequence = 0;     // the remote's index sequence as known here; 0 = none received
    std::string remote_state;      // 1.20+: valid | notSharing | paused | unknown; "" on 1.19
    nlohmann::json raw;
};

struct FileEntry {
    std::string name;
    std::int64_t size = 0;
    bool deleted = false;
    bool invalid = false;
    bool ignored = false;
    std::int64_t sequence = 0;
    std::vector<std::string> version;  // ["SHORTID:counter", …]
    std::string modified;
};

// db/file: the global (newest known) and local record of one file.
struct FileRecord {
    FileEntry global;
    FileEntry local;
    std::vector<std::string> availability;  // device IDs that have it
    // Local version equals global and not deleted: this device holds the newest version.
    [[nodiscard]] bool local_is_current() const { return !local.deleted && local.version == global.version && !global.version.empty(); }
};

struct NeedEntry {
    std::string name;
    std::int64_t size = 0;
};

// db/need: what this device still needs of a folder. A file pulled under its final name but not
// yet committed to the index is still needed (in `rest`).
struct NeedList {
    std::vector<NeedEntry> progress, queued, rest;
    [[nodiscard]] std::size_t total() const { return progress.size() + queued.size() + rest.size(); }
};

// One name of db/browse: the folder's global index below a prefix (deleted and invalid entries
// are not listed), the tree flattened.
struct GlobalEntry {
    std::string name;  // relative to the folder: "<prefix>/p/0/3"
    std::int64_t size = 0;
    bool directory = false;
};

struct FolderError {
    std::string path;
    std::string error;
};

// db/ignores: the lines of .stignore as written, and Syncthing's complaint about them.
struct Ignores {
    std::vector<std::string> lines;
    std::string error;  // "" when the patterns parse
};

struct PendingDevice {
    std::string device_id;
    std::string name;
    std::string address;
};

struct PendingFolder {
    std::string folder_id;
    std::vector<std::string> offered_by;  // device IDs
    std::string label;
};

struct Event {
    std::int64_t id = 0;         // per subscription (per event mask)
    std::int64_t global_id = 0;  // across all subscriptions
    std::string type;
    std::string time;
    nlohmann::json data;
};

// Parsers (exposed for unit tests); never throw, missing fields take defaults.
[[nodiscard]] FolderStatus parse_folder_status(const nlohmann::json& object);
[[nodiscard]] Completion parse_completion(const nlohmann::json& object);
[[nodiscard]] FileRecord parse_file_record(const nlohmann::json& object);
[[nodiscard]] std::vector<Event> parse_events(const nlohmann::json& array);
// db/browse's tree below `prefix` ("" for the folder root) as a flat list, parents first. The
// entry type is a string ("FILE_INFO_TYPE_DIRECTORY") or, in 1.29.0 only, an integer (1).
[[nodiscard]] std::vector<GlobalEntry> parse_browse(const nlohmann::json& tree, const std::string& prefix);
// db/need's three lists.
[[nodiscard]] NeedList parse_need(const nlohmann::json& object);

}  // namespace archctl::clients::syncthing
