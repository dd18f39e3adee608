#include <doctest/doctest.h>

#include "lib/base/process.hpp"

using namespace archctl;

TEST_CASE("run_capture passes stdin and collects stdout, stderr and the exit code") {
    auto r = run_capture({"sh", "-c", "cat; echo err >&2; exit 3"}, "hello");
    REQUIRE(r.ok());
    CHECK(r->out == "hello");
    CHECK(r->err == "err\n");
    CHECK(r->exit_code == 3);
}

TEST_CASE("spawning a missing program is an error value") {
    auto r = run_capture({"/nonexistent/program"});
    // posix_spawnp reports exec failure either as an error or as exit 127.
    CHECK((!r.ok() || r->exit_code == 127));
}
