// What a stop is called: the signal that asked for it, for the run's stop message. Each case runs
// in a child process, since the first signal sets the stop for the rest of the process.
#include <doctest/doctest.h>

#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base/signals.hpp"

using namespace archctl;

namespace {

// Runs `body` in a child with archctl's handlers installed; true when it returned true.
template <typename Body>
bool in_child(Body body) {
    pid_t pid = ::fork();
    if (pid == 0) {
        install_interrupt_handlers();
        ::_exit(body() ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("a stop is named for the signal that asked for it") {
    CHECK(in_child([] { return std::raise(SIGINT) == 0 && stop_requested() && std::strcmp(interrupt_text(), "interrupted (Ctrl-C)") == 0; }));
    CHECK(in_child([] { return std::raise(SIGTERM) == 0 && stop_requested() && std::strcmp(interrupt_text(), "stopped by SIGTERM") == 0; }));
    CHECK(in_child([] {
        request_stop();
        return stop_requested() && std::strcmp(interrupt_text(), "stopped") == 0;
    }));
}
