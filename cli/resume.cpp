// archctl resume [JOB…]: drive every unfinished job (or those named) under this run's budgets.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "cli/transfer_common.hpp"
#include "lib/base/clock.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/runs/run_many.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::cli {

struct ResumeOptions {
    std::vector<std::string> jobs;
    BudgetOptions budgets;
};

namespace {

// The jobs the user named, each by its full id or a prefix only one job has (like git):
// NOT_FOUND or AMBIGUOUS (listing the candidates) otherwise — before anything runs.
Result<std::vector<std::string>> full_ids(const state::StateDir& state, const std::vector<std::string>& named) {
    std::vector<std::string> out;
    for (const auto& id : named) {
        // The active jobs and those whose id starts with this one: never every job's records.
        ARCHCTL_TRY_ASSIGN(auto rows, jobs::summarize_matching(state::JobStore(state), id));
        auto row = jobs::find_job(rows, id);
        if (!row.ok()) {
            Error e = row.take_error();
            if (e.is(ErrorCode::NOT_FOUND)) e.hint = "see 'archctl job list' for job ids; 'archctl resume' alone drives every unfinished job";
            return e;
        }
        if (std::find(out.begin(), out.end(), row.value()->id) == out.end()) out.push_back(row.value()->id);
    }
    return out;
}

// One job's turn as it ends: a line on stderr. Returns the stop's text when the job stopped or is
// driven elsewhere (the run's exit-10 reason, unless a later stop says another).
std::optional<std::string> report_turn(Context& ctx, const state::StateDir& state, const runs::JobRun& j) {
    const jobs::RunResult& r = j.result;
    switch (j.outcome) {
        case runs::JobOutcome::stopped: return r.stop_text;
        case runs::JobOutcome::locked: {
            std::string text = jobs::report::driven_elsewhere(state, j.id);
            ctx.out().info(fmt::format("archctl: {}; skipped here", text));
            return text;
        }
        case runs::JobOutcome::failed: ctx.out().info(fmt::format("archctl: job {} failed: {}", j.id, r.error.message)); break;
        case runs::JobOutcome::done:
            if (r.compensated) ctx.out().info(fmt::format("archctl: job {}: undoing it is finished; the job ended {}", j.id, r.ended));
            else ctx.out().info(fmt::format("archctl: job {} done", j.id));
            break;
    }
    return std::nullopt;
}

Outcome run_resume(Context& ctx, const ResumeOptions& o) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(o.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    std::vector<std::string> ids;
    std::vector<std::string> damaged;
    if (!o.jobs.empty()) {
        auto named = full_ids(*s.state, o.jobs);
        if (!named.ok()) return Outcome::failed(named.take_error());
        ids = named.value();
    } else {
        auto all = s.driver->unfinished();
        if (!all.ok()) return Outcome::failed(all.take_error());
        ids = all.value();
        // A job nothing can drive is said every time, never silently skipped.
        auto broken = state::JobStore(*s.state).damaged();
        if (broken.ok()) damaged = broken.value();
    }
    nlohmann::json driven = nlohmann::json::array();
    std::string stop_text;
    runs::ManyRun run(runs::drive_with(*s.driver), *s.io.clock, budgets.value(), s.io.clock->steady());
    runs::RunSummary summary = runs::run_many(run, ids, [&](const runs::JobRun& j) {
        s.progress->finish();
        driven.push_back(j.result.to_json());
        if (auto text = report_turn(ctx, *s.state, j)) stop_text = *text;
    });
    if (summary.ended) stop_text = summary.ended->text;
    nlohmann::json result = {{"jobs", driven}};
    if (ids.empty() && damaged.empty()) ctx.out().info("archctl: no unfinished jobs");
    for (const auto& id : damaged) ctx.out().info(fmt::format("archctl: job {} is damaged: its definition is missing or unreadable", id));
    if (!damaged.empty()) result["damaged"] = damaged;
    if (const runs::JobRun* failed = summary.first_failed()) return Outcome::failed(failed->result.error, result);
    if (!damaged.empty())
        return Outcome::failed(Error(ErrorCode::JOB_DAMAGED, fmt::format("{} job(s) cannot be driven: their definition is missing or unreadable ({})",
                                                                         damaged.size(), fmt::join(damaged, ", ")),
                                     fmt::format("see 'archctl job show {}'; remove its records with 'archctl job rm {}'", damaged.front(),
                                                 damaged.front())),
                               result);
    if (summary.unfinished()) return Outcome::partial(stop_text, "rerun 'archctl resume' to continue", result);
    return Outcome::done(result);
}

}  // namespace

Runner register_resume(CLI::App& app) {
    auto o = std::make_shared<ResumeOptions>();
    app.add_option("JOB", o->jobs, "job ids (default: every unfinished job)");
    add_budget_options(app, o->budgets);
    return [o](Context& ctx) { return run_resume(ctx, *o); };
}

}  // namespace archctl::cli
