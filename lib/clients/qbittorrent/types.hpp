#pragma once
// Plain types for what archctl reads from and sends to qBittorrent's WebUI API.
//
// These are qBittorrent's view mapped into archctl's words: the qB id (`hash`, an adapter
// detail), the metainfo hashes, the run state, and per-file priority/progress turned into the
// selected and complete index sets (qBittorrent's file indices, which skip BEP 47 pad files).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace archctl::clients::qbittorrent {

// qBittorrent's `state`, folded over the 4.x and 5.x spellings.
enum class RunState {
    running,        // seeding: uploading, stalledUP, forcedUP
    stopped,        // pausedUP/pausedDL (4.x), stoppedUP/stoppedDL (5.x)
    checking,       // checkingUP, checkingDL, checkingResumeData
    downloading,    // downloading, stalledDL, forcedDL
    error,          // error
    missing_files,  // missingFiles
    moving,         // moving
    metadata,       // metaDL, forcedMetaDL
    queued,         // queuedUP, queuedDL
    unknown,        // "unknown", "allocating", or any string this build does not know
};

[[nodiscard]] RunState parse_run_state(const std::string& state);
[[nodiscard]] std::string to_string(RunState state);

// True while qBittorrent is still working on the torrent and its progress is not final
// (checking, moving, fetching metadata, unknown states).
[[nodiscard]] bool is_busy(RunState state);
// True when the torrent is allowed to transfer data (not stopped, not in error).
[[nodiscard]] bool is_started(RunState state);

struct TorrentInfo {
    std::string id;           // qB id (`hash`): what every endpoint takes
    std::string infohash_v1;  // 40 hex or ""
    std::string infohash_v2;  // 64 hex or ""
    std::string name;
    std::string save_path;
    std::string content_path;
    std::string download_path;
    std::string state;        // qBittorrent's raw state string
    RunState run_state = RunState::unknown;
    double progress = 0;      // over wanted (priority > 0) data
    std::int64_t amount_left = 0;
    std::int64_t size = 0;        // wanted bytes
    std::int64_t total_size = 0;  // all bytes (v2/hybrid: including pad files)
    bool auto_tmm = false;
    std::vector<std::string> tags;  // qBittorrent's tags, in its order
    std::string category;           // "" when none
    // Epoch seconds; 0 for "never" (qB sends -1 or 0, and 0 is stored for both).
    std::int64_t added_on = 0;
    std::int64_t completion_on = 0;
    std::int64_t last_activity = 0;
    std::int64_t seeding_time = 0;  // seconds spent seeding
    double ratio = 0;
    // The torrent's own share limits: -2 follows the global limit, -1 none, else the limit
    // (a ratio; minutes of seeding, or of inactive seeding on 4.6+). A field qBittorrent does not
    // send is -1 (the limit does not exist in that version), except the ratio and seeding-time
    // limits, which every supported version sends and which are -2 when missing.
    double ratio_limit = -2;
    std::int64_t seeding_time_limit = -2;
    std::int64_t inactive_seeding_time_limit = -1;
    // 5.2+: the torrent's own action when a limit is reached ("Default" follows the global one);
    // "" when not sent.
    std::string share_limit_action;
    // The limits in force as qBittorrent resolves them (max_ratio, max_seeding_time and 4.6+
    // max_inactive_seeding_time: the torrent's own, else the global one; -1 none), when sent.
    std::optional<double> max_ratio;
    std::optional<std::int64_t> max_seeding_time, max_inactive_seeding_time;
};

struct TorrentProperties {
    std::string id;
    std::string name;
    std::string infohash_v1;
    std::string infohash_v2;
    std::string save_path;
    std::string download_path;
    std::int64_t total_size = 0;
    std::int64_t piece_size = 0;
    std::int64_t pieces_num = 0;
    std::int64_t pieces_have = 0;
    nlohmann::json raw;  // the whole object as read
};

// Where a torrent announces, as qBittorrent holds it now (torrents/trackers, torrents/webseeds):
// the tracker tiers in order, tier 0 first, and the web seeds. The torrent's own .torrent file
// in BT_backup keeps neither; an exported torrent carries both.
struct Announce {
    std::vector<std::vector<std::string>> tiers;
    std::vector<std::string> web_seeds;
};

struct TorrentFile {
    std::uint32_t index = 0;  // qB index (pad files excluded)
    std::string name;         // relative, '/'-separated, includes the root folder
    std::int64_t size = 0;
    double progress = 0;
    int priority = 0;         // 0 skip, 1 normal, 6 high, 7 maximum
};

// Indices with priority > 0, ascending.
[[nodiscard]] std::vector<std::uint32_t> selected_files(const std::vector<TorrentFile>& files);
// Indices that are selected and have progress exactly 1.0, ascending.
[[nodiscard]] std::vector<std::uint32_t> complete_files(const std::vector<TorrentFile>& files);

// The priorities archctl sets: only selected/skipped is portable.
enum class FilePriority { skip = 0, normal = 1 };

// torrents/delete: archctl never removes data; tests may, by naming it explicitly.
enum class DeleteData { no, yes_for_tests };

// How a torrent is added.
enum class AddStart { stopped, started };
enum class ContentLayout { original, subfolder, no_subfolder };

struct AddTorrent {
    std::string metainfo;   // bencoded .torrent bytes
    std::string save_path;  // explicit, absolute; automatic management is always off
    AddStart start = AddStart::stopped;
    ContentLayout layout = ContentLayout::original;
    bool skip_checking = false;  // never true in archctl's own flows
    std::string rename;          // optional display name
    std::vector<std::string> tags;  // set by the add itself (no comma in a tag)
    std::string category;           // "" for none; must exist in qBittorrent (create_category)
    // The torrent's own share limits set to "none" by the add itself, so the node's global
    // limits never remove, stop or pause it.
    bool no_share_limits = false;
};

// torrents/categories: name → save path ("" when the category has none).
using Categories = std::vector<std::pair<std::string, std::string>>;

struct BuildInfo {
    std::string qt;
    std::string libtorrent;
    std::string boost;
    std::string openssl;
    std::string zlib;
    int bitness = 0;
    nlohmann::json raw;
};

// Parsers for qBittorrent's JSON (exposed for unit tests with recorded bodies). They accept
// missing fields (defaults) and never throw.
[[nodiscard]] TorrentInfo parse_torrent_info(const nlohmann::json& object, const std::string& id = {});
[[nodiscard]] std::vector<TorrentFile> parse_files(const nlohmann::json& array);
// The same straight from a torrents/files body, without building a JSON document (a 100,000-file
// torrent's list is tens of MB of JSON); nullopt when the body is not valid JSON.
[[nodiscard]] std::optional<std::vector<TorrentFile>> parse_files_body(std::string_view body);
[[nodiscard]] TorrentProperties parse_properties(const nlohmann::json& object);
[[nodiscard]] BuildInfo parse_build_info(const nlohmann::json& object);

}  // namespace archctl::clients::qbittorrent
