// NodeSession over the exec transport: a transport whose child died or went silent is dropped,
// and the next ops() spawns a fresh child (the job driver retries a step after a backoff).

#include <chrono>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "lib/config/config.hpp"
#include "lib/node/wire/op_names.hpp"
#include "lib/node/wire/protocol.hpp"
#include "lib/session/node_session.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;

namespace {

// A node whose far end logs each start to `log`, greets, then runs `after`.
config::NodeConfig exec_node(const std::string& log, const std::string& after, std::chrono::seconds timeout) {
    node::Hello h;
    h.archctl_version = "test";
    h.pid = 1;
    config::NodeConfig n;
    n.name = "far";
    n.role = config::Role::archive;
    // No roots: the fake far end only greets, so no open_roots is sent after its hello.
    n.qb_root = "";
    n.sync_root = "";
    n.exec = {"sh", "-c", "echo started >> " + log + "; printf '%s\\n' '" + node::encode(node::Message{h}) + "'; " + after};
    n.timeout = timeout;
    return n;
}

int starts(const std::string& log) {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

Result<node::Response> info(node::Transport& t) {
    node::Request r;
    r.op = node::name(node::Op::info);
    return t.call(r, nullptr);
}

}  // namespace

TEST_CASE("a transport whose child died is dropped: the next ops() starts a fresh child") {
    archctl::test::Scratch s;
    std::string log = (s / "starts").string();
    config::NodeConfig node = exec_node(log, "read line; exit 3", std::chrono::seconds(20));
    session::NodeSession session(node, clients::Tuning{});
    auto first = session.ops();
    REQUIRE(first.ok());
    CHECK(starts(log) == 1);
    // A working transport is reused.
    auto same = session.ops();
    REQUIRE(same.ok());
    CHECK(same.value() == first.value());
    CHECK(starts(log) == 1);

    auto r = info(*first.value());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "NODE_UNREACHABLE");
    CHECK(first.value()->broken());

    auto second = session.ops();
    REQUIRE(second.ok());
    CHECK(second.value() != first.value());
    CHECK_FALSE(second.value()->broken());
    CHECK(starts(log) == 2);
    // The broken one is kept alive for whoever still holds it, and answers with its error.
    auto stale = info(*first.value());
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.error().message == r.error().message);
}

TEST_CASE("a transport that timed out is dropped, and the node's timeout reaches the transport") {
    archctl::test::Scratch s;
    std::string log = (s / "starts").string();
    config::NodeConfig node = exec_node(log, "sleep 60", std::chrono::seconds(2));
    session::NodeSession session(node, clients::Tuning{});
    auto first = session.ops();
    REQUIRE(first.ok());
    auto begun = std::chrono::steady_clock::now();
    auto r = info(*first.value());
    REQUIRE_FALSE(r.ok());
    CHECK(std::chrono::steady_clock::now() - begun < std::chrono::seconds(5));
    CHECK(r.error().message.find("did not answer for 2s during 'info' (nodes.far.timeout)") != std::string::npos);
    auto second = session.ops();
    REQUIRE(second.ok());
    CHECK(second.value() != first.value());
    CHECK(starts(log) == 2);
}

TEST_CASE("a node that cannot be reached at all is retried on the next ops()") {
    archctl::test::Scratch s;
    std::string log = (s / "starts").string();
    config::NodeConfig node = exec_node(log, "", std::chrono::seconds(20));
    node.exec = {"sh", "-c", "echo started >> " + log + "; echo 'ssh: connect to host far port 22: Connection refused' >&2; exit 255"};
    session::NodeSession session(node, clients::Tuning{});
    auto first = session.ops();
    REQUIRE_FALSE(first.ok());
    CHECK(first.error().code == "NODE_UNREACHABLE");
    CHECK(first.error().hint.find("Connection refused") != std::string::npos);
    CHECK_FALSE(session.ops().ok());
    CHECK(starts(log) == 2);
}
