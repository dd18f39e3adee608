#include "lib/runs/run_many.hpp"

#include <algorithm>
#include <utility>

namespace archctl::runs {

bool ends_run(StopReason reason) { return reason != StopReason::none && reason != StopReason::waiting; }

std::size_t RunSummary::count(JobOutcome outcome) const {
    return static_cast<std::size_t>(std::count_if(jobs.begin(), jobs.end(), [&](const JobRun& j) { return j.outcome == outcome; }));
}

bool RunSummary::unfinished() const { return ended || count(JobOutcome::stopped) > 0 || count(JobOutcome::locked) > 0; }

const JobRun* RunSummary::first_failed() const {
    auto it = std::find_if(jobs.begin(), jobs.end(), [](const JobRun& j) { return j.outcome == JobOutcome::failed; });
    return it == jobs.end() ? nullptr : &*it;
}

RunJob drive_with(jobs::Driver& driver, plan::VerifyArchive verify_archive) {
    return [&driver, verify_archive](const std::string& job_id, const jobs::Budgets& budgets) {
        return driver.run(job_id, budgets, verify_archive);
    };
}

namespace {

JobRun turn_of(const std::string& id, jobs::RunResult r) {
    JobRun j;
    j.id = id;
    j.bytes = r.bytes_moved;
    if (r.outcome == jobs::RunOutcome::done) {
        j.outcome = JobOutcome::done;
    } else if (r.outcome == jobs::RunOutcome::stopped) {
        j.outcome = JobOutcome::stopped;
        j.stop = r.stop_reason;
    } else if (r.error.is(ErrorCode::LOCKED)) {
        // Another archctl drives it (an overlapping cron run): not a failure, it goes on there.
        j.outcome = JobOutcome::locked;
    } else {
        j.outcome = JobOutcome::failed;
    }
    j.target_room = jobs::transfer::target_room_of(r);
    j.result = std::move(r);
    return j;
}

}  // namespace

ManyRun::ManyRun(RunJob run, Clock& clock, jobs::Budgets budgets, SteadyTime started)
    : m_run(std::move(run)), m_clock(clock), m_shared(std::move(budgets), started) {}

bool ManyRun::can_start() {
    if (ended()) return false;
    if (auto stop = m_shared.exhausted(m_clock.steady())) {
        m_summary.ended = RunStop{stop->reason, stop->text};
        return false;
    }
    return true;
}

const JobRun& ManyRun::drive(const std::string& job_id) {
    jobs::RunResult r = m_run(job_id, m_shared.next());
    m_shared.count(r);
    m_summary.moved = m_shared.moved();
    m_summary.jobs.push_back(turn_of(job_id, std::move(r)));
    const JobRun& j = m_summary.jobs.back();
    // Budgets, the deadline, a full disk and Ctrl-C end the whole run; a wait ends this job's turn,
    // and so does a target that cannot take this job (another job may go elsewhere).
    if (j.outcome == JobOutcome::stopped && ends_run(j.stop) && !j.target_room) m_summary.ended = RunStop{j.stop, j.result.stop_text};
    return j;
}

RunSummary run_many(ManyRun& run, const std::vector<std::string>& ids, const OnJob& on_job) {
    return run_many(run, ids.size(), [&](std::size_t i) { return std::optional<std::string>(ids[i]); }, on_job);
}

RunSummary run_many(ManyRun& run, std::size_t turns, const JobOfTurn& job_of, const OnJob& on_job) {
    for (std::size_t i = 0; i < turns && run.can_start(); ++i) {
        std::optional<std::string> job_id = job_of(i);
        if (!job_id) continue;
        const JobRun& j = run.drive(*job_id);
        if (on_job) on_job(j);
    }
    return run.summary();
}

}  // namespace archctl::runs
