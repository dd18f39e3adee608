#pragma once
// A tier policy's run (docs/design.md "Many resources and tier policies"): keep a cache node's
// free space at the policy's goal by archiving its candidates to the policy's archive nodes and
// evicting them once their copies are proven live.
//
// Call order for one policy (run_tier_policy):
//   1. resume   the policy's unfinished jobs (archive from its cache to one of its archive nodes,
//               evict from its cache), partial before new;
//   2. read     the cache's torrents and free space and each archive node's torrents, once
//               (tier_live.hpp), and plan (tier_plan.hpp); an unreachable cache is a wait;
//   3. confirm  what it will work through (the command asks: --yes, or a terminal);
//   4. work     through the candidates in the policy's order: archive to the node the plan
//               chose (the first archive node with room above its floor; the next one when that
//               node refuses or cannot take the job), then evict with live proof; re-read the
//               free space after each eviction and stop once the goal holds (evict = "to_goal");
//   5. settle   read the cache's free space once more: the summary's figures and "goal holds"
//               come from that read, whatever `evict` says;
//   6. record   the run's summary in <state>/tiers/<policy>.json (state/tier_store.hpp).
// A job whose target cannot take it (its floor, out of space: jobs/transfer/target_room.hpp)
// ends its own turn and no other job of the run is sent to that node; past its bound the job is
// undone and released, and its candidate goes to the next archive node in the same run. A
// candidate no node can take is blocked, and when the goal is not met for it the run fails
// TIER_GOAL_UNREACHABLE naming the nodes and why (a person frees space or adds a node), so no
// state makes every later run exit 10 without progress.
// Every job is driven through the run's ManyRun (run_many.hpp), so a stop means what it means in
// resume and a batch: a job waiting on an outage, or driven by another archctl, ends its own turn
// and the run goes on with the next candidate (the policy then ends `stopped`, exit 10); a budget,
// the deadline, a full disk or Ctrl-C ends the whole run. A candidate that fails is recorded, and
// is not evicted without its archive copy; the others still run.
//
// What a crash leaves: the jobs' own durable records (lib/jobs), and the policy's previous record;
// the next run continues the unfinished jobs first.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/runs/run_many.hpp"
#include "lib/runs/tier_jobs.hpp"
#include "lib/runs/tier_live.hpp"
#include "lib/runs/tier_plan.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/state/tier_store.hpp"

namespace archctl::runs {

enum class TierOutcome { done, stopped, failed };
[[nodiscard]] const char* to_string(TierOutcome outcome);

// One job the run drove, or one refusal, in order.
struct TierStep {
    std::string resource;  // the candidate's qB id
    std::string what;      // archive|evict
    std::string job;       // the job, empty when none was made
    std::string outcome;   // done|stopped|failed|blocked|released
    std::string message;   // why it stopped, failed, was blocked or released; what was already done
    std::string node;      // archive: the archive node, when one was asked

    [[nodiscard]] nlohmann::json to_json() const;
};

// What one policy's run did.
struct TierRun {
    std::string policy;
    TierOutcome outcome = TierOutcome::done;
    std::vector<TierStep> steps;
    std::size_t resumed = 0, archived = 0, evicted = 0, failed = 0, blocked = 0;
    std::map<std::string, std::size_t> archived_to;  // archive node → candidates archived there
    // Jobs undone and released because their target could not take them; candidates no archive
    // node could take (no room above its floor, unreachable), and why for the first.
    std::size_t released = 0, no_room = 0;
    std::string no_room_why;
    std::optional<std::string> stop;  // the run stopped cleanly: the last stop's text
    std::optional<Error> first_error;
    // The cache's free space was read (free_before, free_after and goal are known; free_after
    // and goal from a read after the work); a run that could not read it says so rather than
    // show 0 free.
    bool measured = false;
    std::uint64_t free_before = 0, free_after = 0;
    TierGoal goal;
    bool goal_met = false;
    std::string started, ended;  // RFC 3339

    // One policy of `tier --json` (man archctl-tier): the summary (with archived_to, released
    // and no_room) and its steps.
    [[nodiscard]] nlohmann::json to_json() const;
    // The record `status` shows: the summary without the steps.
    [[nodiscard]] state::TierRecord record() const;
};

// What the policy is about to work through, for the confirmation.
struct TierAsk {
    const config::TierPolicy& policy;
    const TierPlan& plan;
    const TierLive& live;
    std::size_t acting = 0;  // candidates that archive or evict
    std::size_t evicts = 0;  // of them, those that evict once proven
};

// Everything a tier run works with.
struct TierEnv {
    const config::Config& config;
    const state::StateDir& state;
    jobs::Nodes& nodes;
    jobs::Driver& driver;  // which jobs are unfinished
    TierJobs& jobs;        // opens the candidates' jobs
    Clock& clock;
    // A line for the person (stderr): each job made, done, stopped or failed.
    std::function<void(const std::string&)> say;
    // Asked once per policy before its first candidate; nullopt when confirmed, else the refusal
    // (the policy then ends failed with it, nothing having moved).
    std::function<std::optional<Error>(const TierAsk&)> confirm;
};

// Run one policy under the run's shared budgets (`many` is the run's, across its policies), then
// record it (a failed record is said and the run goes on). After it, many.ended() says whether
// the whole run ended.
[[nodiscard]] TierRun run_tier_policy(TierEnv& env, ManyRun& many, const config::TierPolicy& policy);

}  // namespace archctl::runs
