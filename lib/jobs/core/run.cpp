#include "lib/jobs/core/run.hpp"

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/core/step.hpp"

namespace archctl::jobs {

const char* to_string(StopReason reason) {
    switch (reason) {
        case StopReason::none: return "";
        case StopReason::waiting: return "waiting";
        case StopReason::budget: return "budget";
        case StopReason::deadline: return "deadline";
        case StopReason::disk: return "disk";
        case StopReason::interrupt: return "interrupt";
    }
    return "";
}

nlohmann::json RunResult::to_json() const {
    nlohmann::json j = {{"job", job_id}, {"step", step}, {"bytes_moved", bytes_moved}};
    j["outcome"] = outcome == RunOutcome::done ? "done" : outcome == RunOutcome::stopped ? "stopped" : "failed";
    if (outcome == RunOutcome::stopped) j["stop_reason"] = to_string(stop_reason);
    if (outcome == RunOutcome::failed) j["error"] = {{"code", error.code}, {"message", error.message}};
    if (!ended.empty()) j["already_ended"] = ended;
    if (compensated) j["compensated"] = true;
    // The job row as it stands after the run (JobSummary::to_json): op, resource, numeric
    // progress, timestamps, failure. What the run itself says above comes first.
    if (row.is_object())
        for (const auto& [key, value] : row.items())
            if (!j.contains(key)) j[key] = value;
    return j;
}

RunResult failed_run(const std::string& job_id, Error e) {
    RunResult r;
    r.job_id = job_id;
    r.outcome = RunOutcome::failed;
    r.error = std::move(e);
    return r;
}

std::string budget_text(std::uint64_t moved, std::uint64_t limit) {
    return fmt::format("budget reached ({} moved this run, limit {})", format_size(moved), format_size(limit));
}

std::optional<StepResult> budget_stop(const Budgets& budgets, std::uint64_t moved, SteadyTime started, SteadyTime now) {
    if (stop_requested()) return StepResult::stopped(StopReason::interrupt, interrupt_text());
    if (budgets.max_bytes && moved >= *budgets.max_bytes)
        return StepResult::stopped(StopReason::budget, budget_text(moved, *budgets.max_bytes));
    if (budgets.max_duration && now - started >= *budgets.max_duration)
        return StepResult::stopped(StopReason::deadline, fmt::format("deadline reached ({} this run)", format_duration(budgets.max_duration->count())));
    return std::nullopt;
}

}  // namespace archctl::jobs
