// Discovery classification from recorded Syncthing folder/device JSON, route IDs and paths,
// dialable addresses, health verdicts.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/routes/discovery.hpp"
#include "lib/routes/health.hpp"
#include "lib/routes/naming.hpp"
#include "lib/routes/session.hpp"
#include "tests/support/fakes.hpp"

using namespace archctl;
using namespace archctl::routes;
using nlohmann::json;
namespace st = archctl::clients::syncthing;

namespace {

const std::string k_cache = "AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA";
const std::string k_archive = "BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB";
const std::string k_archive2 = "CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC";
const std::string k_stranger = "DDDDDDD-DDDDDDD-DDDDDDD-DDDDDDD-DDDDDDD-DDDDDDD-DDDDDDD-DDDDDDD";

// A folder as GET /rest/config/folders returns it (the keys discovery reads, plus others).
st::Folder folder(const std::string& id, const std::string& path, const std::string& type,
                  const std::vector<std::string>& devices) {
    json devs = json::array();
    for (const auto& d : devices) devs.push_back({{"deviceID", d}, {"introducedBy", ""}, {"encryptionPassword", ""}});
    return st::Folder::from_json({{"id", id}, {"label", id}, {"path", path}, {"type", type}, {"devices", devs},
                                  {"rescanIntervalS", 3600}, {"fsWatcherEnabled", true}, {"fsWatcherDelayS", 10},
                                  {"ignorePerms", false}, {"paused", false}, {"markerName", ".stfolder"}});
}

NodeSnapshot snapshot(const std::string& node, config::Role role, const std::string& root, const std::string& device,
                      std::vector<st::Folder> folders) {
    NodeSnapshot s;
    s.node = node;
    s.role = role;
    s.sync_root = root;
    s.reachable = true;
    s.device_id = device;
    s.folders = std::move(folders);
    return s;
}

const IgnoredFolder* ignored(const Discovery& d, const std::string& node, const std::string& id) {
    for (const auto& f : d.ignored)
        if (f.node == node && f.folder_id == id) return &f;
    return nullptr;
}

}  // namespace

TEST_CASE("a folder on both sides with exactly the two devices is a route") {
    auto c = snapshot("cache1", config::Role::cache, "/srv/c/sync", k_cache,
                      {folder("pair", "/srv/c/sync/pair", "sendreceive", {k_cache, k_archive})});
    auto a = snapshot("archive1", config::Role::archive, "/srv/a/sync/", k_archive,
                      {folder("pair", "/srv/a/sync/deep/pair/", "sendreceive", {k_archive, k_cache})});
    Discovery d = classify({c, a});
    REQUIRE(d.routes.size() == 1);
    CHECK(d.routes[0].id == "pair");
    CHECK(d.routes[0].cache == "cache1");
    CHECK(d.routes[0].archive == "archive1");
    CHECK(d.routes[0].cache_path == "/srv/c/sync/pair");
    CHECK(d.routes[0].archive_device == k_archive);
    CHECK(d.ignored.empty());
    CHECK(d.half.empty());
    CHECK(d.between("cache1", "archive1").size() == 1);
    CHECK(d.between("archive1", "cache1").empty());
}

