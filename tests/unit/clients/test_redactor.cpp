#include <doctest/doctest.h>

#include "lib/clients/http/redactor.hpp"

using archctl::clients::http::display_url;
using archctl::clients::http::redact_patterns;
using archctl::clients::http::Redactor;

TEST_CASE("registered secrets are masked wherever they appear") {
    Redactor r;
    r.add_secret("Zq8-secret-pass");
    r.add_secret("ab");  // too short to register: would mangle ordinary text
    const auto out = r.redact("login with Zq8-secret-pass failed; again Zq8-secret-pass; ab stays");
    CHECK(out.find("Zq8-secret-pass") == std::string::npos);
    CHECK(out == "login with <redacted> failed; again <redacted>; ab stays");
}

TEST_CASE("a secret containing another is masked whole") {
    Redactor r;
    r.add_secret("key");
    r.add_secret("longkey123");
    CHECK(r.redact("x longkey123 y") == "x <redacted> y");
}

TEST_CASE("cookies and auth headers are masked without knowing the value") {
    CHECK(redact_patterns("Set-Cookie: SID=abcDEF0123456789; HttpOnly") == "Set-Cookie: <redacted>");
    CHECK(redact_patterns("cookie SID=abcDEF0123; path=/") == "cookie SID=<redacted>; path=/");
    CHECK(redact_patterns("QBT_SID_8080=zzzz; Expires=x") == "QBT_SID_8080=<redacted>; Expires=x");
    CHECK(redact_patterns("X-API-Key: k3y-value\r\nHost: x") == "X-API-Key: <redacted>\r\nHost: x");
    CHECK(redact_patterns("Authorization: Bearer qbt_abc") == "Authorization: <redacted>");
}

TEST_CASE("password and key fields of forms, queries and JSON are masked") {
    CHECK(redact_patterns("username=admin&password=hunter22&x=1") == "username=admin&password=<redacted>&x=1");
    CHECK(redact_patterns("/rest/x?apikey=abc&folder=f") == "/rest/x?apikey=<redacted>&folder=f");
    CHECK(redact_patterns(R"({"web_ui_password":"pw1234","x":1})") == R"({"web_ui_password":"<redacted>","x":1})");
    CHECK(redact_patterns(R"({"apiKey":"abcd","address":"127.0.0.1"})") == R"({"apiKey":"<redacted>","address":"127.0.0.1"})");
    // Ordinary words are left alone.
    CHECK(redact_patterns("the password was wrong") == "the password was wrong");
}

TEST_CASE("display_url drops user info and query") {
    CHECK(display_url("http://admin:pw@127.0.0.1:8080/api?x=secret") == "http://127.0.0.1:8080/api");
    CHECK(display_url("https://nas:8384") == "https://nas:8384");
    CHECK(display_url("http://h/p#frag") == "http://h/p");
}
