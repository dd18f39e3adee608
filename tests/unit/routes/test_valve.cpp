// The valve settings of a route folder (docs/routes.md "The valve"): which settings break it, the
// PATCH body that repairs only those, and how discovery carries them per side.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/routes/discovery.hpp"
#include "lib/routes/routes.hpp"
#include "lib/routes/valve.hpp"

using namespace archctl;
using namespace archctl::routes;
using nlohmann::json;
namespace st = archctl::clients::syncthing;

namespace {

const std::string k_valve_cache = "AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA";
const std::string k_valve_archive = "BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB";

// A route folder as Syncthing 1.19 returns it, with the valve holding; `changes` on top.
st::Folder folder(const json& changes = json::object()) {
    json o = {{"id", "r"},
              {"label", "r"},
              {"path", "/s/r"},
              {"type", "sendreceive"},
              {"devices", json::array({{{"deviceID", k_valve_cache}}, {{"deviceID", k_valve_archive}}})},
              {"ignorePerms", true},
              {"ignoreDelete", false},
              {"versioning", {{"type", ""}, {"params", json::object()}, {"cleanupIntervalS", 3600}, {"fsPath", ""}, {"fsType", "basic"}}},
              {"rescanIntervalS", 3600}};
    o.merge_patch(changes);
    return st::Folder::from_json(o);
}

std::vector<std::string> settings(const std::vector<ValveProblem>& problems) {
    std::vector<std::string> out;
    for (const auto& p : problems) out.push_back(p.setting);
    return out;
}

NodeSnapshot snapshot(const std::string& node, config::Role role, const std::string& device, st::Folder f) {
    NodeSnapshot s;
    s.node = node;
    s.role = role;
    s.sync_root = "/s";
    s.reachable = true;
    s.device_id = device;
    s.folders = {std::move(f)};
    return s;
}

}  // namespace

TEST_CASE("a folder archctl would create holds the valve") {
    CHECK(valve_problems(folder()).empty());
    CHECK(valve_repair(folder()) == json::object());
    // Keys a Syncthing does not know (1.19 has no syncOwnership/syncXattrs) are no problem.
    CHECK(valve_problems(folder({{"syncOwnership", nullptr}})).empty());
}

TEST_CASE("every setting that lets the far side reach a source inode is named") {
    auto f = folder({{"versioning", {{"type", "trashcan"}, {"params", {{"cleanoutDays", "0"}}}}},
                     {"ignorePerms", false},
                     {"ignoreDelete", true},
                     {"syncOwnership", true},
                     {"syncXattrs", true}});
    auto problems = valve_problems(f);
    CHECK(settings(problems) == std::vector<std::string>{"versioning", "ignorePerms", "ignoreDelete", "syncOwnership", "syncXattrs"});
    CHECK(problems[0].text() == "versioning 'trashcan' (must be off)");
    CHECK(valve_summary(problems).starts_with("versioning 'trashcan' (must be off); ignorePerms false (must be true)"));
    for (const char* type : {"simple", "staggered", "external"})
        CHECK(settings(valve_problems(folder({{"versioning", {{"type", type}}}}))) == std::vector<std::string>{"versioning"});
    CHECK(valve_problems(folder({{"versioning", {{"type", "none"}}}})).empty());
}

TEST_CASE("the repair patches only the valve keys, keeping the rest of versioning") {
    auto f = folder({{"versioning", {{"type", "trashcan"}, {"params", {{"cleanoutDays", "7"}}}}}, {"ignorePerms", false}});
    json patch = valve_repair(f);
    CHECK(patch.size() == 2);
    CHECK(patch["ignorePerms"] == true);
    CHECK(patch["versioning"]["type"] == "");
    CHECK(patch["versioning"]["params"] == json::object());
    CHECK(patch["versioning"]["cleanupIntervalS"] == 3600);  // Syncthing's other versioning keys stay
    CHECK(patch["versioning"]["fsType"] == "basic");
    // Applied, the folder holds.
    json repaired = f.raw;
    repaired.merge_patch(patch);
    repaired["versioning"] = patch["versioning"];
    CHECK(valve_problems(st::Folder::from_json(repaired)).empty());

    json deletes = valve_repair(folder({{"ignoreDelete", true}, {"syncXattrs", true}}));
    CHECK(deletes == json{{"ignoreDelete", false}, {"syncXattrs", false}});
}

TEST_CASE("the valve error names the route, the node, the settings and the repair") {
    Error e = valve_error("r", "archive1", valve_problems(folder({{"versioning", {{"type", "trashcan"}}}})));
    CHECK(e.is(ErrorCode::ROUTE_VALVE));
    CHECK(e.message == "route folder 'r' on 'archive1' lets the far side change staged source files: versioning 'trashcan' (must be off)");
    CHECK(e.hint.find("archctl route ensure --repair r") != std::string::npos);
    CHECK(valve_fix("r") == "archctl route ensure --repair r");
}

TEST_CASE("discovery carries each side's valve problems, cache first") {
    auto c = snapshot("cache1", config::Role::cache, k_valve_cache, folder({{"ignorePerms", false}}));
    auto a = snapshot("archive1", config::Role::archive, k_valve_archive, folder({{"versioning", {{"type", "trashcan"}}}}));
    Discovery d = classify({c, a});
    REQUIRE(d.routes.size() == 1);
    const auto& valve = d.routes[0].valve;
    REQUIRE(valve.size() == 2);
    CHECK(valve[0].node == "cache1");
    CHECK(settings(valve[0].problems) == std::vector<std::string>{"ignorePerms"});
    CHECK(valve[1].node == "archive1");
    CHECK(valve_text(valve) == "cache1: ignorePerms false (must be true); archive1: versioning 'trashcan' (must be off)");

    Discovery fine = classify({snapshot("cache1", config::Role::cache, k_valve_cache, folder()),
                               snapshot("archive1", config::Role::archive, k_valve_archive, folder())});
    REQUIRE(fine.routes.size() == 1);
    CHECK(fine.routes[0].valve.empty());
}

TEST_CASE("a route whose valve breaks is unsafe before anything else") {
    RouteRecord verified;
    verified.verified_at = "2026-12-01T18:00:00Z";
    CHECK(discovered_state(false, true, verified, true) == "unsafe");
    CHECK(discovered_state(false, false, std::nullopt, false) == "unsafe");
    CHECK(discovered_state(true, false, verified, true) == "unhealthy");
    CHECK(discovered_state(true, true, std::nullopt, false) == "unverified");
    CHECK(discovered_state(true, true, verified, false) == "stale");
    CHECK(discovered_state(true, true, verified, true) == "ready");
}
