// NodeSession::space, the one place archctl measures free space on a node: a real local node
// over scratch directories (a missing directory is measured at its nearest existing ancestor,
// never above its root), one `space` request per measure, the fallback to `info` on a node that
// does not have that operation, and fake nodes that cannot measure (an error naming the node and
// the path, never 0 free). status reports such a node with why instead of leaving it out.

#include <doctest/doctest.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <memory>
#include <string>

#include "lib/jobs/report/status.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/session/node_session.hpp"
#include "lib/session/space.hpp"
#include "tests/support/fakes.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using archctl::fakes::FakeTransport;
using nlohmann::json;

namespace {

config::NodeConfig node_config(const std::string& name, const std::string& qb_root, const std::string& sync_root) {
    config::NodeConfig n;
    n.name = name;
    n.role = config::Role::archive;
    n.qb_root = qb_root;
    n.sync_root = sync_root;
    return n;
}

// The size of the filesystem that holds `path`, as statvfs says.
std::uint64_t total_of(const std::string& path) {
    struct statvfs sv {};
    REQUIRE(::statvfs(path.c_str(), &sv) == 0);
    return static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
}

node::DirectoryInfo dir_info(const std::string& path, std::optional<std::uint64_t> free, std::optional<std::uint64_t> total) {
    node::DirectoryInfo d;
    d.root.path = path;
    d.free_bytes = free;
    d.total_bytes = total;
    return d;
}

std::string probed(const json& args) {
    auto dirs = args.value("probe_dirs", std::vector<std::string>{});
    return dirs.empty() ? std::string() : dirs.front();
}

// A `space` answer of `free` and `total` bytes measured at `measured`.
fakes::FakeHandlers::Handler space_answer(std::string measured, std::uint64_t free, std::uint64_t total) {
    return [=](const json& args) -> Result<json> {
        node::SpaceResult out;
        out.path = args.at("path").get<std::string>();
        out.measured = measured;
        out.free_bytes = free;
        out.total_bytes = total;
        return json(out);
    };
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A session of node "nas" (qb_root /tank, sync_root /tank/sync) over a fake transport.
struct FakeNas {
    config::NodeConfig config = node_config("nas", "/tank", "/tank/sync");
    FakeTransport ops{"nas"};
    session::NodeSession session{config, clients::Tuning{}, session::NodeSession::Injected{nullptr, nullptr, &ops}};
};

}  // namespace

TEST_CASE("space: a local node measures its root, and a missing directory at its nearest existing ancestor") {
    test::Scratch scratch;
    std::filesystem::create_directories(scratch / "qb/show");
    std::filesystem::create_directories(scratch / "sync");
    const std::string qb = (scratch / "qb").string(), sync = (scratch / "sync").string();
    config::NodeConfig config = node_config("local", qb, sync);
    session::NodeSession node(config, clients::Tuning{});

    auto root = node.space(qb);
    REQUIRE_MESSAGE(root.ok(), root.error().message);
    CHECK(root->free > 0);
    REQUIRE(root->total);
    CHECK(*root->total == total_of(qb));
    CHECK(root->free <= *root->total);

    auto below = node.space(qb + "/show/season 1/disc 2");
    REQUIRE_MESSAGE(below.ok(), below.error().message);
    CHECK(below->total == root->total);
    CHECK(below->free > 0);

    auto missing_child = node.space(sync + "/route-folder/");
    REQUIRE_MESSAGE(missing_child.ok(), missing_child.error().message);
    CHECK(*missing_child->total == total_of(sync));
}

TEST_CASE("space: a directory outside the node's roots is an error naming the node and the path") {
    test::Scratch scratch;
    std::filesystem::create_directories(scratch / "qb");
    std::filesystem::create_directories(scratch / "sync");
    config::NodeConfig config = node_config("local", (scratch / "qb").string(), (scratch / "sync").string());
    session::NodeSession node(config, clients::Tuning{});
    const std::string outside = (scratch / "elsewhere/x").string();
    auto space = node.space(outside);
    REQUIRE_FALSE(space.ok());
    CHECK(contains(space.error().message, "node 'local' cannot measure the free space of '" + outside + "'"));
}

TEST_CASE("space: a missing directory is measured in one space request, and nothing asks info") {
    FakeNas f;
    f.ops.handlers[node::Op::space] = space_answer("/tank", 500, 1000);
    auto space = f.session.space("/tank/sync/route/");
    REQUIRE_MESSAGE(space.ok(), space.error().message);
    CHECK(space->free == 500);
    CHECK(space->total == 1000);
    REQUIRE(f.ops.args_of("space").size() == 1);
    CHECK(f.ops.args_of("space").front() == json{{"path", "/tank/sync/route"}});
    CHECK(f.ops.count("info") == 0);
}

TEST_CASE("space: a node's error is named with the node and the path, and is not a reason to probe through info") {
    FakeNas f;
    f.ops.handlers[node::Op::info] = [](const json&) -> Result<json> { return json(node::InfoResult{}); };
    f.ops.fail_always("space", Error(ErrorCode::PATH_OUTSIDE_ROOT, "'/srv/x' is not below any root"));
    auto space = f.session.space("/srv/x");
    REQUIRE_FALSE(space.ok());
    CHECK(space.error().code == "PATH_OUTSIDE_ROOT");
    CHECK(contains(space.error().message, "node 'nas' cannot measure the free space of '/srv/x': '/srv/x' is not below any root"));
    CHECK(f.ops.count("info") == 0);
}

TEST_CASE("space: an answer without free bytes is an error, never 0 free") {
    FakeNas f;
    f.ops.handlers[node::Op::space] = [](const json&) -> Result<json> { return json{{"path", "/tank"}, {"measured", "/tank"}}; };
    auto space = f.session.space("/tank");
    REQUIRE_FALSE(space.ok());
    CHECK(space.error().code == "PROTOCOL");
    CHECK(contains(space.error().message, "node 'nas' cannot measure the free space of '/tank'"));
}

TEST_CASE("space: a node of an older archctl (no space operation) is asked through info, and not asked for space again") {
    FakeNas f;
    f.ops.handlers[node::Op::info] = [](const json& args) -> Result<json> {
        node::InfoResult info;
        info.probes.push_back(dir_info(probed(args), 300, 900));
        return json(info);
    };
    for (int i = 0; i < 3; ++i) {
        auto space = f.session.space("/tank/sync");
        REQUIRE_MESSAGE(space.ok(), space.error().message);
        CHECK(space->free == 300);
        CHECK(space->total == 900);
    }
    CHECK(f.ops.count("space") == 1);  // UNKNOWN_OPERATION once, then info only
    CHECK(f.ops.count("info") == 3);
}

TEST_CASE("space: on a node without the space operation, a missing directory is probed level by level up to its root, never above") {
    FakeNas f;
    f.ops.handlers["info"] = [](const json& args) -> Result<json> {
        const std::string dir = probed(args);
        if (dir != "/tank") return Error(ErrorCode::NOT_FOUND, "cannot open directory '" + dir + "': No such file or directory");
        node::InfoResult info;
        info.probes.push_back(dir_info("/tank", 500, 1000));
        return json(info);
    };
    auto space = f.session.space("/tank/sync/route");
    REQUIRE_MESSAGE(space.ok(), space.error().message);
    CHECK(space->free == 500);
    CHECK(space->total == 1000);
    std::vector<std::string> asked;
    for (const auto& a : f.ops.args_of("info")) asked.push_back(probed(a));
    CHECK(asked == std::vector<std::string>{"/tank/sync/route", "/tank/sync", "/tank"});

    // The root itself missing is an error, not a walk above it.
    f.ops.handlers["info"] = [](const json& args) -> Result<json> {
        return Error(ErrorCode::NOT_FOUND, "cannot open directory '" + probed(args) + "': No such file or directory");
    };
    auto gone = f.session.space("/tank/x");
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().code == "NOT_FOUND");
    CHECK(contains(gone.error().message, "node 'nas' cannot measure the free space of '/tank/x'"));
    CHECK(f.ops.args_of("info").size() == 5);  // the three above, then /tank/x and /tank
}

