// `node serve` without --root: the caller's open_roots names the roots (the exec transport sends
// its node's qb_root and sync_root after the hello), and they are enforced as --root ones are.
// With --root, open_roots naming any other directory is refused. Also: write_check, and the
// stderr tail an exec error quotes.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "lib/node/client/transport.hpp"
#include "lib/node/server/server.hpp"
#include "lib/node/wire/protocol.hpp"
#include "lib/session/node_probe.hpp"
#include "tests/support/scratch.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;

namespace {

struct Dirs {
    archctl::test::Scratch scratch;
    std::string qb = (scratch.path() / "qb").string();
    std::string sync = (scratch.path() / "sync").string();
    std::string outside = (scratch.path() / "outside").string();
    Dirs() {
        for (const auto& d : {qb, sync, outside}) std::filesystem::create_directories(d);
    }
};

Result<std::unique_ptr<Transport>> serve(const std::vector<std::string>& serve_roots, const std::vector<std::string>& roots) {
    ExecOptions options;
    options.node_name = "nas";
    options.argv = {archctl::test::archctl_bin(), "node", "serve"};
    for (const auto& r : serve_roots) {
        options.argv.push_back("--root");
        options.argv.push_back(r);
    }
    options.roots = roots;
    return connect_exec(options);
}

}  // namespace

TEST_CASE("node serve without --root serves the roots the caller names, and only those") {
    Dirs d;
    auto t = serve({}, {d.qb, d.sync});
    REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
    const Hello& hello = t.value()->hello();
    REQUIRE(hello.roots.size() == 2);
    CHECK(hello.roots[0].path == d.qb);
    CHECK(hello.roots[1].path == d.sync);
    std::ofstream(d.qb + "/f") << "x";
    auto tree = call_operation(**t, Op::tree, {{"base", d.qb}, {"paths", {"f"}}});
    CHECK_MESSAGE(tree.ok(), (tree.ok() ? "" : tree.error().message));
    auto outside = call_operation(**t, Op::nonce_write, {{"path", d.outside + "/n"}, {"content", "x"}});
    REQUIRE_FALSE(outside.ok());
    CHECK(outside.error().code == "PATH_OUTSIDE_ROOT");
    // No symlink escapes below a caller's root either.
    std::filesystem::create_directory_symlink(d.outside, d.qb + "/link");
    auto escaped = call_operation(**t, Op::nonce_write, {{"path", d.qb + "/link/n"}, {"content", "x"}});
    REQUIRE_FALSE(escaped.ok());
    CHECK(escaped.error().code == "PATH_SYMLINK");
    CHECK_FALSE(std::filesystem::exists(d.outside + "/n"));
}

TEST_CASE("a root the caller names that does not exist is a connect error naming the node") {
    Dirs d;
    auto t = serve({}, {d.qb, d.scratch.path().string() + "/missing"});
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message.find("node 'nas' refused its roots") != std::string::npos);
    CHECK(t.error().message.find("missing") != std::string::npos);
}

TEST_CASE("with --root, open_roots naming another directory is refused; roots below them are accepted") {
    Dirs d;
    auto refused = serve({d.qb}, {d.qb, d.outside});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == "PATH_OUTSIDE_ROOT");
    CHECK(refused.error().message.find(d.outside) != std::string::npos);
    CHECK(refused.error().hint.find("--root") != std::string::npos);
    std::filesystem::create_directories(d.qb + "/below");
    auto below = serve({d.qb, d.sync}, {d.qb + "/below", d.sync});
    REQUIRE_MESSAGE(below.ok(), (below.ok() ? "" : below.error().message));
    // The node still serves exactly its --root set.
    CHECK(below.value()->hello().roots.size() == 2);
    CHECK(below.value()->hello().roots[0].path == d.qb);
}

