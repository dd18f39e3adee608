#pragma once
// The text of `plan tier`, `tier` and status's policies section (cli/tier.cpp): what a tier
// policy would do and what its run did, in the person's words. The library decides
// (lib/runs/tier_run.hpp); this only says it.

#include <string>

#include "lib/config/config.hpp"
#include "lib/runs/tier_live.hpp"
#include "lib/runs/tier_plan.hpp"
#include "lib/runs/tier_run.hpp"
#include "lib/state/tier_store.hpp"

namespace archctl::cli {

// One policy's plan: the goal and free space now and after, unreachable archive nodes, one row
// per candidate (the first 50), and the totals.
[[nodiscard]] std::string render_tier_plan(const config::TierPolicy& policy, const runs::TierPlan& plan, const runs::TierLive& live,
                                           const config::Config& config);
// The line said after a policy's run: "archctl: tier box: 2 archived, 2 evicted, 1.0 GiB free
// (goal keep 1.0 GiB free); goal holds". A run that ended before it read the cache's free space
// says so instead of a free space.
[[nodiscard]] std::string tier_run_line(const runs::TierRun& run);
// status's line for a policy's plan now: its goal, free space and candidates left.
[[nodiscard]] std::string tier_status_line(const runs::TierPlan& plan);
// status's line for a policy's last run: "last run <ended>: <outcome>, N archived, M evicted".
[[nodiscard]] std::string tier_last_run_line(const state::TierRecord& record);

}  // namespace archctl::cli
