#pragma once
// The job driver: run, cancel, list and summarize jobs of every kind (docs/design.md "State on disk",
// "The job", "Evict", "Budgets, outages and stops").
//
// Commands create a job with the kind's planner (TransferPlanner for archive/unarchive, Evictor for
// evict) and then drive it here; `resume` and `job` use nothing else. The driver finds the kind
// from the stored definition: callers never branch on it.
//
//   Driver driver(config, state, nodes, io);
//   for (auto& id : driver.unfinished().value()) driver.run(id, budgets);
//
// What a crash leaves: every step records its result durably before the next starts; a rerun
// re-derives the rest from evidence (node journals, qBittorrent, Syncthing).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/jobs/core/job_row.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::jobs {

class Driver {
public:
    Driver(const config::Config& config, const state::StateDir& state, Nodes& nodes, JobIo io);

    // Drive the job until done, a clean stop, or a failure (compensated, or left in an explicit
    // cleanup-required state). `verify_archive`: evict also checks the archive copies' pieces.
    RunResult run(const std::string& job_id, const Budgets& budgets,
                  plan::VerifyArchive verify_archive = plan::VerifyArchive::no);
    // Cancel: before the job's point of no return, undo what it did and release the resource;
    // after it, finish. LOCKED while a run holds the job.
    RunResult cancel(const std::string& job_id);
    // Ids of unfinished jobs of every kind, oldest first.
    [[nodiscard]] Result<std::vector<std::string>> unfinished();
    // One line of `job show` for an event of the job `row` (empty: the type alone says it).
    [[nodiscard]] static std::string describe_event(const JobSummary& row, const nlohmann::json& event);

private:
    RunResult run_job(const std::string& job_id, const Budgets& budgets, plan::VerifyArchive verify_archive);
    RunResult cancel_job(const std::string& job_id);
    // The job's row after a run (RunResult::row), and the [notify] hooks when the run brought the
    // job to an end or to needing attention (notify.hpp); `before` is its state when the run began.
    RunResult finish_run(RunResult result, std::optional<JobState> before);
    std::optional<JobState> state_of(const std::string& job_id) const;

    const config::Config& m_config;
    state::StateDir m_state;
    Nodes& m_nodes;
    JobIo m_io;
};

// The budgets of one run that drives several jobs (resume, a batch, tier): each job's budgets
// count what the run's earlier jobs moved, and the deadline counts from the run's start.
//
//   SharedBudgets shared(budgets, clock.steady());
//   for (...) { if (auto stop = shared.exhausted(clock.steady())) break; shared.count(driver.run(id, shared.next())); }
class SharedBudgets {
public:
    SharedBudgets(Budgets base, SteadyTime started);
    // The budgets of the next job.
    [[nodiscard]] Budgets next() const;
    void count(const RunResult& r) { m_moved += r.bytes_moved; }
    [[nodiscard]] std::uint64_t moved() const { return m_moved; }
    // Before a job starts: the stop when the byte budget is spent or the deadline passed
    // ({reason, text} as a job's stop would say it), else nullopt.
    struct Stop {
        StopReason reason;
        std::string text;
    };
    [[nodiscard]] std::optional<Stop> exhausted(SteadyTime now) const;

private:
    Budgets m_base;
    SteadyTime m_started;
    std::uint64_t m_moved = 0;
};

// Display retention (docs/design.md "State on disk"): hide a finished job, keeping a tombstone so a rerun of the
// same command is still recognised. JOB_ACTIVE for a job that is not finished.
[[nodiscard]] Status hide_job(const state::StateDir& dir, const JobSummary& row);
// Hide every finished job except a failed one that had merged files (it still needs a look),
// and purge tombstones older than `tombstone_days`. Returns {cleared, tombstones purged}.
struct Cleared {
    std::size_t jobs = 0, tombstones = 0;
};
[[nodiscard]] Result<Cleared> clear_finished(const state::StateDir& dir, long tombstone_days);
// The job `id` names: its full id, or a prefix of at least 8 characters that only one job has
// (like a short git id). NOT_FOUND when none matches; AMBIGUOUS, listing every candidate with
// its operation and resource, when several do.
[[nodiscard]] Result<const JobSummary*> find_job(const std::vector<JobSummary>& rows, const std::string& id);

// One row per job of every kind, oldest first, read from every job directory (no node is
// contacted). O(jobs): for `job clear`, tests and rebuilding the index, never for a default view.
[[nodiscard]] Result<std::vector<JobSummary>> summarize_jobs(const state::JobStore& store);

// The job index (state/job_index.hpp). A job is retired into the finished log when it ended
// cleanly: done or cancelled, nothing kept, nothing needing attention, not damaged. Failed jobs
// and jobs that kept files stay active: `status` lists them until `job rm`/`job clear`.
[[nodiscard]] bool retirable(const JobSummary& row);
// Rebuild the index from the job directories (reads every job once).
[[nodiscard]] Status rebuild_job_index(const state::JobStore& store);
// Rows of the active jobs only, oldest first, for `status`, `resume` and `job list`: builds the
// index on first use, and retires an active job whose ledger says it ended cleanly (a run that
// crashed before it updated the index).
[[nodiscard]] Result<std::vector<JobSummary>> summarize_active(const state::JobStore& store);
// The active rows plus the newest `finished` finished jobs (read from their own directories), for
// `status`: what it always showed of recent jobs, without reading every job.
[[nodiscard]] Result<std::vector<JobSummary>> summarize_recent(const state::JobStore& store, std::size_t finished);
// The active rows plus every job `target` may name: finished jobs whose log row contains it (a
// job id prefix, a resource prefix or name), and, when no row so far has an id starting with it,
// the job directories whose name does (one readdir). For job id lookups (find_job) and `status
// RES|JOB`; without reading every job's records.
[[nodiscard]] Result<std::vector<JobSummary>> summarize_matching(const state::JobStore& store, const std::string& target);

}  // namespace archctl::jobs
