#include <doctest/doctest.h>

#include "lib/clients/qbittorrent/capabilities.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "tests/unit/clients/fixtures.hpp"

using namespace archctl::clients::qbittorrent;

namespace {
Capabilities caps(const char* app, const char* api) { return Capabilities(*Version::parse(app), *Version::parse(api)); }
}  // namespace

TEST_CASE("versions parse leniently and compare per component") {
    auto v = Version::parse(" v4.5.2\n");
    REQUIRE(v);
    CHECK(v->numeric() == "4.5.2");
    CHECK(v->text == "v4.5.2");
    CHECK(Version::parse("v5.0.0beta1")->numeric() == "5.0.0");
    CHECK(Version::parse("2.8.19")->numeric() == "2.8.19");
    CHECK_FALSE(Version::parse("banana"));
    CHECK(*Version::parse("2.9") < *Version::parse("2.10"));
    CHECK(*Version::parse("2.11") >= *Version::parse("2.11.0"));
    CHECK(*Version::parse("2.8.19") < *Version::parse("2.11.0"));
}

TEST_CASE("known_webapi: plain releases of the version map only") {
    auto known = [](const char* app) {
        auto w = known_webapi(*Version::parse(app));
        return w ? w->text : std::string("-");
    };
    CHECK(known("v4.5.2") == "2.8.19");
    CHECK(known("4.5.5") == "2.8.19");
    CHECK(known("v4.6.7") == "2.9.3");
    CHECK(known("v5.0.0") == "2.11.2");
    CHECK(known("v5.1.4") == "2.11.4");
    CHECK(known("v4.5.0") == "-");
    CHECK(known("v4.6.0") == "-");
    CHECK(known("v5.2.0") == "-");
    CHECK(known("v5.0.0beta1") == "-");
    CHECK(known("v4.5.2.1") == "-");
    CHECK(known("v4.5") == "-");
    CHECK(known("v4.5.2-custom") == "-");
}

TEST_CASE("capability table: 4.5.2 (WebAPI 2.8.19)") {
    const auto c = caps("v4.5.2", "2.8.19");
    CHECK(c.has(Feature::export_torrent));
    CHECK_FALSE(c.has(Feature::stop_start));
    CHECK_FALSE(c.has(Feature::login_status_codes));
    CHECK(c.stop_endpoint() == "torrents/pause");
    CHECK(c.start_endpoint() == "torrents/resume");
    CHECK(c.skip_check_param() == "skip_checking");
}

TEST_CASE("capability table: 4.4 has no export") {
    CHECK_FALSE(caps("v4.4.5", "2.8.5").has(Feature::export_torrent));
}

TEST_CASE("capability table: 5.0 / 5.1 / 5.2 / post-5.2") {
    const auto five = caps("v5.0.3", "2.11.2");
    CHECK(five.has(Feature::stop_start));
    CHECK(five.stop_endpoint() == "torrents/stop");
    CHECK(five.start_endpoint() == "torrents/start");
    CHECK_FALSE(five.has(Feature::no_content_replies));
    CHECK(caps("v5.1.4", "2.11.4").stop_endpoint() == "torrents/stop");
    const auto five_two = caps("v5.2.0", "2.15.1");
    CHECK(five_two.has(Feature::no_content_replies));
    CHECK(five_two.has(Feature::login_status_codes));
    CHECK(five_two.has(Feature::add_returns_json));
    CHECK(five_two.skip_check_param() == "skip_checking");
    CHECK(caps("v5.3.0alpha1", "2.16.0").skip_check_param() == "seedMode");
}

TEST_CASE("state mapping: 4.5.2 names from recorded torrents/info") {
    const auto array = archctl::test::fixture_json("qb_info_4.5.2.json");
    std::vector<TorrentInfo> infos;
    for (const auto& o : array) infos.push_back(parse_torrent_info(o));
    REQUIRE(infos.size() == 3);
    CHECK(infos[0].run_state == RunState::stopped);
    CHECK(infos[0].progress == 1.0);
    CHECK(infos[0].infohash_v2.empty());
    CHECK(infos[1].run_state == RunState::stopped);
    CHECK(infos[1].id == "3afaf5c0178dfcfa9a0210fbf9bccb28e590407c");
    CHECK(infos[1].infohash_v1 == "0c9573f63fcbd0d37fb58224c25cc44e43b735af");
    CHECK(infos[1].amount_left == 1081354);
    CHECK(infos[2].run_state == RunState::checking);
    CHECK(infos[2].infohash_v1.empty());
    CHECK(is_busy(infos[2].run_state));
}

