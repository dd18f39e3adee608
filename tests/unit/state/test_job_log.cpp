// The finished-job log searched for an id or resource prefix (JobIndex::finished_matching): it
// reads the log forward in 1 MiB chunks, so lines across a chunk's end, a line longer than a
// chunk, several hits in one line, removals and a torn last line are each checked here. And the
// log rewritten by a streaming rebuild (JobIndex::begin_rebuild), a megabyte at a time.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/base/journal.hpp"
#include "lib/state/job_index.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::state;

namespace {

std::string log_id(int i) { return fmt::format("20261202-{:06d}-bbbb", i); }

std::vector<std::string> ids_of(const std::vector<FinishedEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.id);
    return out;
}

// A finished entry whose row names `resource` and is padded to about `size` bytes.
FinishedEntry entry(const std::string& id, const std::string& resource, std::size_t size = 500) {
    return {id, {{"id", id}, {"op", "archive"}, {"resource", resource}, {"status", std::string(size, 'x')}}, "cache1 → archive1"};
}

}  // namespace

TEST_CASE("the finished log is searched across 1 MiB chunks: every matching line once, oldest first") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    // 400 rows of about 7 KB: the log spans two chunk ends, each inside some line (few rows, as
    // each needs a job directory).
    const int n = 400;
    std::vector<FinishedEntry> rows;
    std::vector<std::string> all;
    for (int i = 0; i < n; ++i) {
        std::filesystem::create_directories(dir.job(log_id(i)));
        // Every third row names resource "aaaa…" twice (in its row and, padded, its status).
        rows.push_back(entry(log_id(i), i % 3 == 0 ? "aaaa1111" : "cccc2222", 7000));
        if (i % 3 == 0) rows.back().row["status"] = "see aaaa1111 " + std::string(7000, 'x');
        all.push_back(log_id(i));
    }
    REQUIRE(index.rebuild({}, rows).ok());
    REQUIRE(std::filesystem::file_size(index.log_path()) > 2 * 1024 * 1024);

    CHECK(ids_of(index.finished_matching("20261202-").value()) == all);
    std::vector<std::string> thirds;
    for (int i = 0; i < n; i += 3) thirds.push_back(log_id(i));
    CHECK(ids_of(index.finished_matching("aaaa1111").value()) == thirds);
    CHECK(ids_of(index.finished_matching(log_id(347)).value()) == std::vector<std::string>{log_id(347)});
    CHECK(index.finished_matching("no such text").value().empty());
    CHECK(index.finished_matching("").value().empty());

    // A removal line drops the row even when the needle is a resource the line does not name,
    // and even while the job's directory is still there.
    REQUIRE(index.forget(log_id(3), true).ok());
    auto after = ids_of(index.finished_matching("aaaa1111").value());
    CHECK(after.size() == thirds.size() - 1);
    CHECK(std::find(after.begin(), after.end(), log_id(3)) == after.end());

    // A row longer than a chunk is found whole.
    const std::string big = log_id(n);
    std::filesystem::create_directories(dir.job(big));
    REQUIRE(index.retire(big, entry(big, "dddd3333", 1536 * 1024).row, "").ok());
    auto found = index.finished_matching("dddd3333").value();
    REQUIRE(found.size() == 1);
    CHECK(found[0].id == big);
    CHECK(found[0].row["status"].get<std::string>().size() == 1536 * 1024);

    // A torn last line (a crash mid-append) is never a match.
    { std::ofstream(index.log_path(), std::ios::app) << "{\"n\":1,\"id\":\"" << log_id(n + 1) << "\",\"row\":{\"resource\":\"eeee"; }
    std::filesystem::create_directories(dir.job(log_id(n + 1)));
    CHECK(index.finished_matching("eeee").value().empty());
    CHECK(ids_of(index.finished_matching(log_id(n - 1)).value()) == std::vector<std::string>{log_id(n - 1)});
}

TEST_CASE("the finished log's search: a missing log has no lines") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    auto found = JobIndex(dir).finished_matching("20261202-");
    REQUIRE(found.ok());
    CHECK(found->empty());
}

