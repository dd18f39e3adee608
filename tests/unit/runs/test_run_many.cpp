// run_many: many jobs under one run's shared budgets, one rule for every stop — driven by real
// jobs::Drivers over the recording fakes (many_jobs.hpp), on one ManualClock. No service, no
// sleeping.

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/lock_file.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/runs/run_many.hpp"
#include "lib/state/job_store.hpp"
#include "tests/unit/runs/many_jobs.hpp"

using namespace archctl;
using archctl::runs::JobOutcome;
using archctl::runs::StopReason;
using archctl::test::ManyJobs;

namespace {

runs::RunSummary run_all(ManyJobs& jobs, const jobs::Budgets& budgets = {}) {
    runs::ManyRun run(jobs.runner(), jobs.clock, budgets, jobs.clock.steady());
    return runs::run_many(run, jobs.names);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("run_many: each job runs with what the run's earlier jobs moved and the run's start") {
    ManyJobs jobs(3);
    jobs::Budgets budgets;
    budgets.max_bytes = 1000;
    const SteadyTime started = jobs.clock.steady();
    runs::ManyRun run(jobs.runner(), jobs.clock, budgets, started);
    std::vector<std::string> seen;
    runs::RunSummary s = runs::run_many(run, jobs.names, [&](const runs::JobRun& j) { seen.push_back(j.id); });

    REQUIRE(s.jobs.size() == 3);
    CHECK(seen == jobs.names);
    for (const auto& j : s.jobs) CHECK_MESSAGE(j.outcome == JobOutcome::done, j.id, ": ", j.result.error.message);
    REQUIRE(jobs.given.size() == 3);
    CHECK(s.jobs[0].bytes > 0);
    CHECK(jobs.given[0].moved_before == 0);
    CHECK(jobs.given[1].moved_before == s.jobs[0].bytes);
    CHECK(jobs.given[2].moved_before == s.jobs[0].bytes + s.jobs[1].bytes);
    for (const auto& b : jobs.given) {
        REQUIRE(b.run_started.has_value());
        CHECK(*b.run_started == started);
        CHECK(b.max_bytes == budgets.max_bytes);
    }
    // The second job's stage is given what is left of the run's budget, not the whole of it.
    auto stage = jobs.job("second").seedbox.ops.args_of("stage");
    REQUIRE(stage.size() == 1);
    CHECK(stage[0]["budget_bytes"] == 1000 - s.jobs[0].bytes);
    CHECK(s.moved == s.jobs[0].bytes + s.jobs[1].bytes + s.jobs[2].bytes);
    CHECK_FALSE(s.ended);
    CHECK_FALSE(s.unfinished());
    CHECK(s.first_failed() == nullptr);
}

TEST_CASE("run_many: the byte budget the earlier jobs spent stops a later job, and its stop ends the whole run") {
    ManyJobs jobs(3);
    // Measure what one job moves, then allow one and a half of it.
    ManyJobs probe(1);
    const std::uint64_t one = run_all(probe).moved;
    REQUIRE(one > 0);
    jobs::Budgets budgets;
    budgets.max_bytes = one + one / 2;
    runs::RunSummary s = run_all(jobs, budgets);

    REQUIRE(s.jobs.size() == 2);
    CHECK(s.jobs[0].outcome == JobOutcome::done);
    CHECK(s.jobs[1].outcome == JobOutcome::stopped);
    CHECK(s.jobs[1].stop == StopReason::budget);
    REQUIRE(s.ended);
    CHECK(s.ended->reason == StopReason::budget);
    CHECK(s.ended->text == s.jobs[1].result.stop_text);
    CHECK(contains(s.ended->text, "budget reached"));
    CHECK(jobs.driven == std::vector<std::string>{"first", "second"});
    CHECK(jobs.state_of("second") == "running");
    CHECK(jobs.job("third").seedbox.ops.count("stage") == 0);
    CHECK(s.unfinished());
}

TEST_CASE("run_many: a deadline that passed before a job starts ends the run there, not after the last job") {
    ManyJobs jobs(2);
    jobs::Budgets budgets;
    budgets.max_duration = std::chrono::seconds(60);
    SUBCASE("passed during the first job: the second never starts") {
        jobs.after = [&](const std::string&) { jobs.clock.advance(std::chrono::seconds(61)); };
        runs::RunSummary s = run_all(jobs, budgets);
        REQUIRE(s.jobs.size() == 1);
        CHECK(s.jobs[0].outcome == JobOutcome::done);
        REQUIRE(s.ended);
        CHECK(s.ended->reason == StopReason::deadline);
        CHECK(contains(s.ended->text, "deadline reached"));
        CHECK(jobs.driven == std::vector<std::string>{"first"});
        CHECK(s.unfinished());
    }
    SUBCASE("passed during the last job: nothing is left, the run is finished") {
        jobs.after = [&](const std::string& name) {
            if (name == "second") jobs.clock.advance(std::chrono::seconds(61));
        };
        runs::RunSummary s = run_all(jobs, budgets);
        REQUIRE(s.jobs.size() == 2);
        CHECK_FALSE(s.ended);
        CHECK_FALSE(s.unfinished());
    }
}

TEST_CASE("run_many: an outage outlasting the wait ends that job's turn; the run goes on and ends unfinished") {
    ManyJobs jobs(2);
    jobs.job("first").nas.qb.fail_always("add", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'nas'"));
    jobs::Budgets budgets;
    budgets.outage_wait = std::chrono::seconds(20);
    runs::RunSummary s = run_all(jobs, budgets);

    REQUIRE(s.jobs.size() == 2);
    CHECK(s.jobs[0].outcome == JobOutcome::stopped);
    CHECK(s.jobs[0].stop == StopReason::waiting);
    CHECK(contains(s.jobs[0].result.stop_text, "still unreachable after"));
    CHECK_MESSAGE(s.jobs[1].outcome == JobOutcome::done, s.jobs[1].result.error.message);
    CHECK(jobs.state_of("first") == "running");
    CHECK(jobs.state_of("second") == "done");
    CHECK_FALSE(s.ended);
    CHECK(s.unfinished());
    CHECK(s.first_failed() == nullptr);
}


TEST_CASE("run_many: a job whose target cannot take it ends its own turn; the run goes on and ends unfinished") {
    ManyJobs jobs(2);
    archctl::test::target_without_room(jobs.job("first"), [] { return std::uint64_t{50}; });
    jobs::Budgets budgets;
    budgets.min_free = 100;
    runs::RunSummary s = run_all(jobs, budgets);

    REQUIRE(s.jobs.size() == 2);
    CHECK(s.jobs[0].outcome == JobOutcome::stopped);
    CHECK(s.jobs[0].stop == StopReason::disk);
    REQUIRE(s.jobs[0].target_room);
    CHECK(s.jobs[0].target_room->kind == jobs::transfer::TargetRoom::Kind::waiting);
    CHECK(s.jobs[0].target_room->blocked.node == "nas");
    CHECK_MESSAGE(s.jobs[1].outcome == JobOutcome::done, s.jobs[1].result.error.message);
    CHECK_FALSE(s.ended);
    CHECK(s.unfinished());

    // The source's own floor (the stage) still ends the whole run.
    ManyJobs source(2);
    source.job("first").seedbox.ops.handlers["stage"] = [](const nlohmann::json&) -> Result<nlohmann::json> {
        node::StageResult r;
        r.stopped = node::Stop::disk;
        r.free_bytes = 10;
        r.need_bytes = 30;
        return nlohmann::json(r);
    };
    runs::RunSummary stopped = run_all(source, budgets);
    REQUIRE(stopped.jobs.size() == 1);
    CHECK(stopped.jobs[0].stop == StopReason::disk);
    CHECK_FALSE(stopped.jobs[0].target_room);
    REQUIRE(stopped.ended);
    CHECK(stopped.ended->reason == StopReason::disk);
}

TEST_CASE("run_many: a job another archctl drives is skipped here; the others run") {
    ManyJobs jobs(2);
    std::vector<std::string> notices;
    auto held = LockFile::acquire(state::JobStore(jobs.job("first").state).dir_of(jobs.job("first").job_id), "another run", notices);
    REQUIRE(held.ok());
    runs::RunSummary s = run_all(jobs);

    REQUIRE(s.jobs.size() == 2);
    CHECK(s.jobs[0].outcome == JobOutcome::locked);
    CHECK(s.jobs[0].result.error.code == "LOCKED");
    CHECK(s.jobs[0].stop == StopReason::none);
    CHECK(s.jobs[1].outcome == JobOutcome::done);
    CHECK(jobs.job("first").seedbox.ops.count("stage") == 0);
    CHECK_FALSE(s.ended);
    CHECK(s.unfinished());
    CHECK(s.first_failed() == nullptr);
}

TEST_CASE("run_many: a job whose resource fails is recorded; the others run") {
    ManyJobs jobs(3);
    jobs.job("second").seedbox.qb.torrent_list.clear();  // the source torrent is gone
    runs::RunSummary s = run_all(jobs);

    REQUIRE(s.jobs.size() == 3);
    CHECK(s.jobs[0].outcome == JobOutcome::done);
    CHECK(s.jobs[1].outcome == JobOutcome::failed);
    CHECK(s.jobs[1].result.error.code == "STALE_STATE");
    CHECK(s.jobs[2].outcome == JobOutcome::done);
    REQUIRE(s.first_failed() != nullptr);
    CHECK(s.first_failed()->id == "second");
    CHECK(s.count(JobOutcome::failed) == 1);
    CHECK_FALSE(s.ended);
    CHECK_FALSE(s.unfinished());
}

TEST_CASE("run_many: turns settled without a job are passed over; the budgets are checked before each turn is asked") {
    ManyJobs jobs(2);
    jobs::Budgets budgets;
    budgets.max_duration = std::chrono::seconds(60);
    runs::ManyRun run(jobs.runner(), jobs.clock, budgets, jobs.clock.steady());
    std::vector<std::size_t> asked;
    auto job_of = [&](std::size_t turn) -> std::optional<std::string> {
        asked.push_back(turn);
        if (turn == 1) {
            jobs.clock.advance(std::chrono::seconds(61));  // planning the turn took past the deadline
            return std::nullopt;
        }
        return turn == 0 ? jobs.names[0] : jobs.names[1];
    };
    runs::RunSummary s = runs::run_many(run, 3, job_of);
    CHECK(asked == std::vector<std::size_t>{0, 1});
    CHECK(jobs.driven == std::vector<std::string>{"first"});
    REQUIRE(s.ended);
    CHECK(s.ended->reason == StopReason::deadline);
}

TEST_CASE("run_many: every stop but waiting ends the run; no stop has no name") {
    CHECK(std::string(archctl::jobs::to_string(StopReason::none)).empty());
    CHECK_FALSE(runs::ends_run(StopReason::none));
    CHECK_FALSE(runs::ends_run(StopReason::waiting));
    for (auto r : {StopReason::budget, StopReason::deadline, StopReason::disk, StopReason::interrupt}) CHECK(runs::ends_run(r));
}
