// The node contract on both transports: hello, info, tree, confinement, errors, cancel, death.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <sstream>

#include "lib/node/server/root_set.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

// Layout: qb/t/a.bin, qb/t/sub/b.bin; qb/escape -> outside (symlink); qb/t/linkdir -> outside;
// qb/t/link.bin -> outside/secret; qb/t/fifo; outside/secret.
void make_tree(NodeFixture& f) {
    f.write("qb/t/a.bin", "aaaa");
    f.write("qb/t/sub/b.bin", "bb");
    f.write("outside/secret", "secret");
    std::filesystem::create_directory_symlink(f.outside(), f.qb() + "/escape");
    std::filesystem::create_directory_symlink(f.outside(), f.qb() + "/t/linkdir");
    std::filesystem::create_symlink(f.outside() + "/secret", f.qb() + "/t/link.bin");
    REQUIRE(::mkfifo((f.qb() + "/t/fifo").c_str(), 0644) == 0);
}

json find_entry(const json& tree, const std::string& path) {
    for (const auto& e : tree["entries"])
        if (e["path"] == path) return e;
    FAIL("no entry " << path);
    return {};
}

void check_confinement(NodeFixture& f) {
    make_tree(f);
    auto before = list_files(f.outside());
    // A node path outside every root, and one that climbs out.
    CHECK(f.fails(Op::tree, {{"base", "/etc"}, {"paths", {"passwd"}}}).code == "PATH_OUTSIDE_ROOT");
    CHECK(f.fails(Op::tree, {{"base", f.qb() + "/../outside"}, {"paths", {"secret"}}}).code == "PATH_OUTSIDE_ROOT");
    CHECK(f.fails(Op::tree, {{"base", "relative"}, {"paths", {"x"}}}).code == "PATH_OUTSIDE_ROOT");
    // A symlink inside the root that points outside, as a directory.
    CHECK(f.fails(Op::tree, {{"base", f.qb() + "/escape"}, {"paths", {"secret"}}}).code == "PATH_SYMLINK");
    CHECK(f.fails(Op::info, {{"probe_dirs", {f.qb() + "/escape"}}}).code == "PATH_SYMLINK");
    json tree = f.ok(Op::tree, {{"base", f.qb() + "/t"}, {"paths", {"../../outside/secret", "/etc/passwd", "linkdir/secret"}}});
    CHECK(find_entry(tree, "../../outside/secret")["error"]["code"] == "PATH_OUTSIDE_ROOT");
    CHECK(find_entry(tree, "/etc/passwd")["error"]["code"] == "PATH_OUTSIDE_ROOT");
    CHECK(find_entry(tree, "linkdir/secret")["error"]["code"] == "PATH_SYMLINK");
    // Staging through a symlinked intermediate directory, or a symlinked file, changes nothing.
    json stage = {{"job_dir", f.sync() + "/r/job1"}, {"source_base", f.qb() + "/t"},
                  {"files", {{{"index", 0}, {"path", "linkdir/secret"}, {"size", 6}}}}};
    std::filesystem::create_directories(f.sync() + "/r");
    CHECK(f.fails(Op::stage, stage).code == "PATH_SYMLINK");
    stage["files"][0]["path"] = "link.bin";
    CHECK(f.fails(Op::stage, stage).code == "PATH_SYMLINK");
    stage["job_dir"] = f.qb() + "/escape/job";
    stage["files"][0]["path"] = "a.bin";
    stage["files"][0]["size"] = 4;
    CHECK(f.fails(Op::stage, stage).code == "PATH_SYMLINK");
    CHECK_FALSE(std::filesystem::exists(f.sync() + "/r/job1"));
    CHECK(list_files(f.outside()) == before);
    CHECK(f.fails(Op::nonce_write, {{"path", f.qb() + "/escape/n"}, {"content", "x"}}).code == "PATH_SYMLINK");
    CHECK(f.fails(Op::nonce_write, {{"path", "/tmp/archctl-nonce-outside"}, {"content", "x"}}).code == "PATH_OUTSIDE_ROOT");
    CHECK(list_files(f.outside()) == before);
}