TEST_CASE("multi-device, other types and folders outside the sync root are ignored with a reason") {
    auto c = snapshot("cache1", config::Role::cache, "/srv/c/sync", k_cache,
                      {folder("three", "/srv/c/sync/three", "sendreceive", {k_cache, k_archive, k_archive2}),
                       folder("sendonly", "/srv/c/sync/so", "sendonly", {k_cache, k_archive}),
                       folder("outside", "/srv/c/elsewhere", "sendreceive", {k_cache, k_archive}),
                       folder("sneaky", "/srv/c/sync/../elsewhere", "sendreceive", {k_cache, k_archive}),
                       folder("root", "/srv/c/sync", "sendreceive", {k_cache, k_archive}),
                       folder("alone", "/srv/c/sync/alone", "sendreceive", {k_cache}),
                       folder("stranger", "/srv/c/sync/st", "sendreceive", {k_cache, k_stranger})});
    auto a = snapshot("archive1", config::Role::archive, "/srv/a/sync", k_archive,
                      {folder("three", "/srv/a/sync/three", "sendreceive", {k_cache, k_archive, k_archive2}),
                       folder("sendonly", "/srv/a/sync/so", "receiveonly", {k_cache, k_archive}),
                       folder("outside", "/srv/a/sync/outside", "sendreceive", {k_cache, k_archive})});
    auto a2 = snapshot("archive2", config::Role::archive, "/srv/b/sync", k_archive2, {});
    Discovery d = classify({c, a, a2});
    CHECK(d.routes.empty());
    REQUIRE(ignored(d, "cache1", "three"));
    CHECK(ignored(d, "cache1", "three")->reason == "shared with 3 devices (a route has exactly two)");
    CHECK(ignored(d, "cache1", "sendonly")->reason == "type sendonly (a route is sendreceive)");
    CHECK(ignored(d, "archive1", "sendonly")->reason == "type receiveonly (a route is sendreceive)");
    CHECK(ignored(d, "cache1", "outside")->reason == "outside the sync root /srv/c/sync");
    CHECK(ignored(d, "cache1", "sneaky")->reason == "outside the sync root /srv/c/sync");
    CHECK(ignored(d, "cache1", "root")->reason == "outside the sync root /srv/c/sync");
    CHECK(ignored(d, "cache1", "alone")->reason == "not shared with any other device");
    CHECK(ignored(d, "cache1", "stranger")->reason == "shared with device DDDDDDD, which is no configured node");
    // archive1's "outside" is a valid side, but its peer's folder is not: a half route.
    REQUIRE(d.half.size() == 1);
    CHECK(d.half[0].id == "outside");
    CHECK(d.half[0].node == "archive1");
}

TEST_CASE("folders between two nodes of one role are no route") {
    auto c1 = snapshot("cache1", config::Role::cache, "/c1", k_cache, {folder("x", "/c1/x", "sendreceive", {k_cache, k_archive})});
    auto c2 = snapshot("cache2", config::Role::cache, "/c2", k_archive, {folder("x", "/c2/x", "sendreceive", {k_cache, k_archive})});
    Discovery d = classify({c1, c2});
    CHECK(d.routes.empty());
    CHECK(ignored(d, "cache1", "x")->reason == "shared between two cache nodes (cache2)");
}

TEST_CASE("an unreadable peer makes a half route, known by its recorded device") {
    auto c = snapshot("cache1", config::Role::cache, "/c", k_cache, {folder("r", "/c/r", "sendreceive", {k_cache, k_archive})});
    NodeSnapshot a;
    a.node = "archive1";
    a.role = config::Role::archive;
    a.error = "connection refused";
    Discovery d = classify({c, a}, {{"archive1", k_archive}});
    CHECK(d.routes.empty());
    REQUIRE(d.half.size() == 1);
    CHECK(d.half[0].peer == "archive1");
    CHECK(d.half[0].reason == "Syncthing of 'archive1' could not be read");
}

TEST_CASE("two routes between the same pair are both found, sorted by id") {
    auto c = snapshot("cache1", config::Role::cache, "/c", k_cache,
                      {folder("r2", "/c/r2", "sendreceive", {k_cache, k_archive}),
                       folder("r1", "/c/r1", "sendreceive", {k_cache, k_archive})});
    auto a = snapshot("archive1", config::Role::archive, "/a", k_archive,
                      {folder("r1", "/a/r1", "sendreceive", {k_cache, k_archive}),
                       folder("r2", "/a/r2", "sendreceive", {k_cache, k_archive})});
    Discovery d = classify({c, a});
    REQUIRE(d.routes.size() == 2);
    CHECK(d.routes[0].id == "r1");
    CHECK(d.routes[1].id == "r2");
    CHECK(d.find("r2") != nullptr);
    CHECK(d.find("r3") == nullptr);
}

