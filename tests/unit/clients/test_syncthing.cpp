#include <doctest/doctest.h>

#include <atomic>

#include "lib/clients/syncthing/client.hpp"
#include "lib/clients/syncthing/event_cursor.hpp"
#include "tests/unit/clients/canned_server.hpp"
#include "tests/unit/clients/fixtures.hpp"

using namespace archctl::clients::syncthing;
using archctl::test::CannedReply;
using archctl::test::CannedServer;
using archctl::test::SeenRequest;

namespace {

Event ev(std::int64_t id, std::string type = "StateChanged") {
    Event e;
    e.id = id;
    e.global_id = id + 100;
    e.type = std::move(type);
    return e;
}

Settings settings_for(const std::string& url) {
    Settings s;
    s.http.node = "archive1";
    s.http.base_url = url;
    s.http.retry = {1, std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
    s.api_key = "St-key-9b1e-distinct";
    return s;
}

}  // namespace

TEST_CASE("event cursor advances, sorts, and reports gaps") {
    EventCursor cursor({"ItemFinished", "FolderCompletion"});
    CHECK(cursor.mask() == "ItemFinished,FolderCompletion");
    CHECK(cursor.since() == 0);
    auto first = cursor.accept({ev(2), ev(1), ev(3)});
    CHECK_FALSE(first.restarted);
    CHECK_FALSE(first.gap);
    REQUIRE(first.events.size() == 3);
    CHECK(first.events.front().id == 1);
    CHECK(cursor.since() == 3);
    CHECK(cursor.accept({}).events.empty());
    CHECK(cursor.since() == 3);
    auto gap = cursor.accept({ev(9), ev(10)});
    CHECK(gap.gap);
    CHECK(cursor.since() == 10);
}

TEST_CASE("event cursor: ids going backwards mean a restart") {
    EventCursor cursor;
    (void)cursor.accept({ev(500), ev(501)});
    auto batch = cursor.accept({ev(1), ev(2)});
    CHECK(batch.restarted);
    CHECK_FALSE(batch.gap);
    CHECK(batch.events.size() == 2);
    CHECK(cursor.since() == 2);
}

TEST_CASE("event cursor: a changed startTime resets to 0") {
    EventCursor cursor;
    CHECK_FALSE(cursor.observe_start_time("2026-12-01T10:00:00Z"));
    (void)cursor.accept({ev(40)});
    CHECK_FALSE(cursor.observe_start_time("2026-12-01T10:00:00Z"));
    CHECK(cursor.since() == 40);
    CHECK(cursor.observe_start_time("2026-12-01T11:00:00Z"));
    CHECK(cursor.since() == 0);
}

TEST_CASE("recorded events parse, null error included") {
    const auto events = parse_events(archctl::test::fixture_json("st_events.json"));
    REQUIRE(events.size() == 3);
    CHECK(events[1].type == "ItemFinished");
    CHECK(events[1].data["error"].is_null());
    CHECK(events[2].global_id == 47);
    const auto completion = parse_completion(events[2].data);
    CHECK(completion.completion == 100.0);
    CHECK(completion.sequence == 9);
    CHECK(completion.remote_state.empty());  // 1.19 has no remoteState
}

TEST_CASE("folder read-modify-write keeps unknown keys and device entry details") {
    const auto raw = archctl::test::fixture_json("st_folder_1.19.json");
    Folder f = Folder::from_json(raw);
    CHECK(f.id == "lab1");
    CHECK(f.devices.size() == 2);
    CHECK(f.fs_watcher_delay_s == 10);
    CHECK(f.versioning_type.empty());
    f.fs_watcher_delay_s = 1;
    f.ignore_perms = true;
    f.devices.pop_back();
    f.devices.push_back("BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB-BBBBBBB");
    f.devices.push_back("CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC");
    const auto out = f.to_json();
    CHECK(out["weakHashThresholdPct"] == 25);
    CHECK(out["minDiskFree"]["unit"] == "%");
    CHECK(out["versioning"]["cleanupIntervalS"] == 3600);
    CHECK(out["fsWatcherDelayS"] == 1);
    CHECK(out["ignorePerms"] == true);
    REQUIRE(out["devices"].size() == 3);
    CHECK(out["devices"][1]["encryptionPassword"] == "x-kept-as-is");
    CHECK(out["devices"][2] == nlohmann::json{{"deviceID", "CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC-CCCCCCC"}});
}

TEST_CASE("client: API key header, 404 as absent, null errors, scan params") {
    CannedServer server([](const SeenRequest& req) -> CannedReply {
        if (req.headers.count("x-api-key") == 0 || req.headers.at("x-api-key") != "St-key-9b1e-distinct") return {403, "CSRF Error\n"};
        if (req.path == "/rest/system/ping") return {200, R"({"ping":"pong"})"};
        if (req.path == "/rest/db/file") return {404, "No such object in the index\n"};
        if (req.path == "/rest/folder/errors") return {200, R"({"errors":null,"folder":"lab1","page":1,"perpage":65536})"};
        if (req.path == "/rest/config/folders/nope") return {404, "No folder with given ID\n"};
        if (req.path == "/rest/db/scan") return {200, ""};
        return {500, "unexpected\n"};
    });
    Client client(settings_for(server.url()));
    CHECK(client.ping().ok());
    auto file = client.file("lab1", "sub/a b.txt");
    REQUIRE(file.ok());
    CHECK_FALSE(file->has_value());
    auto errors = client.folder_errors("lab1");
    REQUIRE(errors.ok());
    CHECK(errors->empty());
    auto folder = client.folder("nope");
    REQUIRE(folder.ok());
    CHECK_FALSE(folder->has_value());
    REQUIRE(client.scan("lab1", {"job/p", "job/m"}).ok());
    const auto seen = server.requests();
    CHECK(seen.back().method == "POST");
    CHECK(seen.back().target == "/rest/db/scan?folder=lab1&sub=job%2Fp&sub=job%2Fm");

    Folder no_path;
    no_path.id = "x";
    CHECK(client.put_folder(no_path).error().code == "ST_INVALID");

    auto bad = Settings(settings_for(server.url()));
    bad.api_key = "wrong-key-value";
    Client wrong(bad);
    auto st = wrong.ping();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == "ST_AUTH");
    CHECK(st.error().message.find("wrong-key-value") == std::string::npos);
}

