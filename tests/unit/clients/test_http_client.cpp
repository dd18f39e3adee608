#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "lib/clients/http/http_client.hpp"
#include "tests/unit/clients/canned_server.hpp"

using namespace archctl::clients::http;
using archctl::test::CannedReply;
using archctl::test::CannedServer;
using archctl::test::SeenRequest;
using std::chrono::milliseconds;

namespace {

struct Recorder {
    std::vector<milliseconds> slept;
    std::vector<std::string> log;
};

ClientSettings settings_for(const std::string& url, Recorder& rec, int attempts = 3) {
    ClientSettings s;
    s.node = "nas";
    s.service = "qBittorrent";
    s.base_url = url;
    s.connect_timeout = milliseconds(2000);
    s.total_timeout = milliseconds(5000);
    s.retry = {attempts, milliseconds(5), milliseconds(50)};
    s.sleep = [&rec](milliseconds d) { rec.slept.push_back(d); };
    s.log = [&rec](const std::string& line) { rec.log.push_back(line); };
    return s;
}

}  // namespace

TEST_CASE("connection refused: retried with backoff, then a clear error naming node and URL") {
    Recorder rec;
    const int port = archctl::test::closed_port();
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    HttpClient client(settings_for(base, rec));
    Request r;
    r.path = "/api/v2/app/version";
    r.query = {{"token", "query-secret-value"}};
    auto result = client.send(r);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == "HTTP_UNREACHABLE");
    CHECK(result.error().message == "cannot reach qBittorrent on 'nas' (" + base + "): connection refused");
    CHECK(client.request_count() == 3);
    CHECK(rec.slept == std::vector<milliseconds>{milliseconds(5), milliseconds(10)});
    for (const auto& line : rec.log) CHECK(line.find("query-secret-value") == std::string::npos);
}

TEST_CASE("5xx is retried, 4xx is returned at once, one connection is reused") {
    std::atomic<int> calls{0};
    CannedServer server([&](const SeenRequest& req) {
        if (req.path == "/flaky") return ++calls < 2 ? CannedReply{503, "busy"} : CannedReply{200, "fine"};
        return CannedReply{404, "Not Found"};
    });
    Recorder rec;
    HttpClient client(settings_for(server.url(), rec));
    Request flaky;
    flaky.path = "/flaky";
    auto ok = client.send(flaky);
    REQUIRE(ok.ok());
    CHECK(ok->status == 200);
    CHECK(ok->body == "fine");
    Request missing;
    missing.path = "/missing";
    auto nf = client.send(missing);
    REQUIRE(nf.ok());
    CHECK(nf->status == 404);
    CHECK(client.request_count() == 3);
    CHECK(rec.slept.size() == 1);
    CHECK(server.connections() == 1);
}

TEST_CASE("cookies set by the server are replayed, whatever their name, and can be cleared") {
    CannedServer server([](const SeenRequest& req) {
        if (req.path == "/login") return CannedReply{200, "Ok.", {"Set-Cookie: QBT_SID_8080=c00kie; HttpOnly; path=/"}};
        auto it = req.headers.find("cookie");
        return CannedReply{200, it == req.headers.end() ? "none" : it->second};
    });
    Recorder rec;
    HttpClient client(settings_for(server.url(), rec));
    Request login;
    login.method = Method::post;
    login.path = "/login";
    REQUIRE(client.send(login).ok());
    Request echo;
    echo.path = "/echo";
    CHECK(client.send(echo)->body == "QBT_SID_8080=c00kie");
    client.clear_cookies();
    CHECK(client.send(echo)->body == "none");
}

