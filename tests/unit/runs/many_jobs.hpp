#pragma once
// Several jobs of one run for run_many and the batch: each an archive job of its own
// TransferFixture (tests/unit/jobs/job_fixture.hpp — its own state directory and fakes), driven
// by a real jobs::Driver on the run's one ManualClock and known to the run by a name
// ("first", "second", …). The runner records the budgets each turn was given.
//
//   ManyJobs jobs(2);
//   runs::ManyRun run(jobs.runner(), jobs.clock, budgets, jobs.clock.steady());
//   auto summary = runs::run_many(run, jobs.names);
//   CHECK(jobs.given[1].moved_before == summary.jobs[0].bytes);

#include <memory>
#include <string>
#include <vector>

#include "lib/runs/run_many.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

namespace archctl::test {

class ManyJobs {
public:
    explicit ManyJobs(std::size_t count);

    // Drives the job a name stands for with its fixture's state and nodes, on `clock`.
    [[nodiscard]] runs::RunJob runner();
    [[nodiscard]] TransferFixture& job(const std::string& name);
    // The job as its fixture's state directory holds it now ("running", "done", …).
    [[nodiscard]] std::string state_of(const std::string& name);

    fakes::ManualClock clock;
    std::vector<std::string> names;
    std::vector<std::unique_ptr<TransferFixture>> fixtures;
    std::vector<jobs::Budgets> given;      // the budgets of each turn, in order
    std::vector<std::string> driven;       // the names driven, in order
    std::function<void(const std::string&)> after;  // runs after each turn (moves the clock)
};

}  // namespace archctl::test