struct CancelAtFirst : ProgressSink {
    Transport* t = nullptr;
    int seen = 0;
    void on_progress(const Progress&) override {
        if (++seen == 1) t->cancel();
    }
};

}  // namespace

NODE_TEST(hello_names_protocol_roots_and_capabilities) {
    const Hello& h = f.transport().hello();
    CHECK(h.protocol == k_protocol_version);
    CHECK_FALSE(h.archctl_version.empty());
    REQUIRE(h.roots.size() == 2);
    CHECK(h.roots[0].path == f.qb());
    CHECK(h.roots[1].path == f.sync());
    CHECK_FALSE(h.roots[0].fs_type.empty());
    CHECK(h.roots[0].capabilities.hardlink);  // scratch space is one local filesystem
    CHECK(h.roots[0].capabilities.probe_error.empty());
    CHECK(list_files(f.qb()).empty());  // probe files are gone
    if (f.kind() == Kind::exec) CHECK(h.pid != ::getpid());
}

NODE_TEST(info_reports_free_space_and_probes_directories) {
    f.write("qb/dir/x", "x");
    json info = f.ok(Op::info, {{"probe_dirs", {f.qb() + "/dir"}}});
    REQUIRE(info["roots"].size() == 2);
    CHECK(info["roots"][0]["free_bytes"].get<std::uint64_t>() > 0);
    CHECK(info["roots"][0]["total_bytes"].get<std::uint64_t>() >= info["roots"][0]["free_bytes"].get<std::uint64_t>());
    REQUIRE(info["probes"].size() == 1);
    CHECK(info["probes"][0]["capabilities"]["hardlink"] == true);
    CHECK(list_files(f.qb() + "/dir") == std::vector<std::string>{"x"});
    CHECK(f.fails(Op::info, {{"probe_dirs", {f.qb() + "/nope"}}}).code == "NOT_FOUND");
}

NODE_TEST(tree_reports_types_and_stat_fields) {
    make_tree(f);
    json tree = f.ok(Op::tree, {{"base", f.qb() + "/t"}, {"paths", {"a.bin", "sub/b.bin", "sub", "link.bin", "fifo", "missing", "nodir/x"}}});
    CHECK(tree["base_exists"] == true);
    json a = find_entry(tree, "a.bin");
    CHECK(a["type"] == "file");
    CHECK(a["size"] == 4);
    CHECK(a["nlink"] == 1);
    CHECK(a["ino"].get<std::uint64_t>() == lstat_path(f.qb() + "/t/a.bin").ino);
    CHECK(a.contains("mtime_ns"));
    CHECK(a.contains("dev"));
    CHECK(find_entry(tree, "sub/b.bin")["size"] == 2);
    CHECK(find_entry(tree, "sub")["type"] == "dir");
    CHECK(find_entry(tree, "link.bin")["type"] == "symlink");
    CHECK(find_entry(tree, "fifo")["type"] == "fifo");
    CHECK(find_entry(tree, "missing")["type"] == "absent");
    CHECK(find_entry(tree, "nodir/x")["type"] == "absent");
    json none = f.ok(Op::tree, {{"base", f.qb() + "/not-yet"}, {"paths", {"a"}}});
    CHECK(none["base_exists"] == false);
    CHECK(none["entries"][0]["type"] == "absent");
}

NODE_TEST(paths_are_confined_to_the_roots) { check_confinement(f); }

TEST_CASE("paths are confined to the roots [local, component walk]") {
    set_resolve_mode(ResolveMode::walk);
    NodeFixture f(Kind::local);
    check_confinement(f);
    set_resolve_mode(ResolveMode::auto_detect);
}

NODE_TEST(unknown_operations_and_bad_arguments_are_errors) {
    CHECK(f.fails("frobnicate", json::object()).code == "UNKNOWN_OPERATION");
    CHECK(f.fails(Op::tree, {{"base", 42}}).code == "BAD_REQUEST");
    CHECK(f.fails(Op::stage, {{"job_dir", f.sync() + "/j"}, {"source_base", f.qb()}, {"files", json::array()}, {"method", "teleport"}}).code ==
          "BAD_REQUEST");
    // The connection stays usable after errors.
    CHECK(f.ok(Op::tree, {{"base", f.qb()}, {"paths", json::array()}})["base_exists"] == true);
}

