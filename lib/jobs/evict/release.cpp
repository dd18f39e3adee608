// Evict step 5, release: drop the hold tags and forget the cache placement record.

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs::evict {

jobs::StepResult step_release(EvictRun& run) {
    ARCHCTL_TRY_STATUS(hold(run, false));
    ARCHCTL_TRY_STATUS(state::PlacementStore(run.env.state_dir).forget(run.def.aliases, run.def.cache));
    crash_point("evict.released");
    return jobs::StepResult::of(run.event("released", {{"tag", k_hold_tag}}));
}

}  // namespace archctl::jobs::evict
