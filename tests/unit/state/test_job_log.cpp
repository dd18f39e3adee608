// The finished-job log searched for an id or resource prefix (JobIndex::finished_matching): it
// reads the log forward in 1 MiB chunks, so lines across a chunk's end, a line longer than a
// chunk, several hits in one line, removals and a torn last line are each checked here. And the
// log rewritten by a streaming rebuild (JobIndex::begin_rebuild), a megabyte at a time.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

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
