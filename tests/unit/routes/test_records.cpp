// Route records: JSON round trip, corrupt input, the store's atomic writes and listing.

#include <doctest/doctest.h>

#include <fstream>

#include "lib/routes/route_record.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::routes;

namespace {

RouteRecord sample() {
    RouteRecord r;
    r.id = "archctl-cache1-archive1-a1b2c3";
    r.cache = "cache1";
    r.archive = "archive1";
    r.cache_path = "/c/sync/archctl-cache1-archive1-a1b2c3";
    r.archive_path = "/a/sync/archctl-cache1-archive1-a1b2c3";
    r.cache_device = "AAAAAAA";
    r.archive_device = "BBBBBBB";
    r.state = RouteState::timed_out;
    r.created_at = "2026-12-01T18:00:00Z";
    r.updated_at = "2026-12-01T18:30:00Z";
    r.step = "configure archive1";
    r.step_started_at = "2026-12-01T18:00:01Z";
    r.seen = "archive1: Syncthing unreachable: connection refused";
    r.error = "route not ready after 1800 s";
    r.created = {{"cache1", ObjectKind::device, "BBBBBBB", "xxh3:00", ObjectStatus::created, "2026-12-01T18:00:01Z", ""},
                 {"cache1", ObjectKind::folder, r.id, "", ObjectStatus::intended, "2026-12-01T18:00:02Z", ""},
                 {"archive1", ObjectKind::device, "AAAAAAA", "xxh3:11", ObjectStatus::kept, "", "changed since archctl created it"}};
    r.last_check_at = "2026-12-01T18:31:00Z";
    r.last_check = "ok";
    r.last_check_seconds = 2.5;
    r.verified_at = "2026-12-01T18:31:00Z";
    return r;
}

}  // namespace

TEST_CASE("a record survives a JSON round trip unchanged") {
    RouteRecord r = sample();
    auto back = record_from_json(to_json(r), "test");
    REQUIRE(back.ok());
    CHECK(back.value() == r);
    CHECK(back->find_created("cache1", ObjectKind::folder, r.id)->status == ObjectStatus::intended);
    CHECK(back->find_created("cache1", ObjectKind::folder, "other") == nullptr);
}

TEST_CASE("state names round trip and unknown ones are refused") {
    for (auto s : {RouteState::provisioning, RouteState::timed_out, RouteState::failed, RouteState::rolled_back, RouteState::ready})
        CHECK(parse_route_state(to_string(s)) == s);
    CHECK_FALSE(parse_route_state("bogus").has_value());
    auto j = to_json(sample());
    j["state"] = "bogus";
    CHECK(record_from_json(j, "x").error().code == "CORRUPT");
    j = to_json(sample());
    j["attempt"]["created"][0]["kind"] = "printer";
    CHECK_FALSE(record_from_json(j, "x").ok());
    j = to_json(sample());
    j["id"] = "../escape";
    CHECK_FALSE(record_from_json(j, "x").ok());
    CHECK_FALSE(record_from_json(nlohmann::json::array(), "x").ok());
}

TEST_CASE("route ids are safe file names") {
    CHECK(valid_route_id("archctl-a-b-123abc"));
    CHECK(valid_route_id("abcde-fghij"));
    CHECK_FALSE(valid_route_id(""));
    CHECK_FALSE(valid_route_id(".hidden"));
    CHECK_FALSE(valid_route_id("a/b"));
    CHECK_FALSE(valid_route_id("a b"));
}

TEST_CASE("the store saves atomically, loads by id and lists sorted, skipping corrupt files") {
    test::Scratch scratch;
    RouteStore store((scratch.path() / "routes").string());
    RouteRecord r = sample();
    REQUIRE(store.save(r, "test").ok());
    CHECK(r.updated_at != "2026-12-01T18:30:00Z");  // stamped by save
    auto loaded = store.load(r.id);
    REQUIRE(loaded.ok());
    REQUIRE(loaded.value().has_value());
    CHECK(*loaded.value() == r);
    CHECK_FALSE(store.load("archctl-none").value().has_value());

    RouteRecord other = sample();
    other.id = "archctl-aaa";
    REQUIRE(store.save(other, "test").ok());
    scratch.write("routes/broken.json", "{not json");
    scratch.write("routes/lock", "{}");
    std::vector<std::string> problems;
    auto all = store.load_all(problems);
    REQUIRE(all.size() == 2);
    CHECK(all[0].id == "archctl-aaa");
    CHECK(all[1].id == r.id);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find("broken.json") != std::string::npos);
}

TEST_CASE("a record file naming another route is corrupt") {
    test::Scratch scratch;
    RouteStore store((scratch.path() / "routes").string());
    RouteRecord r = sample();
    REQUIRE(store.save(r, "test").ok());
    std::ifstream in(store.path_of(r.id));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    scratch.write("routes/archctl-renamed.json", text);
    auto loaded = store.load("archctl-renamed");
    CHECK_FALSE(loaded.ok());
}
