// The job index: creation order, retiring into the finished log, paging from the log's end,
// removal, rebuilding from the job directories, and a crash at each of its points.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/journal.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/tombstones.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::state;

namespace {

std::string id_of(int i) { return fmt::format("20261201-{:06d}-aaaa", i); }

nlohmann::json row_of(const std::string& id) { return {{"id", id}, {"op", "archive"}, {"state", "done"}, {"status", "done"}}; }

std::vector<std::string> ids(const std::vector<FinishedEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.id);
    return out;
}

// A job with a definition and, when `state` is set, a ledger in that state.
void make_job(JobStore& store, const std::string& id, std::optional<jobs::JobState> state) {
    REQUIRE(store.create(id, {{"id", id}, {"op", "archive"}, {"qb_id", "1838bf9a70c1"}, {"delta_bytes", 1000}}).ok());
    if (!state) return;
    jobs::transfer::Ledger l;
    l.state = *state;
    l.step = *state == jobs::JobState::done ? jobs::transfer::TransferStep::done : jobs::transfer::TransferStep::sync;
    REQUIRE(store.write_ledger(id, l.to_json()).ok());
}

// Run one index operation ("create", "retire" or "remove" of `id`) in a new process that crashes
// at `point` (the crash_point mechanism: ARCHCTL_TEST_CRASH_AT, read once per process, hence the
// exec of this test binary's helper case); returns its exit status.
int crash_in_child(const std::string& point, const std::string& op, const StateDir& dir, const std::string& id) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::setenv("ARCHCTL_TEST_CRASH_AT", point.c_str(), 1);
        ::setenv("ARCHCTL_TEST_INDEX_OP", fmt::format("{}:{}:{}", op, id, dir.root()).c_str(), 1);
        ::execl("/proc/self/exe", "test_job_index", "--test-case=job index crash helper", "--no-skip", static_cast<char*>(nullptr));
        ::_exit(126);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

// Not a test by itself: the operation crash_in_child runs in its own process. Skipped in a normal
// run (reported as skipped, never as a pass); crash_in_child runs it with --no-skip.
TEST_CASE("job index crash helper" * doctest::skip()) {
    const char* spec = std::getenv("ARCHCTL_TEST_INDEX_OP");
    REQUIRE_MESSAGE(spec, "run only by crash_in_child, with ARCHCTL_TEST_INDEX_OP set");
    std::string text(spec);
    auto first = text.find(':'), second = text.find(':', first + 1);
    const std::string op = text.substr(0, first), id = text.substr(first + 1, second - first - 1);
    auto dir = StateDir::open(text.substr(second + 1)).value();
    JobStore store(dir);
    if (op == "create") (void)store.create(id, {{"id", id}});
    if (op == "retire") (void)JobIndex(dir).retire(id, row_of(id), "");
    if (op == "clear") (void)jobs::clear_finished(dir, 30);
    if (op == "remove") {
        auto rows = jobs::summarize_matching(store, id);
        if (rows.ok())
            if (auto row = jobs::find_job(rows.value(), id); row.ok()) (void)jobs::hide_job(dir, *row.value());
    }
}

TEST_CASE("a new job is marked active before its definition; retiring moves it to the finished log") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobStore store(dir);
    JobIndex index(dir);
    for (int i : {3, 1, 2}) REQUIRE(store.create(id_of(i), {{"id", id_of(i)}}).ok());
    CHECK(index.active().value() == std::vector<std::string>{id_of(1), id_of(2), id_of(3)});
    REQUIRE(index.retire(id_of(2), row_of(id_of(2)), "a → b").ok());
    CHECK(index.active().value() == std::vector<std::string>{id_of(1), id_of(3)});
    auto page = index.finished(20).value();
    REQUIRE(page.entries.size() == 1);
    CHECK(page.total == 1);
    CHECK(page.entries[0].id == id_of(2));
    CHECK(page.entries[0].row == row_of(id_of(2)));
    CHECK(page.entries[0].nodes == "a → b");
    // Retiring again (a crash left the marker) adds no second row.
    REQUIRE(index.mark_active(id_of(2)).ok());
    REQUIRE(index.retire(id_of(2), row_of(id_of(2)), "a → b").ok());
    CHECK(index.finished(std::nullopt).value().entries.size() == 1);
    CHECK(index.finished(20).value().total == 1);
}