TEST_CASE("forms, multipart, raw bodies, queries and custom methods are sent as asked") {
    CannedServer server([](const SeenRequest&) { return CannedReply{200, "{}"}; });
    Recorder rec;
    HttpClient client(settings_for(server.url(), rec));

    Request form;
    form.method = Method::post;
    form.path = "/form";
    form.body_kind = BodyKind::form;
    form.form = {{"hashes", "a|b"}, {"password", "p w&x"}};
    REQUIRE(client.send(form).ok());

    Request multi;
    multi.method = Method::post;
    multi.path = "/add";
    multi.body_kind = BodyKind::multipart;
    multi.form = {{"savepath", "/srv/x"}};
    multi.files = {{"torrents", "archctl-1.torrent", "application/x-bittorrent", std::string("d4:info\0e", 9)}};
    REQUIRE(client.send(multi).ok());

    Request put;
    put.method = Method::put;
    put.path = "/rest/config/folders/f1";
    put.body_kind = BodyKind::raw;
    put.content_type = "application/json";
    put.body = R"({"id":"f1"})";
    put.headers = {"X-API-Key: abc123key"};
    REQUIRE(client.send(put).ok());

    Request query;
    query.method = Method::del;
    query.path = "/rest/db/file";
    query.query = {{"file", "sub/ünï code.txt"}};
    REQUIRE(client.send(query).ok());

    const auto seen = server.requests();
    REQUIRE(seen.size() == 4);
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].body == "hashes=a%7Cb&password=p%20w%26x");
    CHECK(seen[0].headers.at("content-type") == "application/x-www-form-urlencoded");
    CHECK(seen[1].headers.at("content-type").rfind("multipart/form-data", 0) == 0);
    CHECK(seen[1].body.find("filename=\"archctl-1.torrent\"") != std::string::npos);
    CHECK(seen[1].body.find(std::string("d4:info\0e", 9)) != std::string::npos);
    CHECK(seen[1].body.find("/srv/x") != std::string::npos);
    CHECK(seen[2].method == "PUT");
    CHECK(seen[2].body == R"({"id":"f1"})");
    CHECK(seen[2].headers.at("x-api-key") == "abc123key");
    CHECK(seen[3].method == "DELETE");
    CHECK(seen[3].target == "/rest/db/file?file=sub%2F%C3%BCn%C3%AF%20code.txt");
    for (const auto& line : rec.log) {
        CHECK(line.find("abc123key") == std::string::npos);
        CHECK(line.find("p w") == std::string::npos);
    }
}

TEST_CASE("a per-request total timeout overrides the client's (long polls)") {
    CannedServer server([](const SeenRequest&) { return CannedReply{200, "[]"}; });
    Recorder rec;
    auto s = settings_for(server.url(), rec, 1);
    s.total_timeout = milliseconds(1);  // too short for anything
    HttpClient client(s);
    Request r;
    r.path = "/events";
    r.total_timeout = milliseconds(5000);
    auto result = client.send(r);
    REQUIRE(result.ok());
    CHECK(result->body == "[]");
}

TEST_CASE("insecure TLS is warned about once per https client") {
    std::vector<std::string> warnings;
    ClientSettings s;
    s.node = "nas";
    s.service = "Syncthing";
    s.base_url = "https://127.0.0.1:1";
    s.tls = TlsVerification::insecure;
    s.warn = [&](const std::string& w) { warnings.push_back(w); };
    HttpClient client(s);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] == "TLS certificate verification is off for Syncthing on 'nas' (https://127.0.0.1:1) (insecure_tls = true)");
}

TEST_CASE("an http:// URL whose server speaks TLS is named with the https:// URL to set") {
    // Syncthing's TLS GUI redirects a plain request to https://; a Go or nginx TLS port answers
    // 400 saying a plain request reached it.
    CannedServer server([](const SeenRequest& req) -> CannedReply {
        if (req.path == "/redirect") return {307, "", {"Location: https://127.0.0.1:" + std::string(req.headers.at("host")).substr(10) + "/redirect"}};
        if (req.path == "/go") return {400, "Client sent an HTTP request to an HTTPS server.\n"};
        if (req.path == "/nginx") return {400, "<html><head><title>400 The plain HTTP request was sent to HTTPS port</title>"};
        return {307, "", {"Location: http://elsewhere.example/"}};
    });
    Recorder rec;
    HttpClient client(settings_for(server.url(), rec, 1));
    const std::string https = "https://127.0.0.1:" + std::to_string(server.port());
    for (const char* path : {"/redirect", "/go", "/nginx"}) {
        Request r;
        r.path = path;
        auto result = client.send(r);
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().code == "HTTP_TLS");
        CHECK(result.error().message == "cannot reach qBittorrent on 'nas' (" + server.url() + "): the server speaks TLS (HTTPS), not plain HTTP");
        CHECK(result.error().hint.find("set nodes.nas.qbittorrent.url to " + https + " (") == 0);
    }
    // A redirect to somewhere else stays a response for the service client to read.
    Request other;
    other.path = "/other";
    auto result = client.send(other);
    REQUIRE(result.ok());
    CHECK(result->status == 307);
    CHECK(result->location == "http://elsewhere.example/");
}
