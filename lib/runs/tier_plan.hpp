#pragma once
// A tier policy's plan (docs/design.md "Many resources and tier policies"): from one read of the cache's and each archive node's
// torrent lists and the cache's free space, which torrents the policy chooses, in its order,
// what each needs (evict only, archive then evict, archive only), which are skipped or blocked
// and why, and the free space projected once the chosen evictions are done. Pure: no node is
// contacted here, so `plan tier` over thousands of torrents costs one list per node.
//
// What a row promises is only a candidate: the run proves each archive copy live before it
// evicts (the evict rules), and re-reads the free space after each eviction.
//
// Each candidate that needs archiving goes to the node the run will send it to
// (choose_archive_node): the first of the policy's archive nodes, in order, that answered and
// has room for it above the free-space floor, counting what the plan sends there before it. The
// nodes passed over are named with why. A candidate whose archive job is unfinished goes on with
// that job (it runs first); one that waits because its target cannot take it (target_room.hpp)
// is blocked, said with its bound.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/clients/qbittorrent/types.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/transfer/job.hpp"

namespace archctl::runs {

enum class TierAction {
    evict,          // an archive node already holds it complete: evict once proven live
    archive_evict,  // archive it, then evict it
    archive,        // archive it (evict = "never", or not needed for the goal yet)
    none,           // chosen, but the goal holds without it (evict = "to_goal")
    skipped,        // excluded by the policy
    blocked,        // matches, but cannot move now (still downloading, no archive node can take it, its job waits)
};
[[nodiscard]] std::string to_string(TierAction a);
// The row archives its torrent (archive, archive_evict).
[[nodiscard]] bool archives(TierAction a);
// The row evicts its torrent (evict, archive_evict).
[[nodiscard]] bool evicts(TierAction a);

// An archive node a candidate does not go to, and why ("unreachable: …", "no room: …").
struct PassedOver {
    std::string node, why;
};

struct TierRow {
    clients::qbittorrent::TorrentInfo torrent;
    std::string rule;         // why chosen ("completed 212 d ago"); empty for skipped rows
    TierAction action = TierAction::none;
    std::string why;          // skipped/blocked: the reason
    std::string archived_on;  // the archive node that already holds it complete
    std::string archive_to;   // where it is archived (choose_archive_node, or its unfinished job's node); "" when none can take it
    std::vector<PassedOver> passed_over;  // the policy's archive nodes before archive_to that cannot take it, and why
    std::string job;          // its unfinished archive job, continued first

    // The torrent's size in bytes (0 when qBittorrent does not know it).
    [[nodiscard]] std::uint64_t bytes() const;
};

struct TierGoal {
    std::uint64_t free_now = 0, total = 0;
    std::uint64_t want_free = 0;  // keep_free, or what max_used leaves free
    [[nodiscard]] bool met(std::uint64_t free) const { return free >= want_free; }
    std::string text;             // "keep 200.0 GiB free" / "at most 80% used (…)"
};

// How many rows archive and evict, and their bytes; how many are blocked and skipped.
struct TierTotals {
    std::uint64_t archive = 0, archive_bytes = 0, evict = 0, evict_bytes = 0, blocked = 0, skipped = 0;
};

struct TierPlan {
    std::string policy;
    TierGoal goal;
    std::vector<TierRow> rows;      // chosen rows in the policy's order, then skipped and blocked
    std::uint64_t projected_free = 0;
    std::size_t cache_torrents = 0;
    [[nodiscard]] TierTotals totals() const;
    [[nodiscard]] nlohmann::json to_json() const;
};

// An unfinished archive job of the policy, from its cache to one of its archive nodes.
struct PendingArchive {
    std::string job, node;
    std::optional<jobs::TargetBlocked> blocked;  // its target cannot take it (it waits, bounded)
};

// What the policy's archive nodes can take, as read once: each node's free space where its
// placements go (its qb_root), or why it could not be read; the free-space floor every job holds.
struct ArchiveRoom {
    std::map<std::string, std::uint64_t> free;          // node → free bytes (nodes that answered)
    std::map<std::string, std::string> unreachable;     // node → why it cannot be used ("unreachable: …")
    std::uint64_t floor = 0;                            // transfer.min_free
};

struct TierInput {
    const config::TierPolicy* policy = nullptr;
    std::vector<clients::qbittorrent::TorrentInfo> cache;
    std::map<std::string, std::vector<clients::qbittorrent::TorrentInfo>> archives;  // node → its list (reachable ones)
    ArchiveRoom room;
    std::map<std::string, PendingArchive> pending;  // resource (qB id) → its unfinished archive job
    std::uint64_t free = 0, total = 0;
    std::int64_t now = 0;  // epoch seconds
};

// Where a candidate of `bytes` is archived: the first node of `order` that answered (its list and
// its free space were read) and has room for it above the floor, after `planned` bytes the plan
// sends there before it; the nodes before it that cannot take it, with why. `node` is "" when
// none can.
struct NodeChoice {
    std::string node;
    std::vector<PassedOver> passed_over;
};
[[nodiscard]] NodeChoice choose_archive_node(const std::vector<std::string>& order, const ArchiveRoom& room, std::uint64_t bytes,
                                             const std::map<std::string, std::uint64_t>& planned);
// "archive1: no room: …; archive2: unreachable: …".
[[nodiscard]] std::string passed_over_text(const std::vector<PassedOver>& passed);

[[nodiscard]] TierGoal tier_goal(const config::TierPolicy& policy, std::uint64_t free, std::uint64_t total);
[[nodiscard]] TierPlan make_tier_plan(const TierInput& in);

// The archive node of `archives` that holds `t` complete (same info hash, every wanted byte),
// or "" when none does.
[[nodiscard]] std::string archived_on(const clients::qbittorrent::TorrentInfo& t,
                                      const std::map<std::string, std::vector<clients::qbittorrent::TorrentInfo>>& archives,
                                      const std::vector<std::string>& order);

}  // namespace archctl::runs
