// The exec transport when its far end dies or stops reading: an error within seconds, never a
// hang (a hung transport keeps the job's lock, so the next cron run could not take it).

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <doctest/doctest.h>

#include "lib/base/process.hpp"
#include "lib/node/protocol.hpp"
#include "lib/node/transport.hpp"

using namespace archctl;
using namespace archctl::node;

namespace {

// A far end that runs `before` in the shell, greets, then runs `after` (it never answers a
// request).
std::vector<std::string> greeting_child(const std::string& before, const std::string& after) {
    Hello h;
    h.archctl_version = "test";
    h.pid = 1;
    return {"sh", "-c", before + "printf '%s\\n' '" + encode(Message{h}) + "'; " + after};
}

// Runs `call` on a thread and gives up the whole test binary if it does not return in time:
// a hang is the failure this guards against, and it must not hang the suite too.
Result<Response> call_within(Transport& t, std::chrono::seconds limit) {
    auto result = std::async(std::launch::async, [&t] {
        Request r;
        r.op = "info";
        return t.call(r, nullptr);
    });
    if (result.wait_for(limit) != std::future_status::ready) {
        std::fprintf(stderr, "the exec transport hung for %lld s\n", static_cast<long long>(limit.count()));
        std::_Exit(1);
    }
    return result.get();
}

long process_group_of(long pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(text.substr(close + 2));
    std::string state;
    long ppid = 0, pgrp = -1;
    rest >> state >> ppid >> pgrp;
    return pgrp;
}

}  // namespace

TEST_CASE("a far end that stops reading and lingers is an error within seconds, not a hang") {
    std::signal(SIGPIPE, SIG_IGN);  // as archctl runs (lib/base/signals): a closed pipe is EPIPE
    ExecOptions o;
    o.node_name = "gone";
    o.argv = greeting_child("exec 0<&-; ", "sleep 60");  // stops reading before it greets
    auto t = connect_exec(o);
    REQUIRE(t.ok());
    auto begun = std::chrono::steady_clock::now();
    auto r = call_within(*t.value(), std::chrono::seconds(20));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "NODE_UNREACHABLE");
    CHECK(r.error().message.find("'gone'") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(10));
    // Dead stays dead: the next call answers at once with the same error.
    auto again = call_within(*t.value(), std::chrono::seconds(5));
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == "NODE_UNREACHABLE");
}

TEST_CASE("a far end that exits during a call is an error naming the operation and what it said") {
    ExecOptions o;
    o.node_name = "crashy";
    o.argv = greeting_child("", "read line; echo 'disk on fire' >&2; exit 3");
    auto t = connect_exec(o);
    REQUIRE(t.ok());
    auto r = call_within(*t.value(), std::chrono::seconds(20));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "NODE_UNREACHABLE");
    CHECK(r.error().message.find("during 'info'") != std::string::npos);
    CHECK(r.error().hint.find("disk on fire") != std::string::npos);
}

TEST_CASE("a child can be started in a process group of its own, out of reach of the terminal's Ctrl-C") {
    SpawnOptions own;
    own.own_process_group = true;
    auto child = Subprocess::spawn({"sleep", "5"}, own);
    REQUIRE(child.ok());
    CHECK(process_group_of(child->pid()) == child->pid());
    auto shared = Subprocess::spawn({"sleep", "5"});
    REQUIRE(shared.ok());
    CHECK(process_group_of(shared->pid()) == process_group_of(static_cast<long>(::getpid())));
}
