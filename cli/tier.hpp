#pragma once
// archctl tier [NAME] and plan tier [NAME]: a cache node kept below a free-space goal by its
// [tier.NAME] policy (docs/design.md "Many resources and tier policies").

#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "lib/config/config.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::cli {

// `archctl plan tier [NAME]`: read-only; one torrent list per node.
[[nodiscard]] Outcome run_plan_tier(Context& ctx, const std::string& name);
// `status`'s policies section: each policy's goal, free space now, candidates left and last
// run (`out`: the same as JSON). Empty when no policy is configured.
[[nodiscard]] std::string render_policies(const config::Config& config, const state::StateDir* state, session::NodeSessions& nodes,
                                          nlohmann::json& out);

}  // namespace archctl::cli
