// Unreachable is not missing (docs/routes.md): what discovery says about a pair while a node's
// Syncthing does not answer, how route list names such routes, that ensure_route never starts an
// attempt then (it waits within transfer.outage_wait and stops cleanly), and the refusals of
// `route rm` — on recording fakes of both Syncthings and node transports.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "lib/routes/routes.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/state_dir.hpp"
#include "tests/support/fakes.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::routes;
using archctl::fakes::FakeSyncthing;
using archctl::fakes::FakeTransport;
using nlohmann::json;
namespace st = archctl::clients::syncthing;

namespace {

const std::string k_outage_route = "archctl-cache1-archive1-abc123";
const std::string k_outage_cache_dev = "CACHEDV-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA";
const std::string k_outage_archive_dev = "ARCHIVE-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB";

Discovery answered(std::set<std::string> nodes, std::map<std::string, std::string> down = {}) {
    Discovery d;
    d.answered = std::move(nodes);
    d.unreachable = std::move(down);
    return d;
}

// Two nodes on fakes: their Syncthings, node transports and a state directory.
struct Pair {
    test::Scratch scratch;
    config::Config cfg;
    std::optional<state::StateDir> dir;
    FakeSyncthing cache_st, archive_st;
    FakeTransport cache_ops{"cache1"}, archive_ops{"archive1"};
    session::NodeSessions nodes;
    std::optional<Env> env;

    Pair() {
        cfg.state_dir = (scratch / "state").string();
        cfg.outage_wait_s = 1;
        for (auto [name, role, root] : {std::tuple{"cache1", config::Role::cache, "/c"}, std::tuple{"archive1", config::Role::archive, "/a"}}) {
            config::NodeConfig n;
            n.name = name;
            n.role = role;
            n.qb_root = std::string(root) + "/qb";
            n.sync_root = std::string(root) + "/sync";
            cfg.nodes[name] = n;
        }
        auto opened = state::StateDir::open(cfg.state_dir);
        REQUIRE(opened.ok());
        dir.emplace(opened.value());
        cache_st.system.my_id = k_outage_cache_dev;
        archive_st.system.my_id = k_outage_archive_dev;
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("cache1"), clients::Tuning{},
                                                         session::NodeSession::Injected{nullptr, &cache_st, &cache_ops}));
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("archive1"), clients::Tuning{},
                                                         session::NodeSession::Injected{nullptr, &archive_st, &archive_ops}));
        env.emplace(Env{cfg, *dir, {}, nodes});
    }

    // The route's folder on both sides (and each side's peer device).
    void share_route() {
        for (auto [fake, self, peer, path] : {std::tuple{&cache_st, k_outage_cache_dev, k_outage_archive_dev, "/c/sync/" + k_outage_route},
                                               std::tuple{&archive_st, k_outage_archive_dev, k_outage_cache_dev, "/a/sync/" + k_outage_route}}) {
            st::Folder f;
            f.id = k_outage_route;
            f.path = path;
            f.devices = {self, peer};
            f.ignore_perms = true;
            fake->folder_map[k_outage_route] = f;
            st::Device d;
            d.device_id = peer;
            fake->device_map[peer] = d;
        }
    }

    // A record of the route as archctl provisioned and verified it.
    void record_created_route() {
        RouteRecord r;
        r.id = k_outage_route;
        r.cache = "cache1";
        r.archive = "archive1";
        r.cache_path = "/c/sync/" + k_outage_route;
        r.archive_path = "/a/sync/" + k_outage_route;
        r.cache_device = k_outage_cache_dev;
        r.archive_device = k_outage_archive_dev;
        r.state = RouteState::ready;
        r.verified_at = "2026-12-01T18:00:00Z";
        r.created = {{"cache1", ObjectKind::device, k_outage_archive_dev, "x", ObjectStatus::created, "", ""},
                     {"cache1", ObjectKind::folder, k_outage_route, "x", ObjectStatus::created, "", ""},
                     {"archive1", ObjectKind::device, k_outage_cache_dev, "x", ObjectStatus::created, "", ""},
                     {"archive1", ObjectKind::folder, k_outage_route, "x", ObjectStatus::created, "", ""}};
        REQUIRE(RouteStore(dir->routes()).save(r, "test").ok());
    }

    bool record_exists() const { return std::filesystem::exists(RouteStore(dir->routes()).path_of(k_outage_route)); }
};

}  // namespace

