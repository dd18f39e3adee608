#pragma once
// What a step of any kind of job ends with, and the stops a run's budgets call for
// (docs/design.md "Budgets, outages and stops").

#include <cstdint>
#include <optional>
#include <string>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/jobs/core/run.hpp"

namespace archctl::jobs {

// What a step ended with. A step returning StepResult may use ARCHCTL_TRY_STATUS and
// ARCHCTL_TRY_ASSIGN: an error converts into a failure.
struct StepResult {
    enum Kind { next, stop, fail } kind = next;
    StopReason reason = StopReason::none;  // stop: why
    std::string text;                      // stop: human reason
    Error error;                           // fail; stop after an outage: the outage

    StepResult() = default;
    StepResult(Error e) : kind(fail), error(std::move(e)) {}
    StepResult(Kind k, StopReason r, std::string t) : kind(k), reason(r), text(std::move(t)) {}

    static StepResult ok() { return {}; }
    static StepResult stopped(StopReason reason, std::string text) { return {stop, reason, std::move(text)}; }
    static StepResult failed(Error e) { return StepResult(std::move(e)); }
    static StepResult of(Status s) { return s.ok() ? StepResult() : StepResult(s.take_error()); }
};

// What a stop at the byte budget says: "budget reached (2.0 GiB moved this run, limit 2.0 GiB)".
[[nodiscard]] std::string budget_text(std::uint64_t moved, std::uint64_t limit);

// The stop the budgets call for now, checked at chunk and step boundaries and before each job of
// a run that drives several: Ctrl-C, the byte budget spent (`moved` this run), the deadline
// passed (the run began at `started`); nullopt while none applies.
[[nodiscard]] std::optional<StepResult> budget_stop(const Budgets& budgets, std::uint64_t moved, SteadyTime started, SteadyTime now);

}  // namespace archctl::jobs
