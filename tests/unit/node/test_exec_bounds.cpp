// The exec transport is bounded in time and memory whatever its far end sends: bytes that are
// not the protocol end it at once (quoted in the error), a line past the limit or one dripping
// in too slowly ends it, and a stop (SIGINT, SIGTERM) ends a wait within a second or two. Each
// time the far end's whole process group is killed.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "lib/base/process.hpp"
#include "lib/base/signals.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/node/wire/protocol.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::node;

namespace {

using BoundsClock = std::chrono::steady_clock;

// A far end that writes its shell pid to `pidfile`, then runs `script`.
std::vector<std::string> bounds_child(const std::string& pidfile, const std::string& script) {
    return {"sh", "-c", "echo $$ > '" + pidfile + "'; " + script};
}

// A far end that greets properly and then runs `after`.
std::vector<std::string> bounds_greeting_child(const std::string& pidfile, const std::string& after) {
    Hello h;
    h.archctl_version = "test";
    h.pid = 1;
    return bounds_child(pidfile, "printf '%s\\n' '" + encode(Message{h}) + "'; " + after);
}

// Runs `fn` on a thread and gives up the whole test binary if it does not return in time: a
// hang is the failure guarded against here, and it must not hang the suite too.
template <class Fn>
auto within(std::chrono::seconds limit, Fn fn) {
    auto result = std::async(std::launch::async, std::move(fn));
    if (result.wait_for(limit) != std::future_status::ready) {
        std::fprintf(stderr, "the exec transport hung for %lld s\n", static_cast<long long>(limit.count()));
        std::_Exit(1);
    }
    return result.get();
}

Result<std::unique_ptr<Transport>> connect_within(const ExecOptions& o, std::chrono::seconds limit = std::chrono::seconds(30)) {
    return within(limit, [&] { return connect_exec(o); });
}

long bounds_read_pid(const std::string& path) {
    std::ifstream in(path);
    long pid = -1;
    in >> pid;
    return pid;
}

// True once `pid` is gone (or a zombie): killed with its group, not left behind.
bool bounds_gone(long pid) {
    for (int i = 0; i < 150; ++i) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        auto close = text.rfind(')');
        if (close == std::string::npos || text.compare(close + 2, 1, "Z") == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// The far end's group: its shell and a child of it, whose pid the script writes to `pidfile`.2.
std::string with_child(const std::string& pidfile) { return "sleep 600 & echo $! > '" + pidfile + ".2'; "; }

}  // namespace

TEST_CASE("a far end that prints something else than the protocol is killed at its first bytes, quoted in the error") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    ExecOptions o;
    o.node_name = "drip";
    // One byte a second and never a newline: each byte used to restart the silence timeout.
    o.argv = bounds_child(pidfile, with_child(pidfile) + "while :; do printf x; sleep 1; done");
    o.timeout = std::chrono::seconds(5);
    auto t = connect_within(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "PROTOCOL");
    CHECK(t.error().message.find("node 'drip' printed 'x") != std::string::npos);
    CHECK(t.error().message.find("instead of the node protocol during 'hello'") != std::string::npos);
    CHECK(t.error().hint.find("archctl node serve") != std::string::npos);
    CHECK(t.error().hint.find("nodes.drip.exec") != std::string::npos);
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
    CHECK(bounds_gone(bounds_read_pid(pidfile + ".2")));
}

TEST_CASE("a far end that streams bytes endlessly is refused at once, and terminal escapes in them are not printed raw") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    ExecOptions o;
    o.node_name = "flood";
    o.argv = bounds_child(pidfile, "printf '\\033]0;PWNED\\007'; exec tr '\\000' x < /dev/zero");
    auto t = connect_within(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "PROTOCOL");
    CHECK(t.error().message.find("printed '\\x1b]0;PWNED\\x07") != std::string::npos);
    CHECK(t.error().message.find('\x1b') == std::string::npos);
    CHECK(t.error().message.size() < 300);
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
}

TEST_CASE("a far end that streams one endless line that looks like JSON is refused at the line limit") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    ExecOptions o;
    o.node_name = "babble";
    o.argv = bounds_child(pidfile, "printf '{\"type\":\"hello\",\"x\":\"'; exec tr '\\000' x < /dev/zero");
    auto t = connect_within(o, std::chrono::seconds(120));
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "PROTOCOL");
    CHECK(t.error().message.find("node 'babble' sent a line longer than 64.0 MiB during 'hello'") != std::string::npos);
    CHECK(t.error().message.find("it begins '{\"type\":\"hello\",\"x\":\"xxx") != std::string::npos);
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
}

TEST_CASE("a line that drips in a byte at a time must still be complete within the timeout") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    ExecOptions o;
    o.node_name = "slow";
    o.argv = bounds_child(pidfile, with_child(pidfile) + "printf '{'; while :; do printf ' '; sleep 0.2; done");
    o.timeout = std::chrono::seconds(2);
    auto t = connect_within(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "NODE_UNREACHABLE");
    CHECK(t.error().message.find("node 'slow' did not finish a line in 2s during 'hello'") != std::string::npos);
    CHECK(t.error().message.find("beginning '{") != std::string::npos);
    CHECK(t.error().message.find("nodes.slow.timeout") != std::string::npos);
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
    CHECK(bounds_gone(bounds_read_pid(pidfile + ".2")));
}

