// archctl resume [JOB…]: drive every unfinished job (or those named) under this run's budgets.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "cli/transfer_common.hpp"

namespace archctl::cli {

struct ResumeOptions {
    std::vector<std::string> jobs;
    BudgetOptions budgets;
};

namespace {

Outcome run_resume(Context& ctx, const ResumeOptions& o) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(o.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    std::vector<std::string> ids = o.jobs;
    if (ids.empty()) {
        auto all = s.driver->unfinished();
        if (!all.ok()) return Outcome::failed(all.take_error());
        ids = all.value();
    }
    nlohmann::json runs = nlohmann::json::array();
    bool any_stopped = false, any_failed = false;
    std::string stop_text;
    Error first_error;
    for (const auto& id : ids) {
        auto r = s.driver->run(id, budgets.value());
        s.progress->finish();
        runs.push_back(r.to_json());
        if (r.outcome == jobs::RunOutcome::stopped) {
            any_stopped = true;
            stop_text = r.stop_text;
            if (r.stop_reason != "waiting") break;  // budgets and interrupts end the whole run
        } else if (r.outcome == jobs::RunOutcome::failed && r.error.is(ErrorCode::LOCKED)) {
            // Another archctl drives it (an overlapping cron run): not a failure, it goes on there.
            any_stopped = true;
            stop_text = fmt::format("job {} is being driven by another archctl", id);
            ctx.out().info(fmt::format("archctl: job {} skipped: {}", id, r.error.message));
        } else if (r.outcome == jobs::RunOutcome::failed) {
            if (!any_failed) first_error = r.error;
            any_failed = true;
            ctx.out().info(fmt::format("archctl: job {} failed: {}", id, r.error.message));
        } else {
            ctx.out().info(fmt::format("archctl: job {} done", id));
        }
    }
    nlohmann::json result = {{"jobs", runs}};
    if (ids.empty()) ctx.out().info("archctl: no unfinished jobs");
    if (any_failed) return Outcome::failed(first_error, result);
    if (any_stopped) return Outcome::partial(stop_text, "rerun 'archctl resume' to continue", result);
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
