// qbittorrent::Client against recorded replies of versions this machine cannot run (5.x) and of
// 4.5.2 failure modes (wrong password, ban). 4.5.2's normal behaviour is tested live in
// tests/integration/test_clients.py.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "lib/clients/qbittorrent/client.hpp"
#include "tests/unit/clients/canned_server.hpp"

using namespace archctl::clients;
using namespace archctl::clients::qbittorrent;
using archctl::test::CannedReply;
using archctl::test::CannedServer;
using archctl::test::SeenRequest;

namespace {

constexpr const char* k_password = "Pw-7f3c2a-distinct";

enum class Login { ok_text, fails_text, banned, no_content, unauthorized };

struct FakeQb {
    std::string app = "v4.5.2";
    std::string api = "2.8.19";
    Login login = Login::ok_text;
    std::string add_reply = "Ok.";
    int add_status = 200;
    std::atomic<int> expire_sessions{0};  // answer this many authenticated calls with 403
    std::atomic<int> logins{0};

    CannedReply operator()(const SeenRequest& req) {
        if (req.path == "/api/v2/auth/login") {
            ++logins;
            switch (login) {
                case Login::ok_text: return {200, "Ok.", {"Set-Cookie: SID=s3ss10n; HttpOnly; path=/"}};
                case Login::fails_text: return {200, "Fails."};
                case Login::banned: return {403, "Your IP address has been banned after too many failed authentication attempts."};
                case Login::no_content: return {204, "", {"Set-Cookie: QBT_SID_8080=s3ss10n; HttpOnly; path=/"}};
                case Login::unauthorized: return {401, "Unauthorized"};
            }
        }
        if (req.headers.count("cookie") == 0) return {403, "Forbidden"};
        if (expire_sessions > 0) {
            --expire_sessions;
            return {403, "Forbidden"};
        }
        if (req.path == "/api/v2/app/version") return {200, app};
        if (req.path == "/api/v2/app/webapiVersion") return {200, api};
        if (req.path == "/api/v2/torrents/add") return {add_status, add_reply};
        if (req.path == "/api/v2/torrents/info") return {200, "[]"};
        if (req.path == "/api/v2/torrents/files") return {404, "Not Found"};
        const bool five_two = api.rfind("2.15", 0) == 0;
        return {five_two ? 204 : 200, ""};
    }
};

Settings settings_for(const std::string& url) {
    Settings s;
    s.http.node = "nas";
    s.http.base_url = url;
    s.http.retry = {1, std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
    s.username = "admin";
    s.password = k_password;
    s.password_file = "/etc/archctl/nas.qb";
    return s;
}

std::vector<SeenRequest> calls_to(const CannedServer& server, const std::string& path) {
    std::vector<SeenRequest> out;
    for (const auto& r : server.requests()) if (r.path == path) out.push_back(r);
    return out;
}

}  // namespace

TEST_CASE("4.x: wrong password (200 Fails.) is QB_AUTH naming node and password file, never the password") {
    FakeQb fake;
    fake.login = Login::fails_text;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    auto st = client.capabilities();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == "QB_AUTH");
    CHECK(st.error().message ==
          "login to qBittorrent on 'nas' failed: wrong username or password (password from '/etc/archctl/nas.qb')");
    CHECK(st.error().message.find(k_password) == std::string::npos);
    CHECK(st.error().hint.find(k_password) == std::string::npos);
}

TEST_CASE("ban (403 + banned body) is QB_BANNED") {
    FakeQb fake;
    fake.login = Login::banned;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    auto st = client.login();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == "QB_BANNED");
    CHECK(st.error().message.find("banned") != std::string::npos);
}

TEST_CASE("5.2+: login 204 succeeds, 401 is QB_AUTH") {
    FakeQb fake;
    fake.app = "v5.2.0";
    fake.api = "2.15.1";
    fake.login = Login::no_content;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    REQUIRE(client.login().ok());
    auto caps = client.capabilities();
    REQUIRE(caps.ok());
    CHECK(caps->has(Feature::login_status_codes));
    CHECK(client.recheck({"aa00000000000000000000000000000000000001"}).ok());  // 204 is success

    fake.login = Login::unauthorized;
    Client other(settings_for(server.url()));
    auto st = other.login();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == "QB_AUTH");
}

TEST_CASE("a 403 on a call logs in again once and repeats the call") {
    FakeQb fake;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    REQUIRE(client.capabilities().ok());
    CHECK(fake.logins == 1);
    fake.expire_sessions = 1;
    REQUIRE(client.all_torrents().ok());
    CHECK(fake.logins == 2);
    fake.expire_sessions = 5;  // still 403 after the new login: reported, not looped
    auto again = client.all_torrents();
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == "QB_FORBIDDEN");
    CHECK(fake.logins == 3);
}

