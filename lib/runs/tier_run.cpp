#include "lib/runs/tier_run.hpp"

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/runs/tier_steps.hpp"

namespace archctl::runs {

const char* to_string(TierOutcome outcome) {
    switch (outcome) {
        case TierOutcome::done: return "done";
        case TierOutcome::stopped: return "stopped";
        case TierOutcome::failed: return "failed";
    }
    return "failed";
}

nlohmann::json TierStep::to_json() const {
    nlohmann::json j = {{"resource", resource}, {"what", what}, {"outcome", outcome}};
    j["job"] = job.empty() ? nlohmann::json(nullptr) : nlohmann::json(job);
    if (!message.empty()) j["message"] = message;
    return j;
}

state::TierRecord TierRun::record() const {
    state::TierRecord r;
    r.policy = policy;
    r.outcome = to_string(outcome);
    r.resumed = resumed;
    r.archived = archived;
    r.evicted = evicted;
    r.failed = failed;
    r.blocked = blocked;
    r.free_before = free_before;
    r.free_after = free_after;
    r.want_free = goal.want_free;
    r.goal = goal.text;
    r.goal_met = goal_met;
    r.stop = stop;
    if (first_error) r.error = state::TierRecord::Failure{first_error->code, first_error->message};
    r.started = started;
    r.ended = ended;
    return r;
}

nlohmann::json TierRun::to_json() const {
    nlohmann::json j = record().to_json();
    j.erase("started");
    j.erase("ended");
    j["steps"] = nlohmann::json::array();
    for (const auto& s : steps) j["steps"].push_back(s.to_json());
    return j;
}

namespace {

// The rows the policy works through: those that act now and, behind them, its other candidates
// — an eviction that turns out unproven (blocked) is made up by the next candidate in order.
// Skipped and blocked rows are never touched; none at all when no row acts now.
std::vector<const TierRow*> candidates(const TierPlan& plan, TierAsk& ask) {
    std::vector<const TierRow*> todo;
    for (const auto& r : plan.rows) {
        if (r.rule.empty()) continue;
        todo.push_back(&r);
        ask.acting += archives(r.action) || evicts(r.action);
        ask.evicts += evicts(r.action);
    }
    if (ask.acting == 0) todo.clear();
    return todo;
}

// The cache's free space now, or `before` when it cannot be read. The goal is judged on the
// filesystem, not on sizes: hard links shared with other torrents free nothing.
std::uint64_t free_now(TierEnv& env, const config::TierPolicy& policy, std::uint64_t before) {
    auto cache = env.nodes.get(policy.cache);
    if (!cache.ok()) return before;
    auto space = cache_space(*cache.value());
    return space.ok() ? space->free : before;
}

// Work through the candidates in order until the goal holds; returns the free space after.
std::uint64_t work_through(TierEnv& env, TierSteps& steps, const config::TierPolicy& policy, const TierPlan& plan,
                           const std::vector<const TierRow*>& todo, std::uint64_t free) {
    for (const TierRow* row : todo) {
        if (policy.evict == config::TierEvict::to_goal && plan.goal.met(free)) break;
        if (!steps.can_start()) break;
        if (row->archived_on.empty()) {
            Turn t = steps.archive(*row);
            if (t == Turn::ended) break;
            if (t != Turn::done) continue;  // never evicted without its archive copy
        }
        if (policy.evict == config::TierEvict::never) continue;
        Turn t = steps.evict(*row);
        if (t == Turn::ended) break;
        if (t == Turn::done) free = free_now(env, policy, free);
    }
    return free;
}

Error goal_unreachable(const config::TierPolicy& policy, const TierRun& run, std::uint64_t free) {
    return Error(ErrorCode::TIER_GOAL_UNREACHABLE,
                 fmt::format("tier {}: goal not reached: {} free, the goal wants {} free; {}", policy.name, format_size(free),
                             format_size(run.goal.want_free),
                             run.blocked ? fmt::format("{} candidate(s) blocked because their archive copies are not proven", run.blocked)
                                         : std::string("no candidate is left")),
                 run.blocked ? "see 'archctl plan evict RES' for each blocked one, or 'archctl evict RES --verify-archive' to prove the copy"
                             : "widen the policy's archive_when, or lower its goal; 'archctl plan tier " + policy.name + "' shows what is left");
}

// A stop outranks a failure: the rerun that continues it may still reach the goal.
TierOutcome settle(TierSteps& steps, const config::TierPolicy& policy, TierRun& run, std::uint64_t free) {
    run.free_after = free;
    run.goal_met = policy.evict != config::TierEvict::to_goal || run.goal.met(free);
    if (run.stop) return TierOutcome::stopped;
    if (run.failed) return TierOutcome::failed;
    if (!run.goal_met) {
        steps.fail(goal_unreachable(policy, run, free));
        return TierOutcome::failed;
    }
    return TierOutcome::done;
}

TierOutcome run_policy(TierEnv& env, ManyRun& many, const config::TierPolicy& policy, TierRun& run) {
    TierSteps steps(env, many, policy, run);
    if (!steps.resume_unfinished()) return TierOutcome::stopped;
    auto live = read_tier_live(env.nodes, policy);
    if (!live.ok()) {
        // An unreachable node is a wait, not a verdict: cron tries again next time.
        if (jobs::is_outage(live.error())) {
            steps.stop(fmt::format("waiting: {}", live.error().message));
            return TierOutcome::stopped;
        }
        steps.fail(live.error());
        return TierOutcome::failed;
    }
    const TierPlan plan = plan_tier(policy, live.value(), env.clock);
    run.goal = plan.goal;
    run.measured = true;
    run.free_before = run.free_after = live->free;
    TierAsk ask{policy, plan, live.value()};
    const std::vector<const TierRow*> todo = candidates(plan, ask);
    if (!todo.empty() && env.confirm)
        if (auto refused = env.confirm(ask)) {
            steps.fail(*refused);
            return TierOutcome::failed;
        }
    return settle(steps, policy, run, work_through(env, steps, policy, plan, todo, live->free));
}

}  // namespace

TierRun run_tier_policy(TierEnv& env, ManyRun& many, const config::TierPolicy& policy) {
    TierRun run;
    run.policy = policy.name;
    run.started = format_rfc3339(env.clock.now());
    run.outcome = run_policy(env, many, policy, run);
    run.ended = format_rfc3339(env.clock.now());
    Status recorded = state::TierStore(env.state).write(run.record());
    if (!recorded.ok())
        env.say(fmt::format("archctl: warning: the outcome of tier {} was not recorded: {}", policy.name, recorded.error().message));
    return run;
}

}  // namespace archctl::runs
