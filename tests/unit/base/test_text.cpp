#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/text.hpp"

using archctl::dump_json;
using archctl::printable;
using archctl::terminal_text;

TEST_CASE("terminal text: escapes, BEL, C1 controls, bidi and bad UTF-8 are shown visibly; lines and tabs stay") {
    CHECK(terminal_text("plain\tname\nsecond line") == "plain\tname\nsecond line");
    CHECK(terminal_text("evil\x1b]0;PWNED\x07\x1b[2J\x1b[31m") == "evil\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31m");
    CHECK(terminal_text("a\rb") == "a\\x0db");
    CHECK(terminal_text("csi \xc2\x9b" "2J") == "csi \\u009B2J");                // U+009B, a C1 CSI
    CHECK(terminal_text("rtl \xe2\x80\xae" "gpj.exe") == "rtl \\u202Egpj.exe");  // U+202E
    CHECK(terminal_text("ab\xff\xfe") == "ab\\xff\\xfe");
    CHECK(terminal_text("caf\xc3\xa9 \xe6\x97\xa5") == "caf\xc3\xa9 \xe6\x97\xa5");  // UTF-8 is kept as it is
    CHECK(printable("x\ny") == "x\\x0ay");
}

TEST_CASE("dump_json: UTF-8 as nlohmann writes it; bytes that are not UTF-8 as \\udcXX, never a throw") {
    nlohmann::json doc = {{"ok", false}, {"arg", "caf\xc3\xa9"}, {"n", 3}, {"list", {1, "two", nullptr}}, {"empty", nlohmann::json::object()}};
    CHECK(dump_json(doc, 2) == doc.dump(2));
    CHECK(dump_json(doc) == doc.dump());
    nlohmann::json bad = {{"error", {{"message", std::string("no torrent matching 'ab\xff\xfe'")}, {"code", "NOT_FOUND"}}},
                          {std::string("k\xff"), {std::string("v\x80\n\"")}},
                          {"ok", false}};
    CHECK_THROWS(bad.dump(2));
    const std::string text = dump_json(bad, 2);
    // One JSON text (RFC 8259 lets a string escape any code point; nlohmann's parser refuses a
    // lone surrogate, so it reads the text with those escapes taken out).
    std::string without = text;
    for (std::size_t at = without.find("\\udc"); at != std::string::npos; at = without.find("\\udc", at)) without.replace(at, 6, "_");
    nlohmann::json back;
    REQUIRE_NOTHROW(back = nlohmann::json::parse(without));
    CHECK(back["error"]["message"] == "no torrent matching 'ab__'");
    CHECK(text.find("\\udcff\\udcfe") != std::string::npos);
    CHECK(text.find("\"k\\udcff\": [\n    \"v\\udc80\\n\\\"\"\n  ]") != std::string::npos);
    CHECK(dump_json(nlohmann::json(std::string("\x01\xc0"))) == "\"\\u0001\\udcc0\"");
    // With the bad bytes taken out, the layout is dump(2)'s.
    nlohmann::json good = {{"error", {{"message", "m"}, {"code", "NOT_FOUND"}}}, {"k", {"v"}}, {"ok", false}};
    nlohmann::json same = {{"error", {{"message", "m"}, {"code", "NOT_FOUND"}}}, {"k", {std::string("v\xff")}}, {"ok", false}};
    std::string expected = good.dump(2);
    expected.replace(expected.find("\"v\""), 3, "\"v\\udcff\"");
    CHECK(dump_json(same, 2) == expected);
}

TEST_CASE("clipped: an argument echoed back is whole up to the limit, else cut at a character with its size") {
    CHECK(archctl::clipped("abcdef", 6) == "abcdef");
    CHECK(archctl::clipped(std::string(100000, 'a')) == std::string(80, 'a') + "… (100000 bytes)");
    CHECK(archctl::clipped("ab\xc3\xa9z", 3) == "ab… (5 bytes)");  // never inside é
}

TEST_CASE("one_line: a service's error text folds to one line, trimmed, its line breaks as '; '") {
    CHECK(archctl::one_line("plain") == "plain");
    CHECK(archctl::one_line("  open x: no space left on device\n") == "open x: no space left on device");
    CHECK(archctl::one_line("pull failed\r\n  disk full\n\nretrying") == "pull failed; disk full; retrying");
    CHECK(archctl::one_line("error:\n  disk full") == "error: disk full");
    CHECK(archctl::one_line("a  \n b") == "a; b");
    CHECK(archctl::one_line("\r\n \n") == "");
    CHECK(archctl::one_line("").empty());
    CHECK(archctl::one_line("x\ny").find('\n') == std::string::npos);
}

TEST_CASE("file_indices: torrent file indices read as indices, never as a count") {
    CHECK(archctl::file_indices("0") == "file #0");
    CHECK(archctl::file_indices("1,4") == "files #1, #4");
    CHECK(archctl::file_indices("0-3,7") == "files #0-3, #7");
    CHECK(archctl::file_indices("2-5") == "files #2-5");
    CHECK(archctl::file_indices("") == "no file");
}