TEST_CASE("event stream: an empty poll after a restart resets the cursor") {
    std::atomic<int> status_calls{0};
    std::atomic<int> poll{0};
    CannedServer server([&](const SeenRequest& req) -> CannedReply {
        if (req.path == "/rest/system/status") {
            return {200, ++status_calls < 2 ? R"({"myID":"A","startTime":"t1"})" : R"({"myID":"A","startTime":"t2"})"};
        }
        if (req.path == "/rest/events") {
            if (++poll == 1) return {200, R"([{"id":7,"globalID":70,"type":"ItemFinished","time":"x","data":{}}])"};
            return {200, "[]"};
        }
        return {404, ""};
    });
    Client client(settings_for(server.url()));
    EventStream stream(client);
    auto first = stream.next({"ItemFinished"}, std::chrono::seconds(0));
    REQUIRE(first.ok());
    CHECK(first->events.size() == 1);
    auto second = stream.next({"ItemFinished"}, std::chrono::seconds(0));
    REQUIRE(second.ok());
    CHECK(second->restarted);
    auto third = stream.next({"ItemFinished"}, std::chrono::seconds(0));
    REQUIRE(third.ok());
    const auto seen = server.requests();
    std::vector<std::string> polls;
    for (const auto& r : seen) if (r.path == "/rest/events") polls.push_back(r.target);
    REQUIRE(polls.size() == 3);
    CHECK(polls[0].find("since=0") != std::string::npos);
    CHECK(polls[0].find("events=ItemFinished") != std::string::npos);
    CHECK(polls[1].find("since=7") != std::string::npos);
    CHECK(polls[2].find("since=0") != std::string::npos);
}