TEST_CASE("4.x uses pause/resume, 5.x stop/start; add sends both paused and stopped") {
    for (const auto& [app, api, stop_path, start_path] :
         std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
             {"v4.5.2", "2.8.19", "/api/v2/torrents/pause", "/api/v2/torrents/resume"},
             {"v5.0.3", "2.11.2", "/api/v2/torrents/stop", "/api/v2/torrents/start"}}) {
        FakeQb fake;
        fake.app = app;
        fake.api = api;
        CannedServer server(std::ref(fake));
        Client client(settings_for(server.url()));
        const std::vector<std::string> ids = {"aa00000000000000000000000000000000000001", "aa00000000000000000000000000000000000002"};
        REQUIRE(client.stop(ids).ok());
        REQUIRE(client.start(ids).ok());
        REQUIRE(calls_to(server, stop_path).size() == 1);
        CHECK(calls_to(server, stop_path)[0].body ==
              "hashes=aa00000000000000000000000000000000000001%7Caa00000000000000000000000000000000000002");
        CHECK(calls_to(server, start_path).size() == 1);

        AddTorrent add;
        add.metainfo = "d4:infod4:name1:xee";
        add.save_path = "/srv/cache/torrents/x";
        REQUIRE(client.add(add).ok());
        REQUIRE(client.add(add).ok());
        const auto adds = calls_to(server, "/api/v2/torrents/add");
        REQUIRE(adds.size() == 2);
        const auto& body = adds[0].body;
        for (const char* field : {"savepath", "autoTMM", "paused", "stopped", "skip_checking", "contentLayout", "useDownloadPath"}) {
            CHECK_MESSAGE(body.find(std::string("name=\"") + field + "\"") != std::string::npos, field);
        }
        CHECK(body.find("Original") != std::string::npos);
        CHECK(body.find("/srv/cache/torrents/x") != std::string::npos);
        // Unique part filenames: qBittorrent keys uploads by filename.
        const auto name_of = [](const std::string& b) {
            const auto pos = b.find("filename=\"");
            return b.substr(pos, b.find('"', pos + 10) - pos);
        };
        CHECK(name_of(adds[0].body) != name_of(adds[1].body));
    }
}

TEST_CASE("add refused and invalid torrents are explicit errors") {
    FakeQb fake;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    AddTorrent add;
    add.metainfo = "x";
    add.save_path = "/srv/x";
    fake.add_reply = "Fails.";
    CHECK(client.add(add).error().code == "QB_ADD_REFUSED");
    fake.add_status = 415;
    fake.add_reply = "Error: 'archctl-1.torrent' is not a valid torrent file.";
    CHECK(client.add(add).error().code == "QB_INVALID_TORRENT");
}

TEST_CASE("add sets its tags in the add itself; deleteTags drops a tag everywhere") {
    FakeQb fake;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    AddTorrent add;
    add.metainfo = "x";
    add.save_path = "/srv/x";
    REQUIRE(client.add(add).ok());
    add.tags = {"archctl-job-20261201-183412-7f3c", "second"};
    REQUIRE(client.add(add).ok());
    const auto adds = calls_to(server, "/api/v2/torrents/add");
    REQUIRE(adds.size() == 2);
    CHECK(adds[0].body.find("name=\"tags\"") == std::string::npos);
    CHECK(adds[1].body.find("name=\"tags\"\r\n\r\narchctl-job-20261201-183412-7f3c,second\r\n") != std::string::npos);
    REQUIRE(client.delete_tags({"archctl-job-20261201-183412-7f3c"}).ok());
    REQUIRE(client.delete_tags({}).ok());
    const auto deletes = calls_to(server, "/api/v2/torrents/deleteTags");
    REQUIRE(deletes.size() == 1);
    CHECK(deletes[0].body == "tags=archctl-job-20261201-183412-7f3c");
}

TEST_CASE("5.2 add: JSON counts, 409 when nothing was added") {
    FakeQb fake;
    fake.app = "v5.2.0";
    fake.api = "2.15.1";
    fake.login = Login::no_content;
    fake.add_reply = R"({"success_count":1,"failure_count":0,"pending_count":0,"added_torrent_ids":["aa"]})";
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    AddTorrent add;
    add.metainfo = "x";
    add.save_path = "/srv/x";
    CHECK(client.add(add).ok());
    fake.add_status = 409;
    fake.add_reply = R"({"success_count":0,"failure_count":1,"pending_count":0,"added_torrent_ids":[]})";
    CHECK(client.add(add).error().code == "QB_ADD_REFUSED");
}

