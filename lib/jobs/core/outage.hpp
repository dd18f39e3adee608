#pragma once
// Outages in a job run (docs/design.md "Budgets, outages and stops"): an unreachable
// qBittorrent, Syncthing or node is waited out within transfer.outage_wait, never taken as a
// verdict on the job.
//
//   OutageWait outage(env);
//   StepResult opened = retry_through_outage(outage, [&] { return job.open(store.ledger(id)); });
//   if (opened.kind == StepResult::stop) ...  // the window ended (reason 'waiting'), Ctrl-C, deadline

#include <optional>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/base/retry.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/jobs/core/step.hpp"

namespace archctl::jobs {

// An error that says a service or node could not be reached (refused, reset, timed out, a 5xx
// while it starts, an exec child that died): a wait, never a verdict on the job.
[[nodiscard]] bool is_outage(const Error& e);
// A step's or an attempt's failure that is an outage.
[[nodiscard]] inline bool is_outage(const StepResult& r) { return r.kind == StepResult::fail && is_outage(r.error); }

// Waits out an outage: sleeps with backoff (1 s doubling to 15 s) while the window lasts, in
// slices so that Ctrl-C and the run's deadline still stop it. One per run; cleared by progress.
class OutageWait {
public:
    explicit OutageWait(const RunEnv& env);
    // `e` happened. next: try again now; stop: the window is over (reason 'waiting'), or Ctrl-C
    // or the deadline came first.
    StepResult wait(const Error& e);
    // Something worked: the next outage starts a new window.
    void clear();
    [[nodiscard]] bool waiting() const { return m_since.has_value(); }

private:
    const RunEnv& m_env;
    std::optional<SteadyTime> m_since;
    SteadyTime m_run_started;
    int m_tries = 0;
};

// The general form (lib/base/retry.hpp), for attempts that are not a Status.
using archctl::retry_through_outage;

// `attempt()` (a Status) again while it fails with an outage and `outage` lets the run wait
// (archctl::retry_through_outage). next: it worked; fail: its error, which is no outage; stop:
// the wait ended first — its reason and text, and in `error` the outage.
template <class Attempt>
StepResult retry_through_outage(OutageWait& outage, Attempt&& attempt) {
    return archctl::retry_through_outage(
        [&] { return StepResult::of(attempt()); }, [](const StepResult& r) { return is_outage(r); },
        [&](const StepResult& r) -> std::optional<StepResult> {
            StepResult w = outage.wait(r.error);
            if (w.kind == StepResult::next) return std::nullopt;
            w.error = r.error;
            return w;
        });
}

}  // namespace archctl::jobs