TEST_CASE("client: ignores read and written as lines, a refused pattern is ST_INVALID; pullErrors counts on 1.19") {
    CannedServer server([](const SeenRequest& req) -> CannedReply {
        if (req.path == "/rest/db/ignores" && req.method == "GET")
            return {200, R"({"ignore":["// archctl hold J1: budget","/J1","*.tmp"],"expanded":["/J1","/J1/**"],"error":null})"};
        if (req.path == "/rest/db/ignores" && req.method == "POST") {
            if (req.body.find("[bad") != std::string::npos) return {200, R"({"ignore":["[bad"],"expanded":[],"error":"syntax error in pattern"})"};
            return {200, R"({"ignore":[],"expanded":[],"error":null})"};
        }
        if (req.path == "/rest/db/status")
            return {200, R"({"state":"syncing","needBytes":100,"inSyncBytes":28,"pullErrors":2,"errors":null})"};
        return {500, "unexpected\n"};
    });
    Client client(settings_for(server.url()));
    auto ign = client.ignores("lab1");
    REQUIRE(ign.ok());
    CHECK(ign->lines == std::vector<std::string>{"// archctl hold J1: budget", "/J1", "*.tmp"});
    CHECK(ign->error.empty());
    REQUIRE(client.set_ignores("lab1", {"*.tmp"}).ok());
    auto seen = server.requests();
    CHECK(seen.back().target == "/rest/db/ignores?folder=lab1");
    CHECK(nlohmann::json::parse(seen.back().body) == nlohmann::json{{"ignore", {"*.tmp"}}});
    auto refused = client.set_ignores("lab1", {"[bad"});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == "ST_INVALID");
    CHECK(refused.error().message.find("syntax error in pattern") != std::string::npos);
    auto status = client.db_status("lab1");
    REQUIRE(status.ok());
    CHECK(status->errors == 2);
    CHECK(status->in_sync_bytes == 28);
}

TEST_CASE("client: db/browse flattens the global tree below a prefix (1.19 types, 1.29.0's integers)") {
    CannedServer server([](const SeenRequest& req) -> CannedReply {
        if (req.path == "/rest/db/browse" && req.target.find("folder=nope") != std::string::npos)
            return {404, "no such folder\n"};
        if (req.path == "/rest/db/browse")
            return {200, R"([{"name":"a","modTime":"2024-01-01T00:00:00Z","size":3,"type":"FILE_INFO_TYPE_DIRECTORY","children":[
                              {"name":"source.torrent","size":120,"type":"FILE_INFO_TYPE_FILE"}]},
                             {"name":"manifest.json","size":900,"type":"FILE_INFO_TYPE_FILE"},
                             {"name":"p","size":4,"type":1,"children":[{"name":"0","size":10,"type":0},{"name":"1","size":20,"type":0}]}])"};
        return {500, "unexpected\n"};
    });
    Client client(settings_for(server.url()));
    auto tree = client.browse("lab1", "J1");
    REQUIRE(tree.ok());
    std::vector<std::string> names;
    for (const auto& e : tree.value()) names.push_back(e.name + (e.directory ? "/" : "") + ":" + std::to_string(e.size));
    CHECK(names == std::vector<std::string>{"J1/a/:3", "J1/a/source.torrent:120", "J1/manifest.json:900", "J1/p/:4", "J1/p/0:10",
                                            "J1/p/1:20"});
    CHECK(server.requests().back().target == "/rest/db/browse?folder=lab1&prefix=J1");
    auto missing = client.browse("nope", "J1");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == "ST_NOT_FOUND");
    CHECK(parse_browse(nlohmann::json::array(), "J1").empty());
    CHECK(parse_browse(nullptr, "J1").empty());
}

TEST_CASE("client: db/need is read whole: a full page is asked again, larger, never page by page") {
    auto page = [](std::size_t rest) {
        nlohmann::json o = {{"progress", {{{"name", "J1/p/0"}, {"size", 10}}}}, {"queued", nullptr}, {"page", 1}};
        o["rest"] = nlohmann::json::array();
        for (std::size_t i = 1; i < rest + 1; ++i) o["rest"].push_back({{"name", "J2/p/" + std::to_string(i)}, {"size", 1}});
        return o.dump();
    };
    CannedServer server([&](const SeenRequest& req) -> CannedReply {
        if (req.path != "/rest/db/need") return {500, "unexpected\n"};
        if (req.target.find("folder=small") != std::string::npos) return {200, page(2)};
        if (req.target.find("perpage=65536") != std::string::npos) return {200, page(65535)};  // 65,536 with progress: full
        return {200, page(70000)};
    });
    Client client(settings_for(server.url()));
    auto small = client.need("small");
    REQUIRE(small.ok());
    CHECK(small->total() == 3);
    CHECK(small->progress.at(0).name == "J1/p/0");
    CHECK(small->queued.empty());
    CHECK(server.requests().back().target == "/rest/db/need?folder=small&page=1&perpage=65536");
    auto large = client.need("large");
    REQUIRE(large.ok());
    CHECK(large->total() == 70001);
    auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[1].target == "/rest/db/need?folder=large&page=1&perpage=65536");
    CHECK(seen[2].target == "/rest/db/need?folder=large&page=1&perpage=131072");
}

TEST_CASE("client: Syncthing's 403 'Host check error' says which host it refused, not that the API key is wrong") {
    CannedServer server([](const SeenRequest&) -> CannedReply { return {403, "Host check error\n"}; });
    Client client(settings_for(server.url()));
    auto st = client.ping();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == "ST_BAD_REQUEST");
    CHECK(st.error().message.find("refused the host name of " + server.url() + " (\"Host check error\")") != std::string::npos);
    CHECK(st.error().message.find("API key") == std::string::npos);
    CHECK(st.error().hint.find("insecureSkipHostcheck") != std::string::npos);
    CHECK(st.error().hint.find("set nodes.archive1.syncthing.url to https://127.0.0.1:" + std::to_string(server.port())) != std::string::npos);
}