TEST_CASE("route ids and folder paths") {
    CHECK(id_component("Seed Box_01") == "seed-box-01");
    CHECK(id_component("---") == "node");
    CHECK(id_component("averyveryveryverylongnodename") == "averyveryveryverylongnod");
    CHECK(make_route_id("seedbox", "NAS", "k3x9ab") == "archctl-seedbox-nas-k3x9ab");
    CHECK(route_folder_path("/srv/sync/", "archctl-a-b-1") == "/srv/sync/archctl-a-b-1");
    CHECK(route_folder_path("/", "x") == "/x");
    CHECK(path_below("/srv/sync/x", "/srv/sync"));
    CHECK(path_below("/srv/sync/x/", "/srv/sync/"));
    CHECK_FALSE(path_below("/srv/sync", "/srv/sync"));
    CHECK_FALSE(path_below("/srv/syncx/y", "/srv/sync"));
    CHECK(path_below("/x", "/"));
}

TEST_CASE("dialable addresses prefer explicit ones and fill wildcard hosts") {
    CHECK(dialable_addresses({"tcp://127.0.0.1:22001"}, "http://127.0.0.1:8384") ==
          std::vector<std::string>{"tcp://127.0.0.1:22001"});
    CHECK(dialable_addresses({"tcp://0.0.0.0:22001", "quic://:22001"}, "http://10.0.0.8:8384/") ==
          std::vector<std::string>{"tcp://10.0.0.8:22001", "quic://10.0.0.8:22001"});
    CHECK(dialable_addresses({"default"}, "https://nas.lan:8384") ==
          std::vector<std::string>{"tcp://nas.lan:22000", "dynamic"});
    CHECK(dialable_addresses({}, "http://x:1") == std::vector<std::string>{"dynamic"});
    CHECK(dialable_addresses({"relay://r.example:22067/?id=X"}, "http://x:1") ==
          std::vector<std::string>{"relay://r.example:22067/?id=X"});
}