TEST_CASE("a pair is absent only when both Syncthings answered") {
    Discovery both = answered({"cache1", "archive1"});
    CHECK(look_up_pair(both, "cache1", "archive1").look == PairLook::absent);

    Discovery down = answered({"cache1"}, {{"archive1", "connection refused"}});
    PairStatus p = look_up_pair(down, "cache1", "archive1");
    CHECK(p.look == PairLook::unreachable);
    CHECK(p.down == "archive1");
    CHECK(p.why == "connection refused");
    CHECK(unreachable_text(down, "cache1", "archive1") == "Syncthing of 'archive1' does not answer (connection refused)");
    CHECK(unreachable_text(both, "cache1", "archive1").empty());

    // A node not read at all is no answer either.
    CHECK(look_up_pair(answered({"archive1"}), "cache1", "archive1").down == "cache1");

    Discovery found = both;
    found.routes.push_back({"r", "cache1", "archive1", "/c/r", "/a/r", "C", "A", {}});
    found.answered = {};  // a route found was read on both sides by definition
    CHECK(look_up_pair(found, "cache1", "archive1").look == PairLook::found);
}

TEST_CASE("a ready route whose node does not answer is unreachable, not missing") {
    RouteRecord r;
    r.id = "r";
    r.cache = "cache1";
    r.archive = "archive1";
    r.state = RouteState::ready;
    CHECK(recorded_state(r, answered({"cache1", "archive1"})) == "missing");
    CHECK(recorded_state(r, answered({"cache1"}, {{"archive1", "refused"}})) == "unreachable");
    CHECK(recorded_state(r, answered({}, {{"cache1", "refused"}, {"archive1", "refused"}})) == "unreachable");
    r.state = RouteState::provisioning;
    CHECK(recorded_state(r, answered({"cache1"})) == "provisioning");
}

TEST_CASE("route list shows a ready route as unreachable while its archive's Syncthing is down") {
    Pair p;
    p.share_route();
    p.record_created_route();
    p.archive_st.fail_always("status", Error("HTTP_UNREACHABLE", "cannot reach Syncthing on 'archive1': connection refused"));
    auto listing = list_routes(*p.env);
    REQUIRE(listing.ok());
    REQUIRE(listing->routes.size() == 1);
    CHECK(listing->routes[0].state == "unreachable");
    CHECK(listing->routes[0].health.find("Syncthing of 'archive1' does not answer") == 0);
}

TEST_CASE("ensure_route never provisions while a Syncthing does not answer: it waits, then stops cleanly") {
    Pair p;
    p.archive_st.fail_always("status", Error("HTTP_UNREACHABLE", "cannot reach Syncthing on 'archive1': connection refused"));
    const auto t0 = std::chrono::steady_clock::now();
    auto route = ensure_route(*p.env, "cache1", "archive1");
    const auto took = std::chrono::steady_clock::now() - t0;
    REQUIRE_FALSE(route.ok());
    CHECK(route.error().is(ErrorCode::ROUTE_WAITING));
    CHECK(is_clean_stop(route.error()));
    CHECK(route.error().message.starts_with("waiting: Syncthing of 'archive1' unreachable for 1 s"));
    CHECK(took >= std::chrono::seconds(1));
    CHECK(took < std::chrono::seconds(10));
    CHECK(p.archive_st.count("status") >= 2);  // discovery was read again while waiting
    for (const FakeSyncthing* fake : {&p.cache_st, &p.archive_st}) {
        CHECK(fake->count("put_folder") == 0);
        CHECK(fake->count("put_device") == 0);
    }
    std::vector<std::string> problems;
    CHECK(RouteStore(p.dir->routes()).load_all(problems).empty());  // no attempt, no route ID

    SUBCASE("--no-wait stops at once") {
        EnsureOptions o;
        o.no_wait = true;
        auto again = ensure_route(*p.env, "cache1", "archive1", o);
        REQUIRE_FALSE(again.ok());
        CHECK(again.error().is(ErrorCode::ROUTE_WAITING));
        CHECK(again.error().message.find("Syncthing of 'archive1' does not answer") != std::string::npos);
    }
    SUBCASE("a Syncthing that refuses the API key is an error, not a wait") {
        p.archive_st.heal("status");
        p.archive_st.fail_always("status", Error("ST_AUTH", "Syncthing on 'archive1' rejected the API key (HTTP 403)"));
        auto again = ensure_route(*p.env, "cache1", "archive1");
        REQUIRE_FALSE(again.ok());
        CHECK(again.error().code == "ST_AUTH");
    }
}

