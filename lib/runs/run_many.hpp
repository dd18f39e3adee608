#pragma once
// Many jobs under one run's budgets (docs/design.md "Budgets, outages and stops", "Many resources
// and tier policies"): resume, a batch and tier drive their jobs here, so a stop means the same
// whichever command ran it.
//
//   ManyRun run(runs::drive_with(driver), clock, budgets, clock.steady());
//   RunSummary summary = run_many(run, ids, [&](const JobRun& j) { render(j); });
//
// One rule for every way a job's turn ends:
//   done                                   the next job
//   locked (another archctl drives it)     skipped here (it goes on there), the next job
//   stopped: waiting (an outage outlasted the wait)
//                                          the next job; the run ends unfinished (exit 10)
//   stopped: the job's target cannot take it (its floor, out of space: jobs::transfer::target_room_of)
//                                          the next job (it may go elsewhere); the run ends
//                                          unfinished (exit 10)
//   stopped: budget, deadline, disk, interrupt
//                                          the whole run ends (exit 10)
//   failed                                 recorded, the next job (a job released because its
//                                          target stayed unable to take it is one: it is undone)
// Before each job the shared budgets are checked: the bytes the run's earlier jobs moved count
// toward max_bytes, the deadline counts from the run's start, and Ctrl-C ends the run.
//
// What a crash leaves: nothing of the run's own — each job records its steps durably
// (lib/jobs), and the next run finds the unfinished ones.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/jobs/transfer/target_room.hpp"
#include "lib/plan/coverage.hpp"

namespace archctl::runs {

// How one job's turn ended.
enum class JobOutcome { done, stopped, locked, failed };

// Why a job, or the whole run, stopped. `other` is a reason this list does not know: like every
// reason but `waiting`, it ends the run.
using jobs::StopReason;
using jobs::to_string;
// Every stop but `waiting` (and none) ends the whole run.
[[nodiscard]] bool ends_run(StopReason reason);

// One job's turn: the id it was asked to drive, how the turn ended, the bytes it moved, and the
// driver's full result (its row, step, error) for the caller to render.
struct JobRun {
    std::string id;
    JobOutcome outcome = JobOutcome::done;
    StopReason stop = StopReason::none;
    std::uint64_t bytes = 0;
    // The job's target could not take it: this turn stopped for it, or the job was released.
    std::optional<jobs::transfer::TargetRoom> target_room;
    jobs::RunResult result;
};

// What ended the whole run before its list did: the budgets spent or the deadline passed before
// a job started, Ctrl-C, or a job's stop that ends the run.
struct RunStop {
    StopReason reason = StopReason::none;
    std::string text;  // as the job's stop says it: "budget reached (…)"
};

struct RunSummary {
    std::vector<JobRun> jobs;  // in the order they ran
    std::optional<RunStop> ended;
    std::uint64_t moved = 0;   // payload bytes every job of the run moved

    [[nodiscard]] std::size_t count(JobOutcome outcome) const;
    // Work is left that a later run does (exit 10): the run ended early, a job waits for an
    // outage, or another archctl drives one.
    [[nodiscard]] bool unfinished() const;
    // The first job that failed, or nullptr.
    [[nodiscard]] const JobRun* first_failed() const;
};

// Drives one job under the budgets given: jobs::Driver::run in a command, anything a test
// records in a unit test.
using RunJob = std::function<jobs::RunResult(const std::string& job_id, const jobs::Budgets& budgets)>;
[[nodiscard]] RunJob drive_with(jobs::Driver& driver, plan::VerifyArchive verify_archive = plan::VerifyArchive::no);

// One run over many jobs, a job at a time. run_many (below) is the whole loop; a caller that
// decides between jobs (a batch re-plans, tier checks its goal) calls can_start() and drive()
// itself.
class ManyRun {
public:
    // `started`: when the run began (the deadline counts from it; a command may have planned
    // before its first job).
    ManyRun(RunJob run, Clock& clock, jobs::Budgets budgets, SteadyTime started);

    // Before a job: false once the run has ended — now recorded in summary().ended when the byte
    // budget is spent, the deadline passed or Ctrl-C was pressed.
    [[nodiscard]] bool can_start();
    // Drive one job with the shared budgets and record its turn; a stop that ends the run is
    // recorded in summary().ended. Call only after can_start() said true.
    const JobRun& drive(const std::string& job_id);
    [[nodiscard]] bool ended() const { return m_summary.ended.has_value(); }
    // The budgets the next job runs under (the run's, with moved_before and run_started).
    [[nodiscard]] jobs::Budgets next_budgets() const { return m_shared.next(); }
    [[nodiscard]] const RunSummary& summary() const { return m_summary; }

private:
    RunJob m_run;
    Clock& m_clock;
    jobs::SharedBudgets m_shared;
    RunSummary m_summary;
};

// Called after each job's turn, before the next starts (a command renders it as it goes).
using OnJob = std::function<void(const JobRun&)>;

// Drive `ids` in order under the rule above.
RunSummary run_many(ManyRun& run, const std::vector<std::string>& ids, const OnJob& on_job = {});

// Turn `turn` of a run that settles some turns without a job: the job to drive, or nullopt
// when the caller settled this turn itself (nothing to do, refused, already done).
using JobOfTurn = std::function<std::optional<std::string>(std::size_t turn)>;

// Take `turns` turns in order, each only while the budgets allow another job: the budgets are
// checked before job_of(turn) is asked (it may plan or create the job), and not after the last.
RunSummary run_many(ManyRun& run, std::size_t turns, const JobOfTurn& job_of, const OnJob& on_job = {});

}  // namespace archctl::runs
