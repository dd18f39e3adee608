#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/process.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;

static std::string lock_helper() { return std::getenv("ARCHCTL_BASE_HELPER"); }

static std::string read_line(int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
}

TEST_CASE("a live holder in another process refuses with its pid and host") {
    test::Scratch s;
    auto holder = Subprocess::spawn({lock_helper(), "lock-hold", s.path().string()});
    REQUIRE(holder.ok());
    REQUIRE(read_line(holder->stdout_fd()) == "locked");
    std::vector<std::string> notices;
    auto mine = LockFile::acquire(s.path().string(), "me", notices);
    REQUIRE_FALSE(mine.ok());
    CHECK(mine.error().code == "LOCKED");
    CHECK(mine.error().message.find(std::to_string(holder->pid())) != std::string::npos);
    CHECK(mine.error().message.find(host_name()) != std::string::npos);
    holder->close_stdin();
    CHECK(holder->wait() == 0);
    // Released on exit: now it is free.
    auto after = LockFile::acquire(s.path().string(), "me", notices);
    CHECK(after.ok());
    CHECK(notices.empty());
}

TEST_CASE("a lock whose process died is stale and reclaimed with a notice") {
    test::Scratch s;
    auto holder = Subprocess::spawn({lock_helper(), "lock-hold", s.path().string()});
    REQUIRE(read_line(holder->stdout_fd()) == "locked");
    ::kill(static_cast<pid_t>(holder->pid()), SIGKILL);
    holder->wait();
    REQUIRE(path_exists((s / "lock").string()));
    std::vector<std::string> notices;
    auto mine = LockFile::acquire(s.path().string(), "me", notices);
    REQUIRE(mine.ok());
    REQUIRE(notices.size() == 1);
    CHECK(notices[0].find("process is gone") != std::string::npos);
}

static void write_record(const test::Scratch& s, nlohmann::json rec) {
    REQUIRE(write_file_atomic((s / "lock").string(), rec.dump()).ok());
}

static nlohmann::json record_for(const test::Scratch& s, long pid, std::uint64_t start, const std::string& host) {
    struct stat st {};
    ::stat(s.path().c_str(), &st);
    return {{"pid", pid}, {"start_time", start}, {"host", host}, {"started_at", "2026-12-01T18:34:00Z"},
            {"dev", st.st_dev}, {"ino", st.st_ino}};
}

TEST_CASE("a live pid with a different start time is a reused pid: stale") {
    test::Scratch s;
    long me = ::getpid();
    write_record(s, record_for(s, me, process_start_time(me) + 12345, host_name()));
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(s.path().string(), "me", notices);
    CHECK(lock.ok());
    CHECK(notices.size() == 1);
}

TEST_CASE("a lock from another host is never judged by pid") {
    test::Scratch s;
    write_record(s, record_for(s, 999999, 1, "some-other-host"));
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(s.path().string(), "me", notices);
    REQUIRE_FALSE(lock.ok());
    CHECK(lock.error().code == "LOCKED");
    CHECK(lock.error().message.find("some-other-host") != std::string::npos);
    CHECK(lock.error().hint.find("another host") != std::string::npos);
}

TEST_CASE("a lock copied with its directory (other dev/inode) is reclaimed") {
    test::Scratch s;
    auto rec = record_for(s, 999999, 1, "some-other-host");
    rec["ino"] = rec["ino"].get<std::uint64_t>() + 1;
    write_record(s, rec);
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(s.path().string(), "me", notices);
    REQUIRE(lock.ok());
    REQUIRE(notices.size() == 1);
    CHECK(notices[0].find("copied or moved") != std::string::npos);
}

TEST_CASE("release removes the lock file; read() reports the holder") {
    test::Scratch s;
    std::vector<std::string> notices;
    {
        auto lock = LockFile::acquire(s.path().string(), "archive 1838bf9a70c1", notices);
        REQUIRE(lock.ok());
        auto rec = LockFile::read(s.path().string());
        REQUIRE(rec.ok());
        CHECK(rec->pid == ::getpid());
        CHECK(rec->purpose == "archive 1838bf9a70c1");
    }
    CHECK_FALSE(path_exists((s / "lock").string()));
}

TEST_CASE("lock_holder_alive: this process on this host, with its start time") {
    LockRecord r;
    r.pid = static_cast<long>(::getpid());
    r.start_time = process_start_time(r.pid);
    r.host = host_name();
    REQUIRE(r.start_time != 0);
    CHECK(lock_holder_alive(r));

    LockRecord reused = r;  // the same pid started at another time: not the holder
    reused.start_time = r.start_time + 1;
    CHECK_FALSE(lock_holder_alive(reused));

    LockRecord foreign = r;  // never judged by pid on another host
    foreign.host = r.host + "-elsewhere";
    CHECK_FALSE(lock_holder_alive(foreign));

    LockRecord dead = r;  // no such process: a recorded start time of 0 does not match it
    dead.pid = 0;
    dead.start_time = 0;
    CHECK_FALSE(lock_holder_alive(dead));
}
