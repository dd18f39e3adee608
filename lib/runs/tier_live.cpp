#include "lib/runs/tier_live.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/jobs/core/driver.hpp"
#include "lib/state/job_store.hpp"

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

void unreachable(TierLive& live, const std::string& node, const std::string& why) {
    live.unreachable.push_back(fmt::format("{}: {}", node, why));
    live.room.unreachable[node] = "unreachable: " + why;
}

// The policy's unfinished archive jobs, by resource: from its cache to one of its archive nodes.
std::map<std::string, PendingArchive> pending_archives(const state::StateDir& state, const config::TierPolicy& policy) {
    std::map<std::string, PendingArchive> out;
    auto rows = jobs::summarize_active(state::JobStore(state));
    if (!rows.ok()) return out;
    for (const auto& row : rows.value()) {
        if (row.damaged || row.ledger.state != jobs::JobState::running) continue;
        const auto job = row.identity();
        if (job.op != "archive" || job.source != policy.cache) continue;
        if (std::find(policy.archive.begin(), policy.archive.end(), job.target) == policy.archive.end()) continue;
        out[job.resource] = {row.id, job.target, row.ledger.target_blocked};
    }
    return out;
}

}  // namespace

Result<TierLive> read_tier_live(session::NodeSessions& nodes, const config::TierPolicy& policy, std::uint64_t floor,
                                const state::StateDir* state) {
    TierLive live;
    live.room.floor = floor;
    ARCHCTL_TRY_ASSIGN(session::NodeSession * cache, nodes.get(policy.cache));
    ARCHCTL_TRY_ASSIGN(live.cache, list_torrents(*cache, live));
    ARCHCTL_TRY_ASSIGN(CacheSpace space, cache_space(*cache));
    live.free = space.free;
    live.total = space.total;
    for (const auto& name : policy.archive) {
        auto node = nodes.get(name);
        if (!node.ok()) {
            unreachable(live, name, node.error().message);
            continue;
        }
        auto list = list_torrents(*node.value(), live);
        if (!list.ok()) {
            unreachable(live, name, list.error().message);
            continue;
        }
        live.archives[name] = std::move(list.value());
        // Where a new placement goes, as the job's own plan measures it.
        auto room = node.value()->space(node.value()->config().qb_root);
        if (!room.ok()) {
            // Its copies still count; nothing new is sent there.
            live.room.unreachable[name] = "its free space could not be read: " + room.error().message;
            continue;
        }
        live.room.free[name] = room->free;
    }
    if (state) live.pending = pending_archives(*state, policy);
    return live;
}

TierPlan plan_tier(const config::TierPolicy& policy, const TierLive& live, const Clock& clock) {
    TierInput in;
    in.policy = &policy;
    in.cache = live.cache;
    in.archives = live.archives;
    in.room = live.room;
    in.pending = live.pending;
    in.free = live.free;
    in.total = live.total;
    in.now = std::chrono::duration_cast<std::chrono::seconds>(clock.now().time_since_epoch()).count();
    return make_tier_plan(in);
}

}  // namespace archctl::runs
