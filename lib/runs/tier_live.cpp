#include "lib/runs/tier_live.hpp"

#include <fmt/format.h>

namespace archctl::runs {

Result<CacheSpace> cache_space(session::NodeSession& cache) {
    ARCHCTL_TRY_ASSIGN(session::Space space, cache.space(cache.config().qb_root));
    // A goal of `max_used` needs the filesystem's size as well.
    if (!space.total)
        return Error(ErrorCode::NODE_UNREACHABLE,
                     fmt::format("node '{}' could not measure the free space of '{}'", cache.name(), cache.config().qb_root));
    return CacheSpace{space.free, *space.total};
}

namespace {

// One node's torrent list, counting the qBittorrent requests it took.
Result<std::vector<clients::qbittorrent::TorrentInfo>> list_torrents(session::NodeSession& node, TierLive& live) {
    const std::uint64_t before = node.qb().request_count();
    auto list = node.qb().all_torrents();
    live.requests[node.name()] = node.qb().request_count() - before;
    return list;
}

}  // namespace

Result<TierLive> read_tier_live(session::NodeSessions& nodes, const config::TierPolicy& policy) {
    TierLive live;
    ARCHCTL_TRY_ASSIGN(session::NodeSession * cache, nodes.get(policy.cache));
    ARCHCTL_TRY_ASSIGN(live.cache, list_torrents(*cache, live));
    ARCHCTL_TRY_ASSIGN(CacheSpace space, cache_space(*cache));
    live.free = space.free;
    live.total = space.total;
    for (const auto& name : policy.archive) {
        auto node = nodes.get(name);
        if (!node.ok()) {
            live.unreachable.push_back(fmt::format("{}: {}", name, node.error().message));
            continue;
        }
        auto list = list_torrents(*node.value(), live);
        if (!list.ok()) {
            live.unreachable.push_back(fmt::format("{}: {}", name, list.error().message));
            continue;
        }
        live.archives[name] = std::move(list.value());
    }
    return live;
}

TierPlan plan_tier(const config::TierPolicy& policy, const TierLive& live, const Clock& clock) {
    TierInput in;
    in.policy = &policy;
    in.cache = live.cache;
    in.archives = live.archives;
    in.free = live.free;
    in.total = live.total;
    in.now = std::chrono::duration_cast<std::chrono::seconds>(clock.now().time_since_epoch()).count();
    return make_tier_plan(in);
}

}  // namespace archctl::runs
