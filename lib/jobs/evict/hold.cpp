// Evict step 1, hold: tag every covering archive torrent `archctl-hold` while the eviction is in
// flight (restored on every run, removed by the release step).

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict/run.hpp"

namespace archctl::jobs::evict {

Status hold(EvictRun& run, bool on) {
    for (const auto& proof : run.def.proofs) {
        ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * n, run.node(proof.node));
        if (on) {
            ARCHCTL_TRY_STATUS(n->qb().add_tags({proof.qb_id}, {k_hold_tag}));
        } else {
            ARCHCTL_TRY_STATUS(n->qb().remove_tags({proof.qb_id}, {k_hold_tag}));
        }
    }
    return {};
}

jobs::StepResult step_hold(EvictRun& run) {
    ARCHCTL_TRY_STATUS(hold(run, true));
    crash_point("evict.held");
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& p : run.def.proofs) nodes.push_back({{"node", p.node}, {"qb_id", p.qb_id}});
    return jobs::StepResult::of(run.event("held", {{"tag", k_hold_tag}, {"torrents", nodes}}));
}

}  // namespace archctl::jobs::evict
