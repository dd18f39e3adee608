#pragma once
// Internal to lib/runs: the steps of one tier policy's run (tier_run.hpp) — continuing its
// unfinished jobs, archiving a candidate to the first archive node that takes it, evicting it
// with live proof — each job driven through the run's ManyRun, each outcome noted in the run.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "lib/runs/tier_run.hpp"

namespace archctl::runs {

// How one candidate's step, or one job's turn, ended.
enum class Turn {
    done,     // the job is done (or there was nothing to do)
    stopped,  // this turn ended cleanly (a wait, another archctl drives it): the run goes on
    ended,    // the whole run ended (budget, deadline, disk, Ctrl-C)
    failed,   // recorded in the run; the run goes on with the next candidate
    refused,  // evict: the archive copies are not proven (blocked)
    released, // archive: its target stayed unable to take the job, which was undone: the next node
};

class TierSteps {
public:
    TierSteps(TierEnv& env, ManyRun& many, const config::TierPolicy& policy, TierRun& run)
        : m_env(env), m_many(many), m_policy(policy), m_run(run) {}

    // Drive the policy's unfinished jobs, oldest first: archive from its cache to one of its
    // archive nodes, evict from its cache. False when the whole run ended meanwhile.
    [[nodiscard]] bool resume_unfinished();
    // Archive the candidate to the first of the policy's archive nodes that takes the job, in
    // the plan's choice (row.passed_over are not asked) and past the nodes this run found unable
    // to take a job; a candidate whose job already had its turn in this run is not driven again.
    [[nodiscard]] Turn archive(const TierRow& row);
    // Evict the candidate, only with live proof of its archive copies.
    [[nodiscard]] Turn evict(const TierRow& row);

    // Whether another job may start; when not, the run's stop is the policy's.
    [[nodiscard]] bool can_start();
    void fail(const Error& e);
    void stop(const std::string& text);

private:
    struct Unfinished {
        std::string id, op, resource, name, target;
    };
    // Which job a step drives: its id, the candidate, archive|evict, the archive node.
    struct JobOf {
        std::string id, resource, what, node;
    };
    [[nodiscard]] Result<std::vector<Unfinished>> unfinished_jobs();
    [[nodiscard]] Turn drive(const JobOf& job);
    [[nodiscard]] Turn archive_waits(const TierRow& row);
    [[nodiscard]] Turn no_node_takes(const TierRow& row, std::optional<Error> last);
    [[nodiscard]] bool passed_over(const TierRow& row, const std::string& node) const;
    void note(const JobOf& job, const std::string& outcome, const std::string& message = {});

    TierEnv& m_env;
    ManyRun& m_many;
    const config::TierPolicy& m_policy;
    TierRun& m_run;
    // Archive nodes whose route made this run wait (node → why): not asked again in this run.
    std::map<std::string, std::string> m_waiting;
    // Archive nodes that could not take a job of this run (its floor, out of space: node → why):
    // not asked again in this run.
    std::map<std::string, std::string> m_full;
    // Candidates whose archive job had its turn in this run and is unfinished: not driven again.
    std::set<std::string> m_had_turn;
};

}  // namespace archctl::runs