TEST_CASE("route rm refuses routes archctl did not make and routes an unfinished job uses") {
    Pair p;
    p.share_route();

    auto foreign = remove_route(*p.env, k_outage_route);
    REQUIRE_FALSE(foreign.ok());
    CHECK(foreign.error().is(ErrorCode::ROUTE_CONFLICT));
    CHECK(foreign.error().message == "route '" + k_outage_route + "' was not created by archctl (it has no provisioning record)");

    p.record_created_route();
    state::JobStore jobs(*p.dir);
    REQUIRE(jobs.create("20261201-180000-abcd", {{"id", "20261201-180000-abcd"}, {"route", {{"id", k_outage_route}}}}).ok());
    auto used = remove_route(*p.env, k_outage_route);
    REQUIRE_FALSE(used.ok());
    CHECK(used.error().is(ErrorCode::ROUTE_IN_USE));
    CHECK(used.error().message == "route '" + k_outage_route + "' is used by unfinished job 20261201-180000-abcd (running)");
    CHECK(p.cache_st.count("delete_folder") == 0);

    SUBCASE("while a Syncthing does not answer nothing is removed") {
        REQUIRE(jobs.write_ledger("20261201-180000-abcd", {{"state", "done"}}).ok());
        p.archive_st.fail_always("status", Error("HTTP_UNREACHABLE", "connection refused"));
        auto waiting = remove_route(*p.env, k_outage_route);
        REQUIRE_FALSE(waiting.ok());
        CHECK(waiting.error().is(ErrorCode::ROUTE_WAITING));
        CHECK(p.cache_st.count("delete_folder") == 0);
        CHECK(p.record_exists());
    }
    SUBCASE("once the job is finished both folders, both unused devices and the record go") {
        REQUIRE(jobs.write_ledger("20261201-180000-abcd", {{"state", "cancelled"}}).ok());
        // Another folder on the archive shares the cache's device: that device stays there.
        st::Folder other;
        other.id = "other";
        other.path = "/a/sync/other";
        other.devices = {k_outage_archive_dev, k_outage_cache_dev};
        p.archive_st.folder_map["other"] = other;
        auto removed = remove_route(*p.env, k_outage_route);
        REQUIRE(removed.ok());
        CHECK(p.cache_st.folder_map.count(k_outage_route) == 0);
        CHECK(p.archive_st.folder_map.count(k_outage_route) == 0);
        CHECK(p.cache_st.device_map.count(k_outage_archive_dev) == 0);
        CHECK(p.archive_st.device_map.count(k_outage_cache_dev) == 1);
        const auto& objects = removed->objects;
        REQUIRE(objects.size() == 4);
        CHECK(objects[3].status == "kept");
        CHECK(objects[3].note == "folder 'other' shares it");
        CHECK(removed->files_left.size() == 2);
        CHECK_FALSE(p.record_exists());
        // Nothing left to remove: the route is gone.
        auto again = remove_route(*p.env, k_outage_route);
        REQUIRE_FALSE(again.ok());
        CHECK(again.error().is(ErrorCode::NOT_FOUND));
    }
}
