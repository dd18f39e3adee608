#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "lib/base/fs.hpp"
#include "lib/base/journal.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;

TEST_CASE("journal appends records after a version line") {
    test::Scratch s;
    std::string path = (s / "stage.jsonl").string();
    {
        auto w = JournalWriter::open(path, "stage", 1);
        REQUIRE(w.ok());
        REQUIRE(w->append({{"index", 0}}).ok());
        REQUIRE(w->append({{"index", 1}}).ok());
    }
    {
        auto w = JournalWriter::open(path, "stage", 1, SyncPolicy::batched, 8);  // reopen appends
        REQUIRE(w->append({{"index", 2}}).ok());
    }
    auto c = read_journal(path, "stage");
    REQUIRE(c.ok());
    CHECK(c->version == 1);
    REQUIRE(c->records.size() == 3);
    CHECK(c->records[2]["index"] == 2);
    CHECK(c->warnings.empty());
    CHECK(read_file(path).value().rfind("{\"journal\":\"stage\",\"version\":1}\n", 0) == 0);
}

TEST_CASE("a torn last line is dropped with a warning") {
    test::Scratch s;
    std::string path = (s / "j.jsonl").string();
    {
        auto w = JournalWriter::open(path, "j", 1);
        REQUIRE(w->append({{"a", 1}}).ok());
    }
    {
        std::ofstream f(path, std::ios::app);
        f << "{\"a\":2";  // crash mid-append
    }
    auto c = read_journal(path, "j");
    REQUIRE(c.ok());
    CHECK(c->records.size() == 1);
    REQUIRE(c->warnings.size() == 1);
    CHECK(c->warnings[0].find("torn") != std::string::npos);
    // A complete JSON object without its newline is torn too: only a newline ends a record.
    {
        std::ofstream f(path, std::ios::trunc);
        f << "{\"journal\":\"j\",\"version\":1}\n{\"a\":1}\n{\"a\":2}";
    }
    CHECK(read_journal(path, "j")->records.size() == 1);
}

TEST_CASE("appending after a torn last line cuts it off first, so every record stays readable") {
    test::Scratch s;
    std::string path = (s / "j.jsonl").string();
    {
        auto w = JournalWriter::open(path, "j", 1);
        REQUIRE(w->append({{"a", 1}}).ok());
    }
    {
        std::ofstream f(path, std::ios::app);
        f << "{\"a\":2, \"torn";  // crash mid-append
    }
    {
        auto w = JournalWriter::open(path, "j", 1);
        REQUIRE(w.ok());
        REQUIRE(w->append({{"a", 3}}).ok());
    }
    auto c = read_journal(path, "j");
    REQUIRE(c.ok());
    REQUIRE(c->records.size() == 2);
    CHECK(c->records[0]["a"] == 1);
    CHECK(c->records[1]["a"] == 3);
    CHECK(c->warnings.empty());
    // A torn version line (nothing complete at all) starts the journal again.
    std::string bare = s.write("b.jsonl", "{\"journal\":\"j\",\"ver").string();
    {
        auto w = JournalWriter::open(bare, "j", 1);
        REQUIRE(w.ok());
        REQUIRE(w->append({{"b", 1}}).ok());
    }
    auto b = read_journal(bare, "j");
    REQUIRE(b.ok());
    CHECK(b->version == 1);
    CHECK(b->records.size() == 1);
}

TEST_CASE("corruption before the last line is an error, not a silent drop") {
    test::Scratch s;
    std::string path = s.write("j.jsonl", "{\"journal\":\"j\",\"version\":1}\nnot json\n{\"a\":1}\n").string();
    auto c = read_journal(path, "j");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == "CORRUPT");
    std::string other = s.write("k.jsonl", "{\"journal\":\"other\",\"version\":1}\n").string();
    CHECK(read_journal(other, "j").error().code == "CORRUPT");
}

TEST_CASE("records survive a kill between appends") {
    test::Scratch s;
    std::string path = (s / "k.jsonl").string();
    auto r = test::run({std::getenv("ARCHCTL_BASE_HELPER"), "journal-append", path, "5"},
                       {"ARCHCTL_TEST_CRASH_AT=journal.synced:3"});
    CHECK(r.exit_code == 137);
    auto c = read_journal(path, "test");
    REQUIRE(c.ok());
    CHECK(c->records.size() == 3);
}

TEST_CASE("a buffered journal writes each batch with one write, and flush writes the rest") {
    test::Scratch s;
    std::string path = (s / "b.jsonl").string();
    auto w = JournalWriter::open(path, "b", 1, SyncPolicy::buffered, 3);
    REQUIRE(w.ok());
    auto size = [&] { return read_file(path).value().size(); };
    std::size_t header = size();
    REQUIRE(w->append({{"i", 0}}).ok());
    REQUIRE(w->append_line(R"({"i":1})").ok());
    CHECK(size() == header);  // nothing written before the batch fills
    REQUIRE(w->append({{"i", 2}}).ok());
    CHECK(size() == header + 3 * std::string(R"({"i":0})" "\n").size());
    REQUIRE(w->append_line(R"({"i":3})").ok());
    CHECK(read_journal(path, "b")->records.size() == 3);
    REQUIRE(w->flush().ok());
    auto c = read_journal(path, "b");
    REQUIRE(c->records.size() == 4);
    CHECK(c->records[3]["i"] == 3);
    CHECK(c->warnings.empty());
}

TEST_CASE("a buffered journal writes what it holds when it goes away") {
    test::Scratch s;
    std::string path = (s / "b.jsonl").string();
    {
        auto w = JournalWriter::open(path, "b", 1, SyncPolicy::buffered, 100);
        REQUIRE(w->append_line(R"({"i":7})").ok());
    }
    auto c = read_journal(path, "b");
    REQUIRE(c->records.size() == 1);
    CHECK(c->records[0]["i"] == 7);
}
