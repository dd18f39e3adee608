#pragma once
// Layered configuration (docs/design.md "Configuration").
//
// Layers, later wins: built-in defaults → user file ($ARCHCTL_CONFIG, else
// $XDG_CONFIG_HOME/archctl/config.toml, else ~/.config/archctl/config.toml; --config replaces this
// layer) → <state>/config.toml → ARCHCTL_* environment → flags. Every effective value remembers the
// layer that set it, so `archctl config` can say where a setting came from. Unknown keys in a
// known table warn (naming file, table, key and the closest known key); unknown tables are
// ignored; a malformed file or value is an error naming file, line and key.
//
// Before a file layer is read and before the state directory is chosen, each is checked as
// trust.hpp says (owner, mode, the directories above it): one that another user owns or others
// can write is refused unless the user config's safe.trusted names it, so nothing it sets (an
// exec transport, a [notify] exec hook) ever runs.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/config/criteria.hpp"
#include "lib/config/trust.hpp"

namespace archctl::config {

// A credential: inline in a config file, or read from a *_file. The value never reaches output.
struct Secret {
    std::string value;        // the secret itself; never print, log or serialize
    std::string file;         // the *_file path it came from, empty when inline
    bool set() const { return !value.empty(); }
    // "<set, from password_file>" / "<set>" / "<unset>": what `config` shows instead of the value.
    std::string describe(const std::string& file_key) const;
};

struct QbittorrentSettings {
    std::string url;
    std::string username = "admin";
    Secret password;
    std::string ca_file;        // extra CA bundle for TLS verification
    bool insecure_tls = false;  // explicit opt-out, warned about on use
    // nodes.<name>.qbittorrent.export_timeout: how long one torrents/export may take (it is never
    // asked again while the previous one may still run).
    std::chrono::seconds export_timeout{600};
    // nodes.<name>.qbittorrent.bt_backup: qBittorrent's BT_backup directory on the node, where it
    // keeps each torrent's .torrent as <id>.torrent (empty: not known). archctl reads a torrent's
    // metainfo there, through the node, instead of asking torrents/export (docs/design.md
    // "The torrent's metainfo").
    std::string bt_backup;
};

struct SyncthingSettings {
    std::string url;
    Secret api_key;
    std::string ca_file;
    bool insecure_tls = false;
    std::vector<std::string> addresses;  // this node's Syncthing addresses as peers should dial them
                                         // (empty: read its listen addresses from its config)
};

enum class Role { cache, archive };
std::string to_string(Role role);

// nodes.<name>.share_limits: what a torrent archctl adds on the node gets. `none` (default): its
// own limits set to none, so the node's global share limits never stop or remove it. `global`:
// the global limits apply (a copy they would remove does not count as an archive copy).
enum class ShareLimitsPolicy { none, global };
// nodes.<name>.labels: whether a torrent archctl adds on the node gets the source torrent's
// category and tags (`keep`, default; mapped through category_map) or none (`drop`).
enum class LabelsPolicy { keep, drop };

inline constexpr std::chrono::seconds k_default_node_timeout{20};

struct NodeConfig {
    std::string name;
    Role role = Role::cache;
    std::string qb_root;            // node path; placements live below it
    std::string sync_root;          // node path; route folders live below it
    std::vector<std::string> exec;  // empty: transport "local"; else argv of `archctl node serve`
    // nodes.<name>.timeout: how long an exec call may go without a line from the far end (its
    // hello, a progress line or the answer) before the node counts as unreachable.
    std::chrono::seconds timeout{k_default_node_timeout};
    QbittorrentSettings qbittorrent;
    SyncthingSettings syncthing;
    ShareLimitsPolicy share_limits = ShareLimitsPolicy::none;
    LabelsPolicy labels = LabelsPolicy::keep;
    // nodes.<name>.category_map: source category → the category a torrent gets on this node
    // ("" for none); a category not listed keeps its name.
    std::map<std::string, std::string> category_map;
    bool local() const { return exec.empty(); }
};

enum class RoutePolicy { on_demand, eager_mesh };

// [tier.NAME]: keep a cache node's qB root filesystem at a goal by archiving the torrents
// `archive_when` selects to the archive nodes and evicting proven copies (docs/design.md "Many resources and tier policies").
enum class TierOrder { oldest, largest, least_active };
enum class TierEvict { to_goal, always, never };
std::string to_string(TierOrder order);
std::string to_string(TierEvict evict);

struct TierPolicy {
    std::string name;
    std::string cache;                        // a cache node
    std::vector<std::string> archive;         // archive nodes, first with room wins
    std::optional<std::uint64_t> keep_free;   // bytes free wanted on the cache's qb_root filesystem
    std::optional<double> max_used;           // fraction 0..1 ("80%" -> 0.8)
    Criteria archive_when;                    // its exclude_* come from `exclude`
    TierOrder order = TierOrder::oldest;
    TierEvict evict = TierEvict::to_goal;
};

struct Config {
    std::string state_dir;                 // resolved: flag/env/config/default
    std::uint64_t min_free = 2ull << 30;   // transfer.min_free, bytes; 0 disables the floor
    std::int64_t outage_wait_s = 300;      // transfer.outage_wait: how long a job waits for an unreachable service
    bool verify_transit = false;           // transfer.verify_transit
    // evict.count_shared_copies: an archive copy whose files are also another torrent's files on
    // that node counts as a copy (deleting that torrent with its files would delete it too).
    bool count_shared_copies = false;
    RoutePolicy route_policy = RoutePolicy::on_demand;
    std::int64_t provision_timeout_s = 30 * 60;  // routes.provision_timeout
    std::int64_t route_check_max_age_s = 24 * 3600;  // routes.check_max_age
    std::int64_t tombstone_days = 30;      // retention.tombstone_days
    std::string progress = "auto";         // ARCHCTL_PROGRESS: auto|0|line|panel
    std::map<std::string, NodeConfig> nodes;
    std::map<std::string, TierPolicy> tiers;  // [tier.NAME], by name
    std::vector<std::string> notify_exec;  // [notify] exec: argv of the job-end hook (jobs/notify.hpp)
    std::string notify_url;                // [notify] url: where the job-end row is POSTed
    // key → its items, for every list-valued key (`config --json` prints them as arrays).
    std::map<std::string, std::vector<std::string>> lists;