TEST_CASE("a rebuild streams the finished log: rows in id order, nothing visible before commit") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    for (int i = 0; i < 6; ++i) std::filesystem::create_directories(dir.job(log_id(i)));
    REQUIRE(index.rebuild({}, {entry(log_id(0), "aaaa1111")}).ok());
    REQUIRE(index.mark_active(log_id(2)).ok());  // a job that ended while the index lagged
    REQUIRE(index.mark_active(log_id(5)).ok());  // a torn create: neither active nor finished

    {
        // Dropped uncommitted (a crash, or an error on the way): the old log stays whole.
        auto r = index.begin_rebuild();
        REQUIRE(r.ok());
        REQUIRE(r->add_finished(entry(log_id(1), "cccc2222")).ok());
    }
    CHECK(ids_of(index.finished(std::nullopt).value().entries) == std::vector<std::string>{log_id(0)});

    {
        auto r = index.begin_rebuild();
        REQUIRE(r.ok());
        REQUIRE(r->add_active(log_id(4)).ok());
        for (int i = 1; i <= 3; ++i) REQUIRE(r->add_finished(entry(log_id(i), "cccc2222", 1000)).ok());
        // Out of id order is refused and leaves what was added.
        auto late = r->add_finished(entry(log_id(0), "cccc2222"));
        CHECK(late.error().is(ErrorCode::BAD_VALUE));
        CHECK(late.error().message.find(log_id(0)) != std::string::npos);
        CHECK_FALSE(r->add_finished(entry(log_id(3), "cccc2222")).ok());  // nor twice
        REQUIRE(r->commit().ok());
    }
    auto all = index.finished(std::nullopt).value();
    CHECK(ids_of(all.entries) == std::vector<std::string>{log_id(1), log_id(2), log_id(3)});
    CHECK(index.finished(1).value().total == 3);
    CHECK(all.entries[1].row["resource"] == "cccc2222");
    // The finished job's marker went; the active one and the torn create's stay.
    CHECK(index.active().value() == std::vector<std::string>{log_id(4), log_id(5)});
    CHECK(index.built());
}

TEST_CASE("a rebuild of many rows writes every row once, in order") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    const int n = 300;  // about 3 MB: several flushes
    auto r = index.begin_rebuild();
    REQUIRE(r.ok());
    std::vector<std::string> all;
    for (int i = 0; i < n; ++i) {
        std::filesystem::create_directories(dir.job(log_id(i)));
        REQUIRE(r->add_finished(entry(log_id(i), "cccc2222", 10000)).ok());
        all.push_back(log_id(i));
    }
    REQUIRE(r->commit().ok());
    auto page = index.finished(std::nullopt).value();
    CHECK(ids_of(page.entries) == all);
    CHECK(index.finished(5).value().total == n);
}

namespace {

// Every row a stream yields, in order.
std::vector<FinishedEntry> streamed(FinishedStream& stream) {
    std::vector<FinishedEntry> out;
    REQUIRE(stream.each([&](const FinishedEntry& e) {
        out.push_back(e);
        return Status{};
    }).ok());
    return out;
}

// The rows finished() reads backwards, in id order: what `job list --all` showed before it streamed.
std::vector<FinishedEntry> by_id(std::vector<FinishedEntry> entries) {
    std::sort(entries.begin(), entries.end(), [](const FinishedEntry& a, const FinishedEntry& b) { return a.id < b.id; });
    return entries;
}

void check_same(const std::vector<FinishedEntry>& got, const std::vector<FinishedEntry>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].id == want[i].id);
        CHECK(got[i].row == want[i].row);
        CHECK(got[i].nodes == want[i].nodes);
    }
}

}  // namespace

