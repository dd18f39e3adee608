#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "lib/base/atomic_file.hpp"
#include "lib/base/fs.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
namespace fs = std::filesystem;

static std::string helper() { return std::getenv("ARCHCTL_BASE_HELPER"); }

static size_t temp_files(const fs::path& dir) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
    return n;
}

TEST_CASE("atomic write replaces content and leaves no temp file") {
    test::Scratch s;
    std::string path = (s / "state.json").string();
    REQUIRE(write_file_atomic(path, "old").ok());
    REQUIRE(write_file_atomic(path, "new").ok());
    CHECK(read_file(path).value() == "new");
    CHECK(temp_files(s.path()) == 0);
}

TEST_CASE("an uncommitted atomic file rolls back") {
    test::Scratch s;
    std::string path = (s / "f").string();
    REQUIRE(write_file_atomic(path, "old").ok());
    {
        auto f = AtomicFile::create(path);
        REQUIRE(f.ok());
        REQUIRE(f->write("half").ok());
    }
    CHECK(read_file(path).value() == "old");
    CHECK(temp_files(s.path()) == 0);
}

TEST_CASE("killed at each crash point, the file holds either old or new content") {
    test::Scratch s;
    std::string path = (s / "ledger.json").string();
    for (const char* point : {"atomic.ledger.json.written", "atomic.ledger.json.renamed"}) {
        REQUIRE(write_file_atomic(path, "old").ok());
        auto r = test::run({helper(), "atomic-write", path, "new"}, {std::string("ARCHCTL_TEST_CRASH_AT=") + point});
        CHECK(r.exit_code == 137);
        std::string now = read_file(path).value();
        CHECK((now == "old" || now == "new"));
        if (std::string(point).ends_with("renamed")) CHECK(now == "new");
        else CHECK(now == "old");
    }
    // The crash list names every point a write passes.
    auto listed = test::run({helper(), "atomic-write", path, "x"}, {"ARCHCTL_TEST_CRASH_LIST=1"});
    CHECK(listed.exit_code == 0);
    CHECK(listed.err.find("crash-point atomic.ledger.json.written") != std::string::npos);
    CHECK(listed.err.find("crash-point atomic.ledger.json.renamed") != std::string::npos);
}

TEST_CASE("exclusive create refuses an existing file") {
    test::Scratch s;
    std::string path = (s / "reservation").string();
    REQUIRE(write_file_exclusive(path, "job-1").ok());
    Status again = write_file_exclusive(path, "job-2");
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == "EXISTS");
    CHECK(read_file(path).value() == "job-1");
}

TEST_CASE("make_dirs and parent_dir") {
    test::Scratch s;
    std::string deep = (s / "a/b/c").string();
    REQUIRE(make_dirs(deep).ok());
    CHECK(fs::is_directory(deep));
    CHECK(parent_dir("/a/b") == "/a");
    CHECK(parent_dir("b") == ".");
    CHECK(parent_dir("/b") == "/");
    CHECK(read_file((s / "missing").string()).error().code == "NOT_FOUND");
}