TEST_CASE("space: a node that answers without free bytes is an error, never 0 free") {
    FakeNas f;
    f.ops.handlers["info"] = [](const json& args) -> Result<json> {
        node::InfoResult info;
        info.roots.push_back(dir_info("/tank", 700, 1000));
        info.probes.push_back(dir_info(probed(args), std::nullopt, std::nullopt));  // statvfs failed there
        return json(info);
    };
    auto space = f.session.space("/tank/sync");
    REQUIRE_FALSE(space.ok());
    CHECK(space.error().code == "IO");
    CHECK(contains(space.error().message, "node 'nas' cannot measure the free space of '/tank/sync'"));
}

TEST_CASE("space: an operation that fails is an error naming the node and the path, with its code") {
    FakeNas f;
    f.ops.fail_always("info", Error(ErrorCode::NODE_UNREACHABLE, "node 'nas' stopped answering"));
    auto space = f.session.space("/tank");
    REQUIRE_FALSE(space.ok());
    CHECK(space.error().code == "NODE_UNREACHABLE");
    CHECK(contains(space.error().message, "node 'nas' cannot measure the free space of '/tank'"));
    CHECK(contains(space.error().message, "stopped answering"));
}

TEST_CASE("space_in: the probe of the directory, else the longest root that holds it") {
    node::InfoResult info;
    info.roots = {dir_info("/tank", 100, 1000), dir_info("/tank/sync/", 200, 2000), dir_info("/tank/syncx", 300, 3000)};
    CHECK(session::space_in(info, "/tank/sync")->free == 200);
    CHECK(session::space_in(info, "/tank/sync/r/x")->free == 200);
    CHECK(session::space_in(info, "/tank/syncy")->free == 100);
    CHECK_FALSE(session::space_in(info, "/srv").has_value());
    info.probes = {dir_info("/tank/sync/r", 50, std::nullopt)};
    auto probe = session::space_in(info, "/tank/sync/r/");
    REQUIRE(probe);
    CHECK(probe->free == 50);
    CHECK_FALSE(probe->total.has_value());
    // A probe without figures is not read at a root: the root may be another filesystem.
    info.probes = {dir_info("/tank/sync/r", std::nullopt, std::nullopt)};
    CHECK_FALSE(session::space_in(info, "/tank/sync/r").has_value());
}

