// Job ids like git (a prefix only one job has; an ambiguous one refused with its candidates) and
// what `status` says of each job: the pid driving it, its percent, the commands that resolve it.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include "lib/base/lock_file.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/state/job_store.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::report;
using namespace archctl::jobs::transfer;

namespace {

JobSummary row(const std::string& id, const std::string& op, const std::string& qb_id) {
    JobSummary r;
    r.id = id;
    r.definition = {{"id", id}, {"op", op}, {"qb_id", qb_id}, {"name", "pay"}};
    return r;
}

}  // namespace

TEST_CASE("find_job takes a full id or a prefix only one job has, and refuses an ambiguous prefix with its candidates") {
    const std::vector<JobSummary> rows = {row("20261202-050101-aaaa", "archive", "1838bf9a70c1ffff"),
                                          row("20261202-050202-bbbb", "evict", "9f00c2d41e77ffff"),
                                          row("20261202-060303-cccc", "archive", "1838bf9a70c1ffff")};
    auto full = find_job(rows, "20261202-050202-bbbb");
    REQUIRE(full.ok());
    CHECK(full.value()->id == "20261202-050202-bbbb");
    auto unique = find_job(rows, "20261202-06");
    REQUIRE(unique.ok());
    CHECK(unique.value()->id == "20261202-060303-cccc");

    auto ambiguous = find_job(rows, "20261202-05");
    REQUIRE_FALSE(ambiguous.ok());
    CHECK(ambiguous.error().is(ErrorCode::AMBIGUOUS));
    CHECK(ambiguous.error().message ==
          "job id '20261202-05' is ambiguous: it matches 2 jobs:\n"
          "  20261202-050101-aaaa  archive 1838bf9a70c1 \"pay\"\n"
          "  20261202-050202-bbbb  evict 9f00c2d41e77 \"pay\"");
    CHECK(ambiguous.error().hint == "give more characters of the id");

    auto none = find_job(rows, "20261203");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().is(ErrorCode::NOT_FOUND));
    CHECK(none.error().message == "no job '20261203'");
    // Shorter than 8 characters: only a full id counts.
    auto short_prefix = find_job(rows, "2026");
    REQUIRE_FALSE(short_prefix.ok());
    CHECK(short_prefix.error().is(ErrorCode::NOT_FOUND));
}

TEST_CASE("status says who drives a job, its percent, and the commands that resolve a job nothing drives") {
    test::Scratch scratch;
    auto dir = state::StateDir::open((scratch / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    const std::string failed = "20261201-000001-aaaa", stopped = "20261201-000002-bbbb", running = "20261201-000003-cccc";
    for (const auto& id : {failed, stopped, running})
        REQUIRE(store.create(id, {{"id", id}, {"op", "archive"}, {"qb_id", "1838bf9a70c1"}, {"delta_bytes", 1000}}).ok());
    Ledger l;
    l.state = JobState::failed;
    l.failure = {{"code", "RECHECK_FAILED"}, {"message", "the recheck failed"}};
    REQUIRE(store.write_ledger(failed, l.to_json()).ok());
    Ledger s;
    s.step = TransferStep::sync;
    s.bytes_present = 250;
    REQUIRE(store.write_ledger(stopped, s.to_json()).ok());
    REQUIRE(store.write_ledger(running, s.to_json()).ok());
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(running), "archive 1838bf9a70c1", notices);
    REQUIRE(lock.ok());

    auto rows = summarize_jobs(store);
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 3);
    const JobActivity f = activity_of(dir.value(), (*rows)[0]);
    CHECK_FALSE(f.running());
    CHECK(f.resolve == std::vector<std::string>{"archctl job show " + failed, "archctl job rm " + failed});
    CHECK(f.why == "failed");

    const JobActivity st = activity_of(dir.value(), (*rows)[1]);
    CHECK_FALSE(st.running());
    CHECK(st.resolve == std::vector<std::string>{"archctl resume " + stopped, "archctl job cancel " + stopped});
    REQUIRE(st.percent);
    CHECK(*st.percent == doctest::Approx(25.0));

    const JobActivity r = activity_of(dir.value(), (*rows)[2]);
    REQUIRE(r.running());
    CHECK(r.driver->pid == ::getpid());
    CHECK(r.resolve.empty());
    CHECK(r.step == "sync");
    CHECK((r.bytes_done == 250 && r.bytes_total == 1000));
    nlohmann::json j = r.to_json();
    CHECK(j["driver"]["pid"] == ::getpid());
    CHECK(j["percent"] == 25.0);

    CHECK(driven_elsewhere(dir.value(), running) == fmt::format("job {} is being driven by another archctl (pid {})", running, ::getpid()));
    lock.value().release();
    CHECK(driven_elsewhere(dir.value(), running) == fmt::format("job {} is being driven by another archctl", running));
    CHECK_FALSE(activity_of(dir.value(), (*rows)[2]).running());
}

// A job waiting for room on its target (docs/design.md "A job that cannot land") is not a job
// that needs a person: status says what it waits for, since when, and that the next run (or a
// resume) undoes and releases it after the bound, not "needs attention … archctl resume ID".
TEST_CASE("status: a job waiting for room on its target says what it waits for, since when, and when a run releases it") {
    test::Scratch scratch;
    auto dir = state::StateDir::open((scratch / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    const std::string id = "20261201-000004-dddd";
    REQUIRE(store.create(id, {{"id", id}, {"op", "archive"}, {"qb_id", "1838bf9a70c1"}, {"delta_bytes", 1000}}).ok());
    Ledger l;
    l.step = TransferStep::sync;
    l.target_blocked = TargetBlocked{"archive1", "2026-12-01T18:34:12Z", 2,
                                     "destination free space fell below the floor (0 B free < 4.0 MiB floor)"};
    REQUIRE(store.write_ledger(id, l.to_json()).ok());
    auto rows = summarize_jobs(store);
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 1);
    const JobActivity a = activity_of(dir.value(), rows->front());
    CHECK_FALSE(a.running());
    CHECK_FALSE(a.needs_action());
    REQUIRE(a.waiting);
    CHECK(a.waiting->node == "archive1");
    CHECK(a.waiting->release_from == "2026-12-02T18:34:12Z");
    CHECK(a.why ==
          "waiting for room on 'archive1' since 2026-12-01T18:34:12Z (2 runs ended on it): destination free space fell below the floor "
          "(0 B free < 4.0 MiB floor); the first run from 2026-12-02T18:34:12Z on, once 3 runs have ended on it (the next one from "
          "cron, or 'archctl resume 20261201-000004-dddd'), undoes and releases it (staging removed, reservation freed) so it can go "
          "to another node");
    const nlohmann::json j = a.to_json();
    CHECK(j["waiting_for_room"]["since"] == "2026-12-01T18:34:12Z");
    CHECK(j["waiting_for_room"]["release_runs"] == 3);
    CHECK(j["resolve"].empty());
}
