// routes over the caller's node sessions (Env::nodes): discovery and health read the sessions'
// Syncthing and node transport — here recording fakes — and open nothing of their own.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "lib/routes/routes.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/state_dir.hpp"
#include "tests/support/fakes.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using archctl::fakes::FakeSyncthing;
using archctl::fakes::FakeTransport;
using nlohmann::json;
namespace st = archctl::clients::syncthing;

namespace {

const std::string k_route = "archctl-cache1-archive1-abc123";
const std::string k_cache_dev = "CACHEDV-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA";
const std::string k_archive_dev = "ARCHIVE-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB";

// One side of the route: its Syncthing shares the folder with the peer, idle and connected.
void share(FakeSyncthing& fake, const std::string& self, const std::string& peer, const std::string& path) {
    fake.system.my_id = self;
    st::Folder f;
    f.id = k_route;
    f.path = path;
    f.devices = {self, peer};
    f.ignore_perms = true;  // the valve holds (a folder without it is listed `unsafe`)
    fake.folder_map[k_route] = f;
    st::Device d;
    d.device_id = peer;
    fake.device_map[peer] = d;
    st::FolderStatus s;
    s.state = "idle";
    fake.folder_status[k_route] = s;
    st::Connection c;
    c.device_id = peer;
    c.connected = true;
    fake.connection_list = {c};
}

FakeTransport::Handler marker_present() {
    return [](const json& args) -> Result<json> {
        CHECK(args["paths"] == json::array({".stfolder"}));
        return json{{"entries", json::array({json{{"type", "dir"}}})}};
    };
}

}  // namespace

TEST_CASE("list_routes reads through the sessions it is given") {
    test::Scratch scratch;
    config::Config cfg;
    cfg.state_dir = (scratch / "state").string();
    config::NodeConfig cache;
    cache.name = "cache1";
    cache.role = config::Role::cache;
    cache.qb_root = "/c/qb";
    cache.sync_root = "/c/sync";
    config::NodeConfig archive;
    archive.name = "archive1";
    archive.role = config::Role::archive;
    archive.qb_root = "/a/qb";
    archive.sync_root = "/a/sync";
    cfg.nodes["cache1"] = cache;
    cfg.nodes["archive1"] = archive;
    auto dir = state::StateDir::open(cfg.state_dir);
    REQUIRE(dir.ok());

    FakeSyncthing cache_st, archive_st;
    share(cache_st, k_cache_dev, k_archive_dev, "/c/sync/" + k_route);
    share(archive_st, k_archive_dev, k_cache_dev, "/a/sync/" + k_route);
    FakeTransport cache_ops("cache1"), archive_ops("archive1");
    cache_ops.handlers["tree"] = marker_present();
    archive_ops.handlers["tree"] = marker_present();
    session::NodeSessions nodes;
    nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("cache1"), clients::Tuning{},
                                                     session::NodeSession::Injected{nullptr, &cache_st, &cache_ops}));
    nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("archive1"), clients::Tuning{},
                                                     session::NodeSession::Injected{nullptr, &archive_st, &archive_ops}));

    routes::Env env{cfg, dir.value(), {}, nodes};
    auto listing = routes::list_routes(env);
    REQUIRE(listing.ok());
    REQUIRE(listing->routes.size() == 1);
    const auto& r = listing->routes[0];
    CHECK(r.id == k_route);
    CHECK(r.cache == "cache1");
    CHECK(r.archive == "archive1");
    CHECK(r.discovered);
    CHECK(r.state == "unverified");  // healthy, never checked by a nonce
    CHECK(listing->unreachable.empty());
    for (const FakeSyncthing* fake : {&cache_st, &archive_st}) {
        CHECK(fake->count("status") == 1);
        CHECK(fake->count("folders") == 1);
        CHECK(fake->count("folder") == 1);
        CHECK(fake->count("db_status") == 1);
        CHECK(fake->count("connections") == 1);
    }
    CHECK(cache_ops.count("tree") == 1);
    CHECK(archive_ops.count("tree") == 1);
    CHECK(cache_ops.calls[0].args["base"] == "/c/sync/" + k_route);

    SUBCASE("a node whose Syncthing cannot be read is reported, the other still read") {
        archive_st.fail_always("status", Error("HTTP_UNREACHABLE", "cannot reach Syncthing on 'archive1'"));
        auto again = routes::list_routes(env);
        REQUIRE(again.ok());
        CHECK(again->unreachable == std::vector<std::string>{"archive1: cannot reach Syncthing on 'archive1'"});
        CHECK(cache_st.count("status") == 2);
    }
}