TEST_CASE("the finished log streams in id order: the rows finished() reads, out-of-order, repeated and removed ones too") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    // 300 rows of about 5 KB (the log spans a chunk's end), rebuilt in order, then jobs that ended
    // out of id order appended as retire() appends them.
    const int n = 600;
    std::vector<FinishedEntry> rows;
    for (int i = 0; i < n; i += 2) {
        std::filesystem::create_directories(dir.job(log_id(i)));
        rows.push_back(entry(log_id(i), "cccc2222", 5000));
    }
    REQUIRE(index.rebuild({}, rows).ok());
    for (int i : {599, 1, 301, 7, 5, 3, 601, 9}) {  // older ids ending after newer ones
        std::filesystem::create_directories(dir.job(log_id(i)));
        REQUIRE(index.retire(log_id(i), entry(log_id(i), "dddd3333", 5000).row, "x → y").ok());
    }
    // A row written twice (the newer one counts), a removed job, a job whose directory is gone,
    // a job removed and retired again, and a torn last line.
    { std::ofstream(index.log_path(), std::ios::app) << nlohmann::json{{"n", 1}, {"id", log_id(10)}, {"row", {{"id", log_id(10)}, {"op", "again"}}}, {"nodes", "z"}}.dump() << "\n"; }
    REQUIRE(index.forget(log_id(20), true).ok());
    std::filesystem::remove_all(dir.job(log_id(30)));
    REQUIRE(index.forget(log_id(40), true).ok());
    REQUIRE(index.retire(log_id(40), entry(log_id(40), "eeee4444").row, "back").ok());
    { std::ofstream(index.log_path(), std::ios::app) << "{\"id\":\"" << log_id(700) << "\",\"n\":"; }
    REQUIRE(std::filesystem::file_size(index.log_path()) > 1024 * 1024);

    const auto want = by_id(index.finished(std::nullopt).value().entries);
    auto stream = index.finished_stream();
    REQUIRE(stream.ok());
    const auto got = streamed(stream.value());
    check_same(got, want);
    CHECK(got.size() == static_cast<std::size_t>(n / 2 + 8 - 2));
    for (std::size_t i = 1; i < got.size(); ++i) CHECK(got[i - 1].id < got[i].id);
    const auto ten = std::find_if(got.begin(), got.end(), [](const FinishedEntry& e) { return e.id == log_id(10); });
    REQUIRE(ten != got.end());
    CHECK(ten->row["op"] == "again");
    CHECK(ten->nodes == "z");
    // Only the rows out of order are held: 6 late ids, the repeated row, the retire after a removal.
    CHECK(stream->out_of_order() == 8);

    // A later pass yields the same rows, even when a job directory went in between, and reads
    // the log as it was: a job retired since is not in it.
    std::filesystem::remove_all(dir.job(log_id(100)));
    std::filesystem::create_directories(dir.job(log_id(900)));
    REQUIRE(index.retire(log_id(900), entry(log_id(900), "ffff").row, "").ok());
    check_same(streamed(stream.value()), want);
    // A new stream sees both.
    auto again = index.finished_stream();
    REQUIRE(again.ok());
    const auto now = streamed(again.value());
    CHECK(now.size() == want.size());
    CHECK(now.back().id == log_id(900));
    check_same(now, by_id(index.finished(std::nullopt).value().entries));
}

TEST_CASE("the finished log's stream: a missing or empty log has no rows, an error from the reader stops it") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    auto none = index.finished_stream();
    REQUIRE(none.ok());
    CHECK(streamed(none.value()).empty());
    for (int i = 0; i < 3; ++i) std::filesystem::create_directories(dir.job(log_id(i)));
    REQUIRE(index.rebuild({}, {entry(log_id(0), "a"), entry(log_id(1), "b"), entry(log_id(2), "c")}).ok());
    auto stream = index.finished_stream();
    REQUIRE(stream.ok());
    int seen = 0;
    Status s2 = stream->each([&](const FinishedEntry&) { return ++seen == 2 ? Status(Error(ErrorCode::IO, "stop")) : Status{}; });
    CHECK(seen == 2);
    REQUIRE_FALSE(s2.ok());
    CHECK(s2.error().message == "stop");
}

TEST_CASE("job clear's log: a job that ends while the clear runs stays, and a log a rebuild replaced is kept") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    JobIndex index(dir);
    for (int i = 0; i < 4; ++i) std::filesystem::create_directories(dir.job(log_id(i)));
    REQUIRE(index.rebuild({}, {entry(log_id(0), "a"), entry(log_id(1), "b")}).ok());

    SUBCASE("a job retired meanwhile") {
        auto clear = index.begin_clear();
        REQUIRE(clear.ok());
        REQUIRE(index.retire(log_id(2), entry(log_id(2), "c").row, "x").ok());  // does not wait for the clear
        REQUIRE(index.forget(log_id(2), true).ok());
        REQUIRE(index.retire(log_id(3), entry(log_id(3), "d").row, "y").ok());
        std::vector<std::string> seen;
        REQUIRE(clear->stream().each([&](const FinishedEntry& e) {
            seen.push_back(e.id);
            return Status{};
        }).ok());
        CHECK(seen == std::vector<std::string>{log_id(0), log_id(1)});
        REQUIRE(clear->commit().ok());
        auto page = index.finished(20).value();
        CHECK(ids_of(page.entries) == std::vector<std::string>{log_id(3)});
        CHECK(page.total == 1);
        CHECK(read_journal(index.log_path(), "finished").ok());
    }
    SUBCASE("a rebuild meanwhile") {
        auto clear = index.begin_clear();
        REQUIRE(clear.ok());
        REQUIRE(index.rebuild({}, {entry(log_id(0), "a"), entry(log_id(3), "d")}).ok());
        std::filesystem::remove_all(dir.job(log_id(0)));  // the clear removed it
        REQUIRE(clear->commit().ok());
        CHECK(ids_of(index.finished(std::nullopt).value().entries) == std::vector<std::string>{log_id(3)});
    }
}
