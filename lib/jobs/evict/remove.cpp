// Evict step 2, remove: revalidate every proof and the cache fingerprint, then remove the cache
// torrent from qBittorrent with data deletion disabled.

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict/run.hpp"

namespace archctl::jobs::evict {

namespace {

Status wait_absent(Clock& clock, jobs::NodeHandle& cache, const std::string& id) {
    auto deadline = clock.steady() + std::chrono::seconds(30);
    while (true) {
        ARCHCTL_TRY_ASSIGN(auto infos, cache.qb().torrents({id}));
        if (infos.empty()) return {};
        if (clock.steady() > deadline)
            return Error(ErrorCode::QB_TIMEOUT, fmt::format("qBittorrent on '{}' still lists torrent {} 30 s after removing it", cache.name(), id));
        clock.sleep_for(std::chrono::milliseconds(100));
    }
}

}  // namespace

jobs::StepResult step_remove(EvictRun& run) {
    ARCHCTL_TRY_STATUS(revalidate(run));
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
    ARCHCTL_TRY_ASSIGN(auto infos, cache->qb().torrents({run.def.qb_id}));
    bool present = !infos.empty();
    if (present) {
        ARCHCTL_TRY_STATUS(cache->qb().remove({run.def.qb_id}, qb::DeleteData::no));
        ARCHCTL_TRY_STATUS(wait_absent(*run.env.io.clock, *cache, run.def.qb_id));
        crash_point("evict.removed");
    }
    run.ledger.removed = true;
    ARCHCTL_TRY_STATUS(run.event("removed", {{"node", run.def.cache}, {"qb_id", run.def.qb_id}, {"delete_files", false},
                                             {"already_absent", !present}}));
    // A run that finds it gone already (a run before this one removed it) has nothing to say.
    if (present)
        run.log(fmt::format("archctl: removed torrent {} from qBittorrent on {}; its files are unlinked next", run.def.qb_id.substr(0, 12),
                            run.def.cache));
    return {};
}

}  // namespace archctl::jobs::evict
