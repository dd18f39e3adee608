// archctl resume [JOB…]: drive every unfinished job (or those named) under this run's budgets.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/transfer_common.hpp"
#include "lib/state/job_store.hpp"
#if ARCHCTL_HAVE_EVICT
#include <algorithm>

#include "cli/evict.hpp"
#endif

namespace archctl::cli {

struct ResumeOptions {
    std::vector<std::string> jobs;
    BudgetOptions budgets;
};

namespace {

#if ARCHCTL_HAVE_EVICT
bool is_evict_job(const state::StateDir& dir, const std::string& id) {
    auto def = state::JobStore(dir).definition(id);
    return def.ok() && evict::is_evict(def.value());
}
#endif

Outcome run_resume(Context& ctx, const ResumeOptions& o) {
    auto setup = setup_engine(ctx, &o.budgets);
    if (!setup.ok()) return Outcome::failed(setup.take_error());
    auto budgets = to_budgets(o.budgets, *setup->config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    std::vector<std::string> ids = o.jobs;
#if ARCHCTL_HAVE_EVICT
    auto evictor = make_evictor(ctx, setup.value());
#endif
    if (ids.empty()) {
        auto all = setup->engine->unfinished();
        if (!all.ok()) return Outcome::failed(all.take_error());
        ids = all.value();
#if ARCHCTL_HAVE_EVICT
        // Evict jobs are driven by the evictor; the engine drives archive and unarchive.
        std::erase_if(ids, [&](const std::string& id) { return is_evict_job(*setup->state, id); });
        auto evicts = evictor->unfinished();
        if (!evicts.ok()) return Outcome::failed(evicts.take_error());
        ids.insert(ids.end(), evicts->begin(), evicts->end());
        std::sort(ids.begin(), ids.end());
#endif
    }
    nlohmann::json runs = nlohmann::json::array();
    bool any_stopped = false, any_failed = false;
    std::string stop_text;
    Error first_error;
    for (const auto& id : ids) {
#if ARCHCTL_HAVE_EVICT
        auto r = is_evict_job(*setup->state, id) ? evictor->run(id).run : setup->engine->run(id, budgets.value());
#else
        auto r = setup->engine->run(id, budgets.value());
#endif
        setup->progress->finish();
        runs.push_back(r.to_json());
        if (r.outcome == jobs::RunOutcome::stopped) {
            any_stopped = true;
            stop_text = r.stop_text;
            if (r.stop_reason != "waiting") break;  // budgets and interrupts end the whole run
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