TEST_CASE("the finished log pages from its end, skips removed jobs and survives a torn last line") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobStore store(dir);
    JobIndex index(dir);
    // Enough rows that the newest 20 sit in the log's last 64 KiB chunk and the rest before it.
    const int n = 300;
    for (int i = 0; i < n; ++i) {
        REQUIRE(store.create(id_of(i), {{"id", id_of(i)}}).ok());
        nlohmann::json row = row_of(id_of(i));
        row["status"] = std::string(400, 'x');
        REQUIRE(index.retire(id_of(i), row, "a → b").ok());
    }
    CHECK(index.active().value().empty());
    auto page = index.finished(20).value();
    CHECK(page.total == n);
    REQUIRE(page.entries.size() == 20);
    CHECK(page.entries.front().id == id_of(n - 20));
    CHECK(page.entries.back().id == id_of(n - 1));
    auto all = index.finished(std::nullopt).value();
    REQUIRE(all.entries.size() == n);
    CHECK(all.entries.front().id == id_of(0));
    CHECK(index.finished(0).value().entries.empty());

    // Removal: records first, then the log line; a job whose directory is gone never shows,
    // with or without its removal line.
    REQUIRE(store.remove(id_of(n - 1)).ok());
    REQUIRE(index.forget(id_of(n - 1), true).ok());
    REQUIRE(store.remove(id_of(n - 2)).ok());  // a crash before forget
    page = index.finished(3).value();
    CHECK(ids(page.entries) == std::vector<std::string>{id_of(n - 5), id_of(n - 4), id_of(n - 3)});
    CHECK(page.total == n - 1);

    // A torn last line (a crash mid-append) is skipped, and the next append starts a new line.
    { std::ofstream(index.log_path(), std::ios::app) << "{\"id\":\"torn"; }
    CHECK(index.finished(1).value().entries.back().id == id_of(n - 3));
    REQUIRE(store.create(id_of(n), {{"id", id_of(n)}}).ok());
    REQUIRE(index.retire(id_of(n), row_of(id_of(n)), "").ok());
    CHECK(index.finished(1).value().entries.back().id == id_of(n));
    CHECK(read_journal(index.log_path(), "finished").ok());

    // Lines that name a resource or an id prefix.
    CHECK(ids(index.finished_matching(id_of(7)).value()) == std::vector<std::string>{id_of(7)});
    CHECK(index.finished_matching("no such text").value().empty());

}

TEST_CASE("the index is rebuilt from the job directories: active, retired, damaged and torn jobs") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobStore store(dir);
    JobIndex index(dir);
    const std::string done = id_of(1), running = id_of(2), failed = id_of(3), cancelled = id_of(4), lost = id_of(5), torn = id_of(6);
    make_job(store, done, jobs::JobState::done);
    make_job(store, running, std::nullopt);
    make_job(store, failed, jobs::JobState::failed);
    make_job(store, cancelled, jobs::JobState::cancelled);
    make_job(store, lost, std::nullopt);
    REQUIRE(store.append_event(lost, "created").ok());
    std::filesystem::remove(store.dir_of(lost) + "/definition.json");
    std::filesystem::create_directories(store.dir_of(torn));  // a crash before the definition
    // An old state directory: no index at all.
    std::filesystem::remove_all(dir.index());
    CHECK_FALSE(index.built());

    auto rows = jobs::summarize_active(store);  // builds it once
    REQUIRE(rows.ok());
    CHECK(index.built());
    std::vector<std::string> listed;
    for (const auto& r : rows.value()) listed.push_back(r.id);
    CHECK(listed == std::vector<std::string>{running, failed, lost});
    CHECK(index.active().value() == std::vector<std::string>{running, failed, lost});
    CHECK(ids(index.finished(std::nullopt).value().entries) == std::vector<std::string>{done, cancelled});
    CHECK(store.damaged().value() == std::vector<std::string>{lost});

    // A run ended a job but crashed before it updated the index: the next reader retires it.
    jobs::transfer::Ledger l;
    l.state = jobs::JobState::done;
    REQUIRE(store.write_ledger(running, l.to_json()).ok());
    rows = jobs::summarize_active(store);
    REQUIRE(rows.ok());
    CHECK(rows->size() == 2);
    CHECK(index.finished(1).value().entries.back().id == running);
    // `status` shows the active jobs and the newest finished ones, read from their directories.
    auto recent = jobs::summarize_recent(store, 1);
    REQUIRE(recent.ok());
    REQUIRE(recent->size() == 3);
    CHECK(recent->at(0).id == running);
    CHECK(recent->at(0).retired);

    // Job id lookups still find a finished job, by a prefix only it has.
    auto matching = jobs::summarize_matching(store, done.substr(0, 17));
    REQUIRE(matching.ok());
    auto found = jobs::find_job(matching.value(), done.substr(0, 17));
    REQUIRE(found.ok());
    CHECK(found.value()->id == done);
    CHECK(found.value()->retired);
    // A job the index lost by hand (its marker gone) is still found by its id: the job
    // directories are listed when no indexed job has it.
    const std::string stray = id_of(7);
    make_job(store, stray, std::nullopt);
    REQUIRE(index.unmark(stray).ok());
    auto strays = jobs::summarize_matching(store, stray);
    REQUIRE(strays.ok());
    CHECK(jobs::find_job(strays.value(), stray).ok());
    REQUIRE(store.remove(stray).ok());

    // `job rm` of a finished job: it never comes back, and a rebuild agrees.
    REQUIRE(jobs::hide_job(dir, *found.value()).ok());
    CHECK(ids(index.finished(std::nullopt).value().entries) == std::vector<std::string>{cancelled, running});
    REQUIRE(jobs::rebuild_job_index(store).ok());  // sorted by id
    CHECK(ids(index.finished(std::nullopt).value().entries) == std::vector<std::string>{running, cancelled});
    CHECK(index.active().value() == std::vector<std::string>{failed, lost});

    // `job clear`: every finished job but none that needs a look.
    auto cleared = jobs::clear_finished(dir, 30);
    REQUIRE(cleared.ok());
    CHECK(cleared->jobs == 3);  // cancelled, running (now done), failed
    CHECK(index.finished(std::nullopt).value().entries.empty());
    CHECK(index.active().value() == std::vector<std::string>{lost});
}

