// archctl tier [NAME]: resume the policy's unfinished jobs, archive its candidates in order,
// evict those whose archive copy is proven live, until the cache's goal holds
// (lib/runs/tier_run.hpp). plan tier: the same choice, read-only, from one torrent list per node.
#include "cli/tier.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/confirm.hpp"
#include "cli/services.hpp"
#include "cli/tier_render.hpp"
#include "cli/transfer_common.hpp"
#include "lib/runs/run_many.hpp"
#include "lib/runs/tier_jobs.hpp"
#include "lib/runs/tier_live.hpp"
#include "lib/runs/tier_run.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::cli {

struct TierOptions {
    std::string name;
    BudgetOptions budgets;
    bool yes = false;
};

namespace {

const char* k_example =
    "add a policy to config.toml, e.g. [tier.seedbox] cache = \"seedbox\", archive = [\"nas\"], keep_free = \"200G\", "
    "archive_when = { completed_before = \"14d\" } (see 'man archctl-tier')";

Result<std::vector<const config::TierPolicy*>> policies_of(const config::Config& config, const std::string& name) {
    std::vector<const config::TierPolicy*> out;
    if (config.tiers.empty())
        return Error(ErrorCode::CONFIG_INVALID, "no tier policy is configured (no [tier.NAME] table in config)", k_example);
    if (name.empty()) {
        for (const auto& [_, p] : config.tiers) out.push_back(&p);
        return out;
    }
    auto it = config.tiers.find(name);
    if (it == config.tiers.end()) {
        std::vector<std::string> names;
        for (const auto& [n, _] : config.tiers) names.push_back(n);
        return Error(ErrorCode::USAGE, fmt::format("no tier policy '{}' (configured: {})", name, fmt::join(names, ", ")),
                     "name one of them, or none for all");
    }
    out.push_back(&it->second);
    return out;
}

// A missing policy name is a usage error; anything else about the policies is a failure.
Outcome policies_error(Error e) { return e.is(ErrorCode::USAGE) ? Outcome::usage(std::move(e)) : Outcome::failed(std::move(e)); }

// The one confirmation of a policy's run, with its plan shown on a terminal.
std::optional<Error> confirm_policy(Context& ctx, const Services& s, const TierOptions& o, const runs::TierAsk& a) {
    const std::string& name = a.policy.name;
    ConfirmRequest c;
    c.yes = o.yes;
    c.plan_digest = torrent::sha256_hex(a.plan.to_json().dump());
    c.plan = [&] { return render_tier_plan(a.policy, a.plan, a.live, *s.config); };
    c.question = fmt::format("tier {}: work through {} candidate(s) ({} to evict once proven)?", name, a.acting, a.evicts);
    c.needs = fmt::format("tier '{}' needs confirmation", name);
    c.needs_hint = fmt::format("pass --yes (cron: archctl tier {} --yes); 'archctl plan tier {}' shows what it would do", name, name);
    return confirm(ctx, *s.state, c);
}

Outcome run_tier(Context& ctx, const TierOptions& o) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(o.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    auto policies = policies_of(*s.config, o.name);
    if (!policies.ok()) return policies_error(policies.take_error());

    runs::RunJob drive = [&s](const std::string& id, const jobs::Budgets& b) {
        jobs::RunResult r = s.driver->run(id, b);
        s.progress->finish();
        return r;
    };
    runs::ManyRun many(drive, *s.io.clock, budgets.value(), s.io.clock->steady());
    runs::PlannerJobs planners(*s.transfers, *s.evictor);
    runs::TierEnv env{*s.config, *s.state, *s.nodes, *s.driver, planners, *s.io.clock,
                      [&ctx](const std::string& line) { ctx.out().info(line); },
                      [&](const runs::TierAsk& a) { return confirm_policy(ctx, s, o, a); }};
    nlohmann::json runs = nlohmann::json::array();
    std::optional<Error> first_error;
    std::string stop_text;
    for (const config::TierPolicy* policy : policies.value()) {
        runs::TierRun run = runs::run_tier_policy(env, many, *policy);
        ctx.out().info(tier_run_line(run));
        runs.push_back(run.to_json());
        if (run.first_error && !first_error) first_error = run.first_error;
        if (run.stop && stop_text.empty()) stop_text = *run.stop;
        if (many.ended()) break;  // the budgets are the run's, not the policy's
    }
    nlohmann::json result = {{"tier", runs}};
    if (first_error) return Outcome::failed(*first_error, result);
    if (!stop_text.empty()) return Outcome::partial(stop_text, "rerun 'archctl tier' to continue (cron: exit 10 means more to do)", result);
    return Outcome::done(result);
}

}  // namespace

Outcome run_plan_tier(Context& ctx, const std::string& name) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto policies = policies_of(*s.config, name);
    if (!policies.ok()) return policies_error(policies.take_error());
    nlohmann::json plans = nlohmann::json::array();
    std::string text;
    bool anything_to_do = false;
    for (const config::TierPolicy* policy : policies.value()) {
        auto live = runs::read_tier_live(*s.nodes, *policy, s.config->min_free, s.state);
        if (!live.ok()) return Outcome::failed(live.take_error());
        runs::TierPlan plan = runs::plan_tier(*policy, live.value(), *s.io.clock);
        const runs::TierTotals totals = plan.totals();
        anything_to_do = anything_to_do || totals.archive > 0 || totals.evict > 0;
        nlohmann::json j = plan.to_json();
        j["requests"] = live->requests;
        if (!live->unreachable.empty()) j["unreachable"] = live->unreachable;
        plans.push_back(std::move(j));
        if (!text.empty()) text += "\n\n";
        text += render_tier_plan(*policy, plan, live.value(), *s.config);
    }
    std::string who = name.empty() ? "" : " " + name;
    // A plan that moves nothing has no command to offer: running it would do nothing either.
    if (anything_to_do)
        text += fmt::format("\n\nrun with: archctl tier{} --yes        (cron: archctl tier --max-minutes 240 --yes || [ $? -eq 10 ])", who);
    else
        text += "\n\nnothing to run now: this plan archives and evicts nothing";
    ctx.out().result(text);
    return Outcome::done({{"tier", plans}});
}

Runner register_tier(CLI::App& app) {
    auto o = std::make_shared<TierOptions>();
    app.add_option("NAME", o->name, "the policy ([tier.NAME] in config); default: every policy")->type_name("NAME");
    add_budget_options(app, o->budgets);
    app.add_flag("--yes", o->yes, "do not ask for confirmation (cron)");
    return [o](Context& ctx) { return run_tier(ctx, *o); };
}

}  // namespace archctl::cli