TEST_CASE("an operation before open_roots on a node without --root says what is wrong") {
    Server server{Server::CallerRoots{}};
    Request r;
    r.id = 1;
    r.op = name(Op::info);
    std::atomic<bool> cancel{false};
    Response response = server.handle(r, nullptr, cancel);
    REQUIRE_FALSE(response.ok);
    CHECK(response.error.message.find("started without --root") != std::string::npos);
    CHECK_FALSE(response.error.hint.empty());
}

TEST_CASE("write_check creates and removes a file in a root; a read-only root fails with the cause") {
    Dirs d;
    auto t = connect_local("local", {d.qb, d.sync});
    REQUIRE(t.ok());
    auto ok = call_operation(**t, Op::write_check, {{"path", d.qb}});
    REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.error().message));
    CHECK(ok.value().value("writable", false));
    CHECK(std::filesystem::is_empty(d.qb));
    if (::geteuid() != 0) {
        ::chmod(d.sync.c_str(), 0555);
        auto ro = call_operation(**t, Op::write_check, {{"path", d.sync}});
        ::chmod(d.sync.c_str(), 0755);
        REQUIRE_FALSE(ro.ok());
        CHECK(ro.error().message.find(d.sync) != std::string::npos);
    }
    auto outside = call_operation(**t, Op::write_check, {{"path", d.outside}});
    REQUIRE_FALSE(outside.ok());
    CHECK(outside.error().code == "PATH_OUTSIDE_ROOT");
}

TEST_CASE("the stderr tail of a far end: its last lines, blank ones dropped, bounded") {
    CHECK(stderr_tail_hint("nas", "") == "");
    CHECK(stderr_tail_hint("nas", "\n \n") == "");
    CHECK(stderr_tail_hint("nas", "bash: archctl: command not found\n") == "node 'nas' said: bash: archctl: command not found");
    CHECK(stderr_tail_hint("nas", "one\n\ntwo\r\n") == "node 'nas' said:\n  one\n  two");
    std::string many;
    for (int i = 0; i < 30; ++i) many += "line " + std::to_string(i) + "\n";
    std::string tail = stderr_tail_hint("nas", many);
    CHECK(tail.find("line 9\n") == std::string::npos);
    CHECK(tail.find("  line 10\n") != std::string::npos);
    CHECK(tail.find("  line 29") != std::string::npos);
    std::string big(10000, 'x');
    CHECK(stderr_tail_hint("nas", big + "\nlast\n").size() < 4200);
}

TEST_CASE("an exec far end that dies shows every line of its stderr tail, not only the last") {
    ExecOptions o;
    o.node_name = "nas";
    o.argv = {"sh", "-c", "echo 'ssh: first cause' >&2; echo 'second line' >&2; exit 255"};
    auto t = connect_exec(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == "NODE_UNREACHABLE");
    CHECK(t.error().hint.find("first cause") != std::string::npos);
    CHECK(t.error().hint.find("second line") != std::string::npos);
}

TEST_CASE("a transport error on one line: the message and the far end's last stderr line") {
    Error one(ErrorCode::NODE_UNREACHABLE, "node 'nas' closed the connection during 'hello': exit status 255",
              "node 'nas' said: ssh: connect to host nas port 22: Connection refused");
    CHECK(session::one_line_cause(one) ==
          "node 'nas' closed the connection during 'hello': exit status 255 (ssh: connect to host nas port 22: Connection refused)");
    Error many(ErrorCode::NODE_UNREACHABLE, "node 'nas' did not answer for 3s during 'hello' (nodes.nas.timeout)",
               "node 'nas' said:\n  first\n  last\ncheck that node 'nas' is reachable through its exec command");
    CHECK(session::one_line_cause(many) == "node 'nas' did not answer for 3s during 'hello' (nodes.nas.timeout) (last)");
    Error plain(ErrorCode::PATH_OUTSIDE_ROOT, "root '/x' is not below the roots this node serves (/a)", "add '--root /x'");
    CHECK(session::one_line_cause(plain) == plain.message);
}