TEST_CASE("a crash at each point of creating, retiring and removing leaves an index readers converge from") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobStore store(dir);
    JobIndex index(dir);
    REQUIRE(jobs::rebuild_job_index(store).ok());
    int i = 100;

    SUBCASE("create") {
        for (const char* point : {"job.index.active", "job.dir_created", "job.defined"}) {
            const std::string id = id_of(++i);
            CHECK(crash_in_child(point, "create", dir, id) == 137);
            // The marker is written first, so a job that got its definition is always active.
            CHECK(index.active().value().back() == id);
            auto rows = jobs::summarize_active(store);
            REQUIRE(rows.ok());
            bool listed = !rows->empty() && rows->back().id == id;
            CHECK(listed == (std::string(point) == "job.defined"));
        }
    }
    SUBCASE("retire") {
        for (const char* point : {"journal.synced", "job.index.retired"}) {
            const std::string id = id_of(++i);
            make_job(store, id, jobs::JobState::done);
            CHECK(crash_in_child(point, "retire", dir, id) == 137);
            CHECK(index.active().value().back() == id);  // both: the marker and the row
            REQUIRE(jobs::summarize_active(store).ok());
            CHECK(index.active().value().empty());
            auto all = index.finished(std::nullopt).value();
            CHECK(ids(all.entries).back() == id);
            auto listed = ids(all.entries);
            CHECK(std::count(listed.begin(), listed.end(), id) == 1);
        }
        CHECK(index.finished(20).value().total == 2);
    }
    SUBCASE("remove") {
        for (const char* point : {"job.removed", "job.index.unmarked"}) {
            const std::string id = id_of(++i);
            make_job(store, id, jobs::JobState::done);
            REQUIRE(jobs::summarize_active(store).ok());  // retires it
            CHECK(crash_in_child(point, "remove", dir, id) == 137);
            CHECK(index.finished(std::nullopt).value().entries.empty());
            CHECK_FALSE(jobs::find_job(jobs::summarize_matching(store, id).value(), id).ok());
        }
    }
}

