#pragma once
// What a tier policy works from, read live (docs/design.md "Many resources and tier policies"):
// the cache's torrents and free space, each archive node's torrents, and how many qBittorrent
// requests that took per node. `plan tier`, `status` and the run read it the same way, one
// torrent list per node, and make the policy's plan from it (tier_plan.hpp).
//
//   ARCHCTL_TRY_ASSIGN(TierLive live, read_tier_live(nodes, policy, config.min_free, &state));
//   TierPlan plan = plan_tier(policy, live, clock);

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "lib/config/config.hpp"
#include "lib/runs/tier_plan.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::runs {

struct TierLive {
    std::vector<clients::qbittorrent::TorrentInfo> cache;
    std::map<std::string, std::vector<clients::qbittorrent::TorrentInfo>> archives;  // the reachable archive nodes
    std::vector<std::string> unreachable;  // "nas: reason": archive nodes whose list or free space could not be read
    std::uint64_t free = 0, total = 0;     // the filesystem of the cache's qb_root
    ArchiveRoom room;                      // each reachable archive node's free space (its qb_root), and the floor
    std::map<std::string, PendingArchive> pending;  // the policy's unfinished archive jobs, by resource
    std::map<std::string, std::uint64_t> requests;  // qBittorrent requests made per node
};

// Free and total bytes of the filesystem that holds the cache's qb_root, as the node measures
// it; an error when the node cannot measure both.
struct CacheSpace {
    std::uint64_t free = 0, total = 0;
};
[[nodiscard]] Result<CacheSpace> cache_space(session::NodeSession& cache);

// One read for the policy: the cache's torrent list and free space (an error when either
// cannot be read), then each archive node's list and free space (one that cannot be read is
// named in `unreachable`: its copies are not counted and nothing is sent there), under the
// free-space floor `floor`; with `state`, the policy's unfinished archive jobs (a job index
// that cannot be read leaves them out: the run continues them first anyway).
[[nodiscard]] Result<TierLive> read_tier_live(session::NodeSessions& nodes, const config::TierPolicy& policy, std::uint64_t floor,
                                              const state::StateDir* state = nullptr);

// The policy's plan from what was read, at the clock's time now.
[[nodiscard]] TierPlan plan_tier(const config::TierPolicy& policy, const TierLive& live, const Clock& clock);

}  // namespace archctl::runs