TEST_CASE("a far end that greets and then babbles during a call: the call fails, the transport is broken, the group killed") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    ExecOptions o;
    o.node_name = "chatty";
    o.argv = bounds_greeting_child(pidfile, with_child(pidfile) + "read line; while :; do printf 'y'; sleep 1; done");
    o.timeout = std::chrono::seconds(5);
    auto t = connect_within(o);
    REQUIRE(t.ok());
    auto r = within(std::chrono::seconds(30), [&] {
        Request request;
        request.op = name(Op::info);
        return t.value()->call(request, nullptr);
    });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "PROTOCOL");
    CHECK(r.error().message.find("node 'chatty' printed 'y") != std::string::npos);
    CHECK(r.error().message.find("during 'info'") != std::string::npos);
    CHECK(t.value()->broken());
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
    CHECK(bounds_gone(bounds_read_pid(pidfile + ".2")));
}

namespace {

// Runs `scenario` in a forked child (a stop cannot be undone in this process) with a real
// SIGTERM raised `after` into it; the child exits 0 when the scenario held. Gives up on a
// child that runs past `limit`.
bool stop_scenario(std::chrono::milliseconds after, std::chrono::seconds limit, bool (*scenario)()) {
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
        install_interrupt_handlers();
        std::thread([after] {
            std::this_thread::sleep_for(after);
            ::kill(::getpid(), SIGTERM);
        }).detach();
        std::_Exit(scenario() ? 0 : 1);
    }
    auto deadline = BoundsClock::now() + limit;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (BoundsClock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string g_stop_pidfile;

bool stop_before_hello() {
    ExecOptions o;
    o.node_name = "mute";
    o.argv = bounds_child(g_stop_pidfile, with_child(g_stop_pidfile) + "printf '{'; while :; do printf ' '; sleep 0.2; done");
    o.timeout = std::chrono::seconds(60);
    auto begun = BoundsClock::now();
    auto t = connect_exec(o);
    bool ok = !t.ok() && t.error().code == "NODE_UNREACHABLE" &&
              t.error().message.find("stopped by SIGTERM while waiting for node 'mute' during 'hello'") != std::string::npos;
    if (!ok && !t.ok()) std::fprintf(stderr, "%s\n", t.error().message.c_str());
    return ok && BoundsClock::now() - begun < std::chrono::seconds(20) && bounds_gone(bounds_read_pid(g_stop_pidfile)) &&
           bounds_gone(bounds_read_pid(g_stop_pidfile + ".2"));
}

bool stop_during_call() {
    Progress alive;
    alive.id = 1;
    alive.keepalive = true;
    ExecOptions o;
    o.node_name = "deaf";
    // Answers nothing, not even the cancel a stop sends, but keeps the call alive.
    o.argv = bounds_greeting_child(g_stop_pidfile, with_child(g_stop_pidfile) + "read line; while :; do printf '%s\\n' '" +
                                                       encode(Message{alive}) + "'; sleep 0.3; done");
    o.timeout = std::chrono::seconds(60);
    auto t = connect_exec(o);
    if (!t.ok()) return false;
    Request request;
    request.op = name(Op::stage);
    auto r = t.value()->call(request, nullptr);
    bool ok = !r.ok() && r.error().code == "NODE_UNREACHABLE" &&
              r.error().message.find("stopped by SIGTERM: node 'deaf' did not stop 'stage' within") != std::string::npos &&
              t.value()->broken();
    if (!ok && !r.ok()) std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return ok && bounds_gone(bounds_read_pid(g_stop_pidfile)) && bounds_gone(bounds_read_pid(g_stop_pidfile + ".2"));
}

bool quick_call_after_stop() {
    while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ExecOptions o;
    o.node_name = "quick";
    // Answers its first request at once (and never reads the cancel that follows it).
    o.argv = bounds_greeting_child(g_stop_pidfile, "read line; printf '%s\\n' '" +
                                                       encode(Message{Response::success(1, {{"fine", true}})}) + "'; sleep 600");
    auto t = connect_exec(o);
    if (!t.ok()) return false;
    Request request;
    request.op = name(Op::info);
    auto r = t.value()->call(request, nullptr);
    if (!r.ok()) std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return r.ok() && r->result.value("fine", false);
}

}  // namespace

TEST_CASE("after a stop, a call that a far end answers at once still gets its answer") {
    test::Scratch scratch;
    g_stop_pidfile = (scratch.path() / "pid").string();
    CHECK(stop_scenario(std::chrono::milliseconds(0), std::chrono::seconds(30), quick_call_after_stop));
}

TEST_CASE("a stop while waiting for a far end's hello ends the wait and kills its group") {
    test::Scratch scratch;
    g_stop_pidfile = (scratch.path() / "pid").string();
    CHECK(stop_scenario(std::chrono::milliseconds(500), std::chrono::seconds(30), stop_before_hello));
}

TEST_CASE("a stop during a call whose far end ignores the cancel ends the call within seconds and kills its group") {
    test::Scratch scratch;
    g_stop_pidfile = (scratch.path() / "pid").string();
    CHECK(stop_scenario(std::chrono::milliseconds(500), std::chrono::seconds(30), stop_during_call));
}

TEST_CASE("the abort of a second signal kills the process group of every exec far end before it exits") {
    test::Scratch scratch;
    const std::string pidfile = (scratch.path() / "pid").string();
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
        install_interrupt_handlers();
        SpawnOptions own;
        own.own_process_group = true;
        auto child = Subprocess::spawn(bounds_child(pidfile, with_child(pidfile) + "wait"), own);
        if (!child.ok()) std::_Exit(1);
        for (int i = 0; i < 500 && bounds_read_pid(pidfile + ".2") <= 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ::kill(::getpid(), SIGTERM);
        ::kill(::getpid(), SIGTERM);  // the abort: _exit(10) from the handler
        std::this_thread::sleep_for(std::chrono::seconds(30));
        std::_Exit(1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 10);
    CHECK(bounds_gone(bounds_read_pid(pidfile)));
    CHECK(bounds_gone(bounds_read_pid(pidfile + ".2")));
}
