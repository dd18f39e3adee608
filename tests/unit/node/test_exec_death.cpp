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
#include "lib/node/client/transport.hpp"
#include "lib/node/wire/protocol.hpp"

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
        r.op = name(Op::info);
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

namespace {

bool process_gone(long pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    return close == std::string::npos || text.compare(close + 2, 1, "Z") == 0;
}

long read_pid(const std::string& path) {
    std::ifstream in(path);
    long pid = -1;
    in >> pid;
    return pid;
}

}  // namespace

TEST_CASE("a far end that never greets is killed after the timeout, and the error names the setting") {
    char dir[] = "/tmp/archctl-exec-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    std::string pidfile = std::string(dir) + "/sleeper";
    ExecOptions o;
    o.node_name = "mute";
    o.argv = {"sh", "-c", "sleep 60 & echo $! > " + pidfile + "; wait"};
    o.timeout = std::chrono::seconds(2);
    auto begun = std::chrono::steady_clock::now();
    auto t = connect_exec(o);
    auto took = std::chrono::steady_clock::now() - begun;
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "NODE_UNREACHABLE");
    CHECK(t.error().message == "node 'mute' did not answer for 2s during 'hello' (nodes.mute.timeout)");
    CHECK(t.error().hint.find("raise nodes.mute.timeout") != std::string::npos);
    CHECK(took >= std::chrono::milliseconds(1900));
    CHECK(took < std::chrono::seconds(5));
    // The whole process group went with it, not only the direct child.
    long sleeper = read_pid(pidfile);
    REQUIRE(sleeper > 0);
    for (int i = 0; i < 100 && !process_gone(sleeper); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(process_gone(sleeper));
    std::remove(pidfile.c_str());
    ::rmdir(dir);
}

TEST_CASE("a far end that greets and then never answers: the call fails after the timeout and the transport is broken") {
    ExecOptions o;
    o.node_name = "stuck";
    o.argv = greeting_child("", "echo 'still thinking' >&2; sleep 60");
    o.timeout = std::chrono::seconds(2);
    auto t = connect_exec(o);
    REQUIRE(t.ok());
    CHECK_FALSE(t.value()->broken());
    auto begun = std::chrono::steady_clock::now();
    auto r = call_within(*t.value(), std::chrono::seconds(20));
    auto took = std::chrono::steady_clock::now() - begun;
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "NODE_UNREACHABLE");
    CHECK(r.error().message == "node 'stuck' did not answer for 2s during 'info' (nodes.stuck.timeout)");
    CHECK(r.error().hint.find("still thinking") != std::string::npos);
    CHECK(took < std::chrono::seconds(5));
    CHECK(t.value()->broken());
    auto again = call_within(*t.value(), std::chrono::seconds(5));
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().message == r.error().message);
}

TEST_CASE("a dead far end breaks the transport") {
    ExecOptions o;
    o.node_name = "crashy";
    o.argv = greeting_child("", "read line; exit 3");
    auto t = connect_exec(o);
    REQUIRE(t.ok());
    CHECK_FALSE(call_within(*t.value(), std::chrono::seconds(20)).ok());
    CHECK(t.value()->broken());
}

TEST_CASE("keepalive lines keep a slow call alive past the timeout and never reach the progress sink") {
    Progress alive;
    alive.id = 1;
    alive.keepalive = true;
    Progress real;
    real.id = 1;
    real.bytes = 7;
    std::string script = "read line; ";
    for (int i = 0; i < 4; ++i) script += "sleep 1; printf '%s\\n' '" + encode(Message{alive}) + "'; ";
    script += "printf '%s\\n' '" + encode(Message{real}) + "'; ";
    script += "printf '%s\\n' '" + encode(Message{Response::success(1, {{"fine", true}})}) + "'; read rest";
    ExecOptions o;
    o.node_name = "slow";
    o.argv = greeting_child("", script);
    o.timeout = std::chrono::seconds(2);
    auto t = connect_exec(o);
    REQUIRE(t.ok());
    struct Sink final : ProgressSink {
        std::vector<Progress> seen;
        void on_progress(const Progress& p) override { seen.push_back(p); }
    } sink;
    Request request;
    request.op = name(Op::info);
    auto r = t.value()->call(request, &sink);
    REQUIRE(r.ok());
    CHECK(r->result.at("fine") == true);
    REQUIRE(sink.seen.size() == 1);
    CHECK(sink.seen[0].bytes == 7);
    CHECK_FALSE(t.value()->broken());
}

TEST_CASE("a keepalive line carries only its id and decodes as one") {
    Progress alive;
    alive.id = 9;
    alive.keepalive = true;
    alive.bytes = 5;  // not sent: a keepalive is no report
    std::string line = encode(Message{alive});
    CHECK(line == R"({"id":9,"keepalive":true,"type":"progress"})");
    auto back = decode(line);
    REQUIRE(back.ok());
    auto* p = std::get_if<Progress>(&back.value());
    REQUIRE(p);
    CHECK(p->keepalive);
    CHECK(p->id == 9);
    CHECK(p->bytes == 0);
    Progress plain;
    plain.id = 9;
    auto plain_back = decode(encode(Message{plain}));
    CHECK_FALSE(std::get<Progress>(plain_back.value()).keepalive);
}
