#pragma once
// Finding the route (DESIGN.md §6) a job travels over: the `sendreceive` Syncthing folder that a
// cache node and an archive node share, below each one's sync root, with the same folder ID.

#include <string>

#include "lib/base/result.hpp"
#include "lib/jobs/job.hpp"
#include "lib/jobs/nodes.hpp"

namespace archctl::jobs {

// The route between `source` and `target` as paths on each. NO_ROUTE when the pair has none.
[[nodiscard]] Result<RouteRef> find_route(NodeHandle& source, NodeHandle& target);

}  // namespace archctl::jobs