TEST_CASE("ownership fingerprints change with any key and ignore key order") {
    json a = json::parse(R"({"deviceID":"X","name":"nas","addresses":["tcp://1.2.3.4:22000"],"paused":false})");
    json b = json::parse(R"({"paused":false,"addresses":["tcp://1.2.3.4:22000"],"name":"nas","deviceID":"X"})");
    CHECK(config_fingerprint(a) == config_fingerprint(b));
    CHECK(config_fingerprint(a).rfind("xxh3:", 0) == 0);
    CHECK(config_fingerprint(a).size() == 5 + 32);
    json c = a;
    c["paused"] = true;
    CHECK(config_fingerprint(a) != config_fingerprint(c));
    json d = a;
    d["addresses"].push_back("dynamic");
    CHECK(config_fingerprint(a) != config_fingerprint(d));
}

TEST_CASE("health: every problem is named, healthy only when none") {
    SideFacts c{"cache1", true, "", true, true, false, "idle", "", 0, true, true, "", "/srv/sync/r", std::nullopt};
    SideFacts a = c;
    a.node = "archive1";
    CHECK(judge_health(c, a).healthy);
    CHECK(judge_health(c, a).summary() == "healthy");
    a.peer_connected = false;
    a.paused = true;
    a.state = "";
    Health h = judge_health(c, a);
    CHECK_FALSE(h.healthy);
    CHECK(h.summary() == "archive1: folder paused; archive1: peer cache1 not connected");
    c.marker_present = false;
    c.file_errors = 2;
    c.folder_error = "folder marker missing";
    h = judge_health(c, a);
    CHECK(h.problems[0] == "cache1: folder error: folder marker missing");
    CHECK(h.problems[1] == "cache1: 2 file errors");
    CHECK(h.problems[2] == "cache1: folder marker .stfolder missing");
    SideFacts down;
    down.node = "archive1";
    down.error = "connection refused";
    CHECK(judge_health(c, down).problems.back() == "archive1: Syncthing unreachable: connection refused");
}

TEST_CASE("health: a route folder the node refuses is a blocker that names the path and the fix") {
    SideFacts c{"cache1", true, "", true, true, false, "idle", "", 0, true, true, "", "/srv/cache/sync/r", std::nullopt};
    SideFacts a = c;
    a.node = "archive1";
    a.folder_path = "/srv/archive/sync/r";
    CHECK_FALSE(judge_health(c, a).blocker);
    a.marker_present.reset();
    a.folder_refused = Error(ErrorCode::PATH_SYMLINK, "refusing path '/srv/archive/sync/r': a component below the root is a symlink");
    Health h = judge_health(c, a);
    CHECK_FALSE(h.healthy);
    REQUIRE(h.blocker);
    CHECK(h.blocker->is(ErrorCode::PATH_SYMLINK));
    CHECK(h.blocker->message.find("'/srv/archive/sync/r' on 'archive1'") != std::string::npos);
    CHECK(h.blocker->message.find('\n') == std::string::npos);
    CHECK(h.blocker->hint.find("real directory") != std::string::npos);
    CHECK(h.problems.back().rfind("archive1: folder path refused: ", 0) == 0);
    // Anything else the node refuses is a blocker too, with the node's words.
    a.folder_refused = Error(ErrorCode::PATH_OUTSIDE_ROOT, "path outside the node's roots '/elsewhere': not below any root");
    h = judge_health(c, a);
    REQUIRE(h.blocker);
    CHECK(h.blocker->is(ErrorCode::PATH_OUTSIDE_ROOT));
    CHECK(h.blocker->message.find("not below any root") != std::string::npos);
    // A side that cannot be read is a wait, never a blocker.
    a.reachable = false;
    CHECK_FALSE(judge_health(c, a).blocker);
}

TEST_CASE("--no-wait: a wait still needed ends at once as a clean stop that says why") {
    Deadlines d;
    d.attempt = std::chrono::steady_clock::now() + std::chrono::minutes(30);
    CHECK(wait_end(d) == WaitEnd::keep_waiting);
    d.no_wait_after = std::chrono::steady_clock::now();
    CHECK(wait_end(d) == WaitEnd::not_waiting);
    Error e = clean_stop_error(WaitEnd::not_waiting, "route 'r' is not ready at step 'wait healthy': archive1: folder paused");
    CHECK(e.is(ErrorCode::ROUTE_WAITING));
    CHECK(is_clean_stop(e));
    CHECK(e.message == "not waiting (--no-wait): route 'r' is not ready at step 'wait healthy': archive1: folder paused");
    // The attempt's own timeout still wins over --no-wait.
    d.attempt = std::chrono::steady_clock::now();
    CHECK(wait_end(d) == WaitEnd::timed_out);
    // nap never sleeps past the --no-wait moment.
    d.attempt = std::chrono::steady_clock::now() + std::chrono::minutes(30);
    auto t0 = std::chrono::steady_clock::now();
    nap(d, std::chrono::milliseconds(2000));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
}

// Syncthing's folder error text may carry its own line breaks: route health says it on one line.
TEST_CASE("probe_side: a folder error from Syncthing is folded to one line") {
    fakes::FakeSyncthing st;
    clients::syncthing::Folder f;
    f.id = "r1";
    f.path = "/srv/sync/r1";
    st.folder_map["r1"] = f;
    clients::syncthing::FolderStatus status;
    status.state = "error";
    status.error = "folder path missing\n  stat /srv/sync/r1: no such file or directory\n";
    st.folder_status["r1"] = status;
    SideFacts s = probe_side(st, nullptr, "cache1", "r1", "/srv/sync/r1", "PEER");
    CHECK(s.folder_error == "folder path missing; stat /srv/sync/r1: no such file or directory");
}
