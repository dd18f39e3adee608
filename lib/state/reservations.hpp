#pragma once
// Reservations: one file per resource alias, created O_EXCL, naming the job that holds the
// resource. Reserving every alias of a resource (v1 and v2 of a hybrid) means a v1-only and a
// hybrid observation of the same torrent can never schedule concurrently.

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

// Reserve every alias for `job_id`. Aliases already held by `job_id` count as reserved
// (idempotent rerun). An alias held by another job fails with RESERVED naming that job; any
// alias this call created is removed again, so a failure reserves nothing.
Status reserve(const StateDir& dir, const std::vector<std::string>& aliases, const std::string& job_id);

// The job holding `alias`, if any.
Result<std::optional<std::string>> holder(const StateDir& dir, const std::string& alias);

// Remove the reservations of `aliases` that `job_id` holds; others are left alone.
Status release(const StateDir& dir, const std::vector<std::string>& aliases, const std::string& job_id);

// The unfinished job holding any of `aliases`: its id when its definition's request digest is
// `digest` (the same command: continue it), RESERVED naming the job and its lock holder when it
// is another. A reservation whose job was never defined (a crash between reserving and
// defining), or whose job ended (done, cancelled, failed: a crash between its end and its
// release), is stale and released. nullopt when nothing holds the resource.
[[nodiscard]] Result<std::optional<std::string>> holding_job(const StateDir& dir, const std::vector<std::string>& aliases,
                                                             const std::string& digest);

}  // namespace archctl::state
