#pragma once
// A job that cannot land moves on (docs/design.md "A job that cannot land"). When a transfer's
// target cannot take its bytes — free space below the floor at the sync or the merge, the part
// file not fitting, the target's Syncthing out of space or refusing the job's files — the run
// stops as before (a clean stop, exit 10) and the ledger records it (Ledger::target_blocked: the
// node, when a run first saw it, how many runs ended on it). The record goes once the target
// takes the job again: the step it blocked finishes, or a run moves bytes to the target and
// stops for another reason (a few small files trickling in before the same stop do not count). Once the condition has outlasted the bound below, the run that meets it again undoes
// the job with the compensation a cancel uses (its staging removed on both nodes, anything it
// placed on the target removed, its reservation freed) and ends it `cancelled`, with a
// `released` event saying why; the run's result is the failure DISK_INSUFFICIENT whose detail
// says `released`, so a tier run sends the candidate to its next archive node and a batch goes
// on with the other resources.
//
// The bound is both a number of runs and a time: a momentary dip (one run, or a few runs in a
// loop of retries within the hour) does not undo a transfer that may be large, and cron never
// waits on a full node for more than a day of runs.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "lib/base/clock.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/jobs/transfer/job.hpp"

namespace archctl::jobs::transfer {

// The condition must have ended at least this many runs of the job (the one that releases it
// included) ...
inline constexpr std::uint32_t k_release_runs = 3;
// ... and have been first recorded at least this long before.
inline constexpr std::chrono::hours k_release_after{24};

// Whether `blocked` has outlasted the bound at `now` (a record whose time does not read is
// taken as first seen now).
[[nodiscard]] bool release_due(const TargetBlocked& blocked, SystemTime now);

// "'nas' has not taken it since 2026-12-01T18:34:12Z (2 runs); a run that meets this again once 3
// runs and 24 h have passed undoes and releases the job": what a stop adds while the job waits.
[[nodiscard]] std::string waiting_text(const TargetBlocked& blocked);

// What a transfer run's result says of its job's target (RunResult::detail): the run stopped
// because the target cannot take the job (waiting), or it undid and released the job (released).
struct TargetRoom {
    enum class Kind { waiting, released } kind = Kind::waiting;
    TargetBlocked blocked;
};
[[nodiscard]] std::optional<TargetRoom> target_room_of(const RunResult& r);

}  // namespace archctl::jobs::transfer
