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
    if (!node.empty()) j["node"] = node;
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
    j["archived_to"] = archived_to;
    j["released"] = released;
    j["no_room"] = no_room;
    if (!no_room_why.empty()) j["no_room_why"] = no_room_why;
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

// A candidate of the plan that no archive node can take now (no room above its floor, all
// unreachable): counted when the run does not reach it itself (nothing acts).
void note_unplaced(const TierPlan& plan, TierRun& run) {
    for (const auto& r : plan.rows) {
        if (r.rule.empty() || r.action != TierAction::blocked || !r.job.empty() || !r.archive_to.empty()) continue;
        ++run.no_room;
        if (run.no_room_why.empty()) run.no_room_why = passed_over_text(r.passed_over);
    }
}

Error goal_unreachable(const config::TierPolicy& policy, const TierRun& run) {
    std::vector<std::string> why, fix;
    if (run.no_room) {
        why.push_back(fmt::format("{} candidate(s) have no archive node that can take them ({})", run.no_room, run.no_room_why));
        fix.push_back(fmt::format("free space on an archive node of the policy (or lower transfer.min_free), or add one to its archive "
                                  "list; 'archctl plan tier {}' shows where each candidate would go",
                                  policy.name));
    }
    if (run.blocked) {
        why.push_back(fmt::format("{} candidate(s) blocked because their archive copies are not proven", run.blocked));
        fix.push_back("see 'archctl plan evict RES' for each blocked one, or 'archctl evict RES --verify-archive' to prove the copy");
    }
    if (why.empty()) {
        why.push_back("no candidate is left");
        fix.push_back("widen the policy's archive_when, or lower its goal; 'archctl plan tier " + policy.name + "' shows what is left");
    }
    return Error(ErrorCode::TIER_GOAL_UNREACHABLE,
                 fmt::format("tier {}: goal not reached: {} free, the goal wants {} free; {}", policy.name, format_size(run.free_after),
                             format_size(run.goal.want_free), fmt::join(why, "; ")),
                 fmt::format("{}", fmt::join(fix, "; ")));
}

// The summary's figures from a fresh read of the cache (whatever ended the run), and the
// outcome: a stop outranks a failure (the rerun that continues it may still reach the goal); the
// goal holds only when the free space read now meets it, in every evict mode.
TierOutcome settle(TierEnv& env, TierSteps& steps, const config::TierPolicy& policy, TierRun& run) {
    if (auto cache = env.nodes.get(policy.cache); cache.ok())
        if (auto space = cache_space(*cache.value()); space.ok()) {
            if (!run.measured) run.free_before = space->free;
            run.measured = true;
            run.free_after = space->free;
            run.goal = tier_goal(policy, space->free, space->total);
        }
    run.goal_met = run.measured && run.goal.met(run.free_after);
    if (run.stop) return TierOutcome::stopped;
    if (run.failed) return TierOutcome::failed;
    if (policy.evict == config::TierEvict::never) {
        // A policy that never evicts archives what it chose; its goal is said, never claimed. What
        // no archive node can take needs a person, as a goal nothing reaches does.
        if (!run.no_room) return TierOutcome::done;
        Error e = goal_unreachable(policy, run);
        steps.fail(Error(ErrorCode::DISK_INSUFFICIENT,
                         fmt::format("tier {}: {} candidate(s) have no archive node that can take them ({})", policy.name, run.no_room,
                                     run.no_room_why),
                         e.hint));
        return TierOutcome::failed;
    }
    if (!run.goal_met && run.measured) {
        steps.fail(goal_unreachable(policy, run));
        return TierOutcome::failed;
    }
    return TierOutcome::done;
}

// Read, plan, confirm and work through the candidates (steps 2 to 4 above); what stops or fails
// is noted in `run` through `steps`.
void work(TierEnv& env, TierSteps& steps, const config::TierPolicy& policy, TierRun& run) {
    auto live = read_tier_live(env.nodes, policy, env.config.min_free, &env.state);
    if (!live.ok()) {
        // An unreachable node is a wait, not a verdict: cron tries again next time.
        if (jobs::is_outage(live.error())) return steps.stop(fmt::format("waiting: {}", live.error().message));
        return steps.fail(live.error());
    }
    const TierPlan plan = plan_tier(policy, live.value(), env.clock);
    run.goal = plan.goal;
    run.measured = true;
    run.free_before = run.free_after = live->free;
    TierAsk ask{policy, plan, live.value()};
    const std::vector<const TierRow*> todo = candidates(plan, ask);
    if (todo.empty()) note_unplaced(plan, run);
    if (!todo.empty() && env.confirm)
        if (auto refused = env.confirm(ask)) return steps.fail(*refused);
    run.free_after = work_through(env, steps, policy, plan, todo, live->free);
}

TierOutcome run_policy(TierEnv& env, ManyRun& many, const config::TierPolicy& policy, TierRun& run) {
    TierSteps steps(env, many, policy, run);
    if (steps.resume_unfinished()) work(env, steps, policy, run);
    return settle(env, steps, policy, run);
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