TEST_CASE("delete keeps data unless the test-only value is passed; unknown hash is QB_NOT_FOUND") {
    FakeQb fake;
    CannedServer server(std::ref(fake));
    Client client(settings_for(server.url()));
    REQUIRE(client.remove({"aa00000000000000000000000000000000000001"}, DeleteData::no).ok());
    REQUIRE(client.remove({"aa00000000000000000000000000000000000001"}, DeleteData::yes_for_tests).ok());
    const auto deletes = calls_to(server, "/api/v2/torrents/delete");
    REQUIRE(deletes.size() == 2);
    CHECK(deletes[0].body.find("deleteFiles=false") != std::string::npos);
    CHECK(deletes[1].body.find("deleteFiles=true") != std::string::npos);
    auto files = client.files("bb00000000000000000000000000000000000001");
    REQUIRE_FALSE(files.ok());
    CHECK(files.error().code == "QB_NOT_FOUND");
    CHECK(files.error().message == "torrent 'bb00000000000000000000000000000000000001' not found on qBittorrent 'nas'");
}

TEST_CASE("the password never reaches the request log") {
    FakeQb fake;
    CannedServer server(std::ref(fake));
    auto s = settings_for(server.url());
    std::vector<std::string> lines;
    s.http.log = [&](const std::string& l) { lines.push_back(l); };
    Client client(s);
    REQUIRE(client.capabilities().ok());
    REQUIRE_FALSE(lines.empty());
    for (const auto& l : lines) CHECK(l.find(k_password) == std::string::npos);
    CHECK(client.request_count() == 2);  // login, app/version (4.5.2's WebAPI is known)
}

TEST_CASE("capabilities: a release of the version map costs no app/webapiVersion; others ask it") {
    for (const auto& [app, api, asked] : std::vector<std::tuple<std::string, std::string, bool>>{
             {"v4.5.2", "2.8.19", false}, {"v5.1.4", "2.11.4", false}, {"v5.2.0", "2.15.1", true},
             {"v5.0.0beta1", "2.10.9", true}, {"v4.5.0", "2.8.18", true}}) {
        CAPTURE(app);
        FakeQb fake;
        fake.app = app;
        fake.api = api;
        CannedServer server(std::ref(fake));
        Client client(settings_for(server.url()));
        auto caps = client.capabilities();
        REQUIRE(caps.ok());
        CHECK(caps->webapi().text == api);
        CHECK(calls_to(server, "/api/v2/app/webapiVersion").size() == (asked ? 1U : 0U));
        REQUIRE(client.capabilities().ok());  // read once per client
        CHECK(client.request_count() == (asked ? 3U : 2U));
    }
}

namespace {

// FakeQb whose torrents/export answers after `delay` (qBittorrent builds a v2/hybrid export on
// its main thread).
struct SlowExport {
    FakeQb qb;
    std::chrono::milliseconds delay;
    CannedReply operator()(const SeenRequest& req) {
        if (req.path != "/api/v2/torrents/export" || req.headers.count("cookie") == 0) return qb(req);
        std::this_thread::sleep_for(delay);
        return {200, "d4:infod4:name1:aee", {"Content-Type: application/x-bittorrent"}};
    }
};

}  // namespace

TEST_CASE("an export slower than its limit is asked once and named with the setting to raise") {
    SlowExport slow{{}, std::chrono::milliseconds(800)};
    CannedServer server(std::ref(slow));
    Settings s = settings_for(server.url());
    s.http.retry = {3, std::chrono::milliseconds(1), std::chrono::milliseconds(1)};  // other calls may retry
    s.http.total_timeout = std::chrono::milliseconds(30000);
    s.export_timeout = std::chrono::milliseconds(200);
    Client client(s);
    auto exported = client.export_torrent("0123456789abcdef0123456789abcdef01234567");
    REQUIRE_FALSE(exported.ok());
    // A repeat would queue a second export behind the one qBittorrent is still building.
    CHECK(calls_to(server, "/api/v2/torrents/export").size() == 1);
    CHECK(exported.error().code == "QB_TIMEOUT");
    CHECK(exported.error().message.find("exporting torrent '0123456789ab'") != std::string::npos);
    CHECK(exported.error().message.find("'nas'") != std::string::npos);
    CHECK(exported.error().hint.find("nodes.nas.qbittorrent.export_timeout") != std::string::npos);
    CHECK(exported.error().message.find('\n') == std::string::npos);
}

TEST_CASE("an export's limit is its own setting, not the client's request limit") {
    SlowExport slow{{}, std::chrono::milliseconds(900)};
    CannedServer server(std::ref(slow));
    Settings s = settings_for(server.url());
    s.http.total_timeout = std::chrono::milliseconds(300);
    s.export_timeout = std::chrono::milliseconds(10000);
    Client client(s);
    REQUIRE(client.capabilities().ok());
    auto exported = client.export_torrent("0123456789abcdef0123456789abcdef01234567");
    REQUIRE(exported.ok());
    CHECK(*exported == "d4:infod4:name1:aee");
    CHECK(calls_to(server, "/api/v2/torrents/export").size() == 1);
}

TEST_CASE("the default export limit is minutes, not the 30 s of other requests") {
    CHECK(Settings{}.export_timeout >= std::chrono::minutes(5));
}