NODE_TEST(cancel_stops_a_copy_between_chunks_and_a_rerun_resumes) {
    std::string data = random_bytes(24u << 20, 5);
    f.write("qb/big.bin", data);
    std::filesystem::create_directories(f.sync() + "/r");
    json stage = {{"job_dir", f.sync() + "/r/job"}, {"source_base", f.qb()}, {"method", "copy"},
                  {"files", {{{"index", 0}, {"path", "big.bin"}, {"size", data.size()}}}}};
    CancelAtFirst sink;
    sink.t = &f.transport();
    json first = f.ok(Op::stage, stage, &sink);
    CHECK(first["complete"] == false);
    CHECK(first["stopped"] == "cancel");
    CHECK(first["bytes_copied"].get<std::uint64_t>() < data.size());
    CHECK_FALSE(std::filesystem::exists(f.sync() + "/r/job/READY"));
    json second = f.ok(Op::stage, stage);
    CHECK(second["complete"] == true);
    CHECK(second["bytes_copied"].get<std::uint64_t>() + first["bytes_copied"].get<std::uint64_t>() == data.size());
    CHECK(file_content(f.sync() + "/r/job/p/0") == data);
}

TEST_CASE("a dead far end is a clear error naming the node [exec]") {
    NodeFixture f(Kind::exec);
    f.write("qb/x", "xx");
    std::filesystem::create_directories(f.sync() + "/r");
    auto t = f.connect({"ARCHCTL_TEST_CRASH_AT=stage.linked"});
    json stage = {{"job_dir", f.sync() + "/r/job"}, {"source_base", f.qb()}, {"files", {{{"index", 0}, {"path", "x"}, {"size", 2}}}}};
    auto r = call_operation(*t, Op::stage, stage);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "NODE_UNREACHABLE");
    CHECK(r.error().message.find("testnode") != std::string::npos);
    CHECK(r.error().message.find("137") != std::string::npos);
    // Later calls fail the same way instead of hanging.
    CHECK(call_operation(*t, Op::info).error().code == "NODE_UNREACHABLE");

    ExecOptions bad;
    bad.node_name = "ghost";
    bad.argv = {"/nonexistent/archctl", "node", "serve"};
    auto g = connect_exec(bad);
    REQUIRE_FALSE(g.ok());
    CHECK(g.error().code == "NODE_UNREACHABLE");
    CHECK(g.error().message.find("ghost") != std::string::npos);

    ExecOptions refusing;
    refusing.node_name = "norooted";
    refusing.argv = {archctl::test::archctl_bin(), "node", "serve", "--root", "relative/dir"};
    auto n = connect_exec(refusing);
    REQUIRE_FALSE(n.ok());
    CHECK(n.error().code == "NODE_UNREACHABLE");
    CHECK(n.error().hint.find("absolute") != std::string::npos);
}

TEST_CASE("node serve writes only protocol lines on stdout") {
    archctl::test::Scratch s;
    std::filesystem::create_directories(s / "root");
    std::string root = (s / "root").string();
    std::string input = R"({"type":"request","id":1,"op":"info","args":{}})" "\n" "garbage\n" R"({"type":"request","id":2,"op":"tree","args":{"base":")" + root + R"(","paths":["x"]}})" "\n";
    auto r = archctl::test::run({archctl::test::archctl_bin(), "node", "serve", "--root", root}, {}, input);
    CHECK(r.exit_code == 0);
    std::istringstream lines(r.out);
    std::string line;
    std::vector<std::string> types;
    while (std::getline(lines, line)) {
        auto m = decode(line);
        REQUIRE_MESSAGE(m.ok(), line);
        if (std::holds_alternative<Hello>(m.value())) types.push_back("hello");
        if (auto* resp = std::get_if<Response>(&m.value())) types.push_back(resp->ok ? "ok" : resp->error.code);
    }
    // The malformed line is answered by the reader at once, so only the hello's place is fixed.
    REQUIRE(types.size() == 4);
    CHECK(types[0] == "hello");
    std::sort(types.begin() + 1, types.end());
    CHECK(types == std::vector<std::string>{"hello", "PROTOCOL", "ok", "ok"});
}
