#pragma once
// Tombstones: when a finished job is hidden (Clear Finished, `job rm`), a minimal record stays
// for the retention period so a rerun of the same command is recognised as already done.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

struct Tombstone {
    std::string job_id;
    std::string request_digest;  // digest of the job's request: same command → same digest
    std::string outcome;         // "done", "failed", "cancelled"
    std::string hidden_at;       // RFC 3339
};

Status write_tombstone(const StateDir& dir, const Tombstone& t);
Result<std::vector<Tombstone>> read_tombstones(const StateDir& dir);
// Remove tombstones older than `days`; returns how many were removed.
Result<size_t> purge_tombstones(const StateDir& dir, long days);

}  // namespace archctl::state