TEST_CASE("space: below_a_root is strict and component-wise") {
    const std::vector<std::string> roots = {"/tank", "/srv/sync/"};
    CHECK(session::below_a_root(roots, "/tank/a"));
    CHECK(session::below_a_root(roots, "/srv/sync/x/"));
    CHECK_FALSE(session::below_a_root(roots, "/tank"));
    CHECK_FALSE(session::below_a_root(roots, "/tank/"));
    CHECK_FALSE(session::below_a_root(roots, "/tankx/a"));
    CHECK_FALSE(session::below_a_root(roots, "/srv"));
}

TEST_CASE("status: a node whose free space cannot be measured is reported with why, not left out") {
    config::NodeConfig good = node_config("cache", "/q", "/s");
    config::NodeConfig bad = node_config("nas", "/tank", "/tank/sync");
    FakeTransport good_ops("cache"), bad_ops("nas");
    good_ops.handlers["info"] = [](const json& args) -> Result<json> {
        node::InfoResult info;
        info.probes.push_back(dir_info(probed(args), 4096, 8192));
        return json(info);
    };
    bad_ops.handlers["info"] = [](const json& args) -> Result<json> {
        node::InfoResult info;
        info.probes.push_back(dir_info(probed(args), std::nullopt, std::nullopt));
        return json(info);
    };
    jobs::Nodes nodes;
    nodes.add(std::make_unique<session::NodeSession>(good, clients::Tuning{}, session::NodeSession::Injected{nullptr, nullptr, &good_ops}));
    nodes.add(std::make_unique<session::NodeSession>(bad, clients::Tuning{}, session::NodeSession::Injected{nullptr, nullptr, &bad_ops}));
    auto free = jobs::report::free_at_qb_roots(nodes);
    CHECK(free.free == std::map<std::string, std::uint64_t>{{"cache", 4096}});
    REQUIRE(free.errors.count("nas"));
    CHECK(contains(free.errors["nas"], "node 'nas' cannot measure the free space of '/tank'"));
    CHECK_FALSE(free.errors.count("cache"));
}