TEST_CASE("state mapping: 5.x names from recorded torrents/info") {
    const auto array = archctl::test::fixture_json("qb_info_5.x.json");
    std::map<std::string, RunState> by_name;
    for (const auto& o : array) {
        const auto t = parse_torrent_info(o);
        by_name[t.name] = t.run_state;
    }
    CHECK(by_name["a"] == RunState::stopped);      // stoppedUP
    CHECK(by_name["b"] == RunState::stopped);      // stoppedDL
    CHECK(by_name["c"] == RunState::running);      // stalledUP
    CHECK(by_name["d"] == RunState::queued);       // queuedDL
    CHECK(by_name["e"] == RunState::metadata);     // forcedMetaDL
    CHECK(by_name["f"] == RunState::missing_files);
    CHECK(by_name["g"] == RunState::moving);
    CHECK(by_name["h"] == RunState::unknown);      // allocating: listed in the wiki, never emitted
    CHECK(by_name["i"] == RunState::checking);
    CHECK(by_name["j"] == RunState::downloading);  // forcedDL
    CHECK(by_name["k"] == RunState::error);
    CHECK(is_busy(RunState::unknown));
    CHECK_FALSE(is_started(RunState::stopped));
    CHECK(is_started(RunState::downloading));
}

TEST_CASE("file list: selected = priority > 0, complete = selected and progress exactly 1") {
    const auto files = parse_files(archctl::test::fixture_json("qb_files_hybrid.json"));
    REQUIRE(files.size() == 6);
    CHECK(files[5].name == "payload/ünïcödé ファイル.txt");
    CHECK(files[0].size == 6303801);
    CHECK(selected_files(files) == std::vector<std::uint32_t>{0, 1, 2, 4, 5});
    CHECK(complete_files(files) == std::vector<std::uint32_t>{1, 2});
}

namespace {
bool same_files(const std::vector<TorrentFile>& a, const std::vector<TorrentFile>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].index != b[i].index || a[i].name != b[i].name || a[i].size != b[i].size || a[i].progress != b[i].progress ||
            a[i].priority != b[i].priority)
            return false;
    return true;
}
}  // namespace

TEST_CASE("the file list read from the body without a document equals the document's") {
    const nlohmann::json fixture = archctl::test::fixture_json("qb_files_hybrid.json");
    auto streamed = parse_files_body(fixture.dump());
    REQUIRE(streamed);
    CHECK(same_files(*streamed, parse_files(fixture)));
    for (const char* body : {
             R"([])", R"({})", R"(5)", R"([1, "x", null, [ {"index": 3} ]])",
             R"([{"index": "3", "name": 7, "size": 1.5e3, "progress": 1, "priority": true, "piece_range": [0, 4],
                 "extra": {"index": 9, "name": "no"}, "availability": -1},
                {"index": 2, "index": 4, "name": "a/b", "size": 18446744073709551615, "priority": 6, "progress": 0.5}])",
             R"([{"name": ["x"], "index": {"a": 1}, "size": -3}])"}) {
        CAPTURE(body);
        auto s = parse_files_body(body);
        REQUIRE(s);
        CHECK(same_files(*s, parse_files(nlohmann::json::parse(body))));
    }
    CHECK_FALSE(parse_files_body("[{\"index\": 1"));
    CHECK_FALSE(parse_files_body(""));
}

TEST_CASE("parsers tolerate junk") {
    CHECK(parse_files(nlohmann::json::object()).empty());
    CHECK(parse_torrent_info(nlohmann::json::array()).id.empty());
    const auto t = parse_torrent_info(nlohmann::json{{"hash", 5}, {"progress", "x"}, {"state", nullptr}});
    CHECK(t.id.empty());
    CHECK(t.run_state == RunState::unknown);
}