namespace {

// A finished job as a run leaves it: a definition with its request digest, a done ledger.
void make_done_job(JobStore& store, int i) {
    const std::string id = id_of(i);
    REQUIRE(store.create(id, {{"id", id}, {"op", "archive"}, {"qb_id", "1838bf9a70c1"}, {"request_digest", fmt::format("req-{}", i)}}).ok());
    jobs::transfer::Ledger l;
    l.state = jobs::JobState::done;
    l.step = jobs::transfer::TransferStep::done;
    REQUIRE(store.write_ledger(id, l.to_json()).ok());
}

// The job ids of every tombstone, sorted, once each.
std::vector<std::string> tombstoned(const StateDir& dir) {
    std::vector<std::string> out;
    const auto all = read_tombstones(dir);
    REQUIRE(all.ok());
    for (const auto& t : all.value()) out.push_back(t.job_id);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<std::string> streamed_ids(const StateDir& dir) {
    std::vector<std::string> out;
    auto stream = JobIndex(dir).finished_stream();
    REQUIRE(stream.ok());
    REQUIRE(stream->each([&](const FinishedEntry& e) {
        out.push_back(e.id);
        return Status{};
    }).ok());
    return out;
}

}  // namespace

TEST_CASE("job clear hides every finished job at once: one tombstone batch, the directories, an empty log") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobStore store(dir);
    JobIndex index(dir);
    REQUIRE(jobs::rebuild_job_index(store).ok());
    std::vector<std::string> done;
    for (int i : {5, 1, 4, 2, 3}) make_done_job(store, i);  // retired out of id order
    REQUIRE(jobs::summarize_active(store).ok());
    for (int i = 1; i <= 5; ++i) done.push_back(id_of(i));
    make_job(store, id_of(6), jobs::JobState::failed);   // an active job that ended: hidden too
    make_job(store, id_of(7), jobs::JobState::running);  // still running: stays
    done.push_back(id_of(6));
    CHECK(streamed_ids(dir) == std::vector<std::string>{id_of(1), id_of(2), id_of(3), id_of(4), id_of(5)});

    auto cleared = jobs::clear_finished(dir, 30);
    REQUIRE(cleared.ok());
    CHECK(cleared->jobs == 6);
    CHECK(streamed_ids(dir).empty());
    CHECK(index.finished(std::nullopt).value().entries.empty());
    for (const auto& id : done) CHECK_FALSE(path_exists(dir.job(id)));
    CHECK(path_exists(dir.job(id_of(7))));
    auto active = jobs::summarize_active(store).value();
    REQUIRE(active.size() == 1);
    CHECK(active[0].id == id_of(7));
    // A tombstone for each, with the digest of its request and its outcome.
    CHECK(tombstoned(dir) == done);
    const auto stones = read_tombstones(dir);
    REQUIRE(stones.ok());
    for (const auto& t : stones.value()) {
        if (t.job_id == id_of(6)) continue;
        CHECK(t.request_digest == "req-" + std::to_string(std::stoi(t.job_id.substr(9, 6))));
        CHECK(t.outcome == "done");
        CHECK_FALSE(t.hidden_at.empty());
    }
    // A cleared job is no longer found; a second clear finds nothing.
    CHECK_FALSE(jobs::find_job(jobs::summarize_matching(store, id_of(3)).value(), id_of(3)).ok());
    CHECK(jobs::clear_finished(dir, 30).value().jobs == 0);
}

TEST_CASE("a crash at each point of job clear leaves a state a rerun completes") {
    for (const char* point : {"tombstones.batch", "job.store.removed:1", "job.store.removed:4", "job.clear.removed",
                              "atomic.finished.jsonl.written", "job.index.cleared"}) {
        CAPTURE(point);
        test::Scratch s;
        auto dir = StateDir::open((s / "state").string()).value();
        JobStore store(dir);
        JobIndex index(dir);
        REQUIRE(jobs::rebuild_job_index(store).ok());
        std::vector<std::string> done;
        for (int i = 1; i <= 6; ++i) {
            make_done_job(store, i);
            done.push_back(id_of(i));
        }
        REQUIRE(jobs::summarize_active(store).ok());
        REQUIRE(streamed_ids(dir) == done);

        CHECK(crash_in_child(point, "clear", dir, "") == 137);
        // What is listed is exactly the jobs whose records are still there.
        std::vector<std::string> left;
        for (const auto& id : done)
            if (path_exists(dir.job(id))) left.push_back(id);
        CHECK(streamed_ids(dir) == left);
        CHECK(ids(index.finished(std::nullopt).value().entries) == left);
        // Every job whose records went has its tombstone.
        auto stones = tombstoned(dir);
        for (const auto& id : done)
            if (!path_exists(dir.job(id))) CHECK(std::binary_search(stones.begin(), stones.end(), id));

        auto rerun = jobs::clear_finished(dir, 30);
        REQUIRE(rerun.ok());
        CHECK(rerun->jobs == left.size());
        CHECK(streamed_ids(dir).empty());
        for (const auto& id : done) CHECK_FALSE(path_exists(dir.job(id)));
        CHECK(tombstoned(dir) == done);
        CHECK(read_journal(index.log_path(), "finished").ok());
    }
}