    // key (dotted, e.g. "transfer.min_free", "nodes.nas.qbittorrent.url") → layer that set it:
    // "default", "user:<path>", "state:<path>", "env:ARCHCTL_X", "flag".
    std::map<std::string, std::string> origin;
    // key → display value (secrets already masked, and the password and query values of a URL).
    // Drives `archctl config`.
    std::map<std::string, std::string> display;
    // The user file, the state directory and its config.toml as checked (trust.hpp), in that
    // order: what `archctl config` shows of each layer's owner, mode and problems.
    std::vector<Layer> layers;
    std::vector<std::string> trusted;  // safe.trusted, from the user config only

    const NodeConfig* node(const std::string& name) const;
};

// What load() does with a layer that another user owns or others can write (trust.hpp) and that
// safe.trusted does not name.
enum class UnsafeLayers {
    refuse,  // load fails with the first such layer's error (every command)
    skip,    // its values are left out and Config::layers says why (`archctl config`, which shows
             // every layer's problems and then fails with refusal())
};

// What the command line contributes (the flag layer and layer selection).
struct LoadOptions {
    std::string config_file;                // --config FILE
    std::string state_dir;                  // --state DIR
    std::optional<std::uint64_t> min_free;  // --min-free
    UnsafeLayers unsafe = UnsafeLayers::refuse;
    // Environment lookup seam for tests; defaults to ::getenv.
    const char* (*getenv)(const char*) = nullptr;
    // Who archctl runs as, for tests; defaults to ::geteuid().
    std::optional<unsigned> uid;
};

// Load and validate every layer. Warnings (unknown keys, readable secrets) are appended to
// `warnings` as complete lines without the "archctl: warning: " prefix.
Result<Config> load(const LoadOptions& options, std::vector<std::string>& warnings);

// The error of the first layer in `config.layers` that is refused, or success.
Status refusal(const Config& config);

// `url` with the password of its user:password@ and the values of its query shown as <set>:
// "http://admin:<set>@host:8080/". What `archctl config` and config errors print of a URL.
std::string mask_url(const std::string& url);

}  // namespace archctl::config
