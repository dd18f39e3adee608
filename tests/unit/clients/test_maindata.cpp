#include <doctest/doctest.h>

#include "lib/clients/qbittorrent/maindata.hpp"
#include "tests/unit/clients/fixtures.hpp"

using namespace archctl::clients::qbittorrent;
using archctl::test::fixture_json;

TEST_CASE("maindata: full snapshot, field-wise delta, removals, rebuild on full_update") {
    MainData data;
    CHECK(data.rid() == 0);
    data.apply(fixture_json("qb_maindata_full.json"));
    CHECK(data.rid() == 1);
    CHECK(data.full_updates() == 1);
    REQUIRE(data.torrent_objects().size() == 2);
    CHECK(data.categories().count("movies") == 1);
    CHECK(data.tags() == std::set<std::string>{"keep", "old"});

    data.apply(fixture_json("qb_maindata_delta.json"));
    CHECK(data.rid() == 2);
    const auto& t = data.torrent_objects();
    REQUIRE(t.size() == 2);
    const auto& v1 = t.at("1a44193f2bc3900372505c3704e196cd3429d504");
    CHECK(v1["state"] == "pausedUP");
    CHECK(v1["progress"] == 1);
    CHECK(v1["save_path"] == "/tmp/A");  // kept from the snapshot: deltas carry changed fields only
    CHECK(v1["name"] == "payload");
    CHECK(t.count("3afaf5c0178dfcfa9a0210fbf9bccb28e590407c") == 0);
    CHECK(t.count("570e8f6ae06cfe047945486e53f388248f716f11") == 1);
    CHECK(data.categories().empty());
    CHECK(data.tags() == std::set<std::string>{"keep", "new"});
    CHECK(data.server_state()["dl_info_speed"] == 42);
    CHECK(data.server_state()["free_space_on_disk"] == 1000);

    const auto infos = data.torrents();
    REQUIRE(infos.size() == 2);
    CHECK(infos[0].id == "1a44193f2bc3900372505c3704e196cd3429d504");
    CHECK(infos[0].run_state == RunState::stopped);
    CHECK(infos[0].save_path == "/tmp/A");
    CHECK(infos[1].run_state == RunState::checking);

    data.apply(fixture_json("qb_maindata_rebuild.json"));
    CHECK(data.rid() == 7);
    CHECK(data.full_updates() == 2);
    REQUIRE(data.torrent_objects().size() == 1);
    CHECK(data.tags().empty());
    CHECK(data.server_state().size() == 1);
    CHECK(data.torrents()[0].run_state == RunState::stopped);  // stoppedUP (5.x)
}

TEST_CASE("maindata ignores non-object replies") {
    MainData data;
    data.apply(nlohmann::json::array());
    CHECK(data.rid() == 0);
    CHECK(data.torrent_objects().empty());
}

TEST_CASE("maindata: selection fields parse and merge from partial updates; never is 0") {
    MainData data;
    const std::string id = "1a44193f2bc3900372505c3704e196cd3429d504";
    data.apply(nlohmann::json::parse(R"({"rid":1,"full_update":true,"torrents":{")" + id + R"(":
        {"name":"a","state":"uploading","progress":1,"category":"tv","tags":"x, y","added_on":1700000000,
         "completion_on":1700000500,"last_activity":1700001000,"seeding_time":3600,"ratio":1.25}}})"));
    auto t = data.torrents().at(0);
    CHECK(t.category == "tv");
    CHECK(t.tags == std::vector<std::string>{"x", "y"});
    CHECK(t.added_on == 1700000000);
    CHECK(t.completion_on == 1700000500);
    CHECK(t.last_activity == 1700001000);
    CHECK(t.seeding_time == 3600);
    CHECK(t.ratio == doctest::Approx(1.25));

    data.apply(nlohmann::json::parse(R"({"rid":2,"torrents":{")" + id + R"(":{"ratio":2.5,"category":"keep","seeding_time":7200}}})"));
    t = data.torrents().at(0);
    CHECK(t.ratio == doctest::Approx(2.5));
    CHECK(t.category == "keep");
    CHECK(t.seeding_time == 7200);
    CHECK(t.completion_on == 1700000500);  // kept from the snapshot

    data.apply(nlohmann::json::parse(R"({"rid":3,"torrents":{")" + id + R"(":{"completion_on":-1,"last_activity":0}}})"));
    t = data.torrents().at(0);
    CHECK(t.completion_on == 0);
    CHECK(t.last_activity == 0);
    CHECK(parse_torrent_info(nlohmann::json::object()).category.empty());
}
