#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/torrent/bencode.hpp"

using namespace archctl::torrent;
using bencode::Value;

namespace {
std::string decode_error(std::string_view in, const bencode::Limits& limits = {}) {
    auto r = bencode::decode(in, limits);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "TORRENT_INVALID");
    return r.error().message;
}
bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("bencode decodes canonical values and records spans") {
    std::string in = "d3:bari-7e3:fool1:ai0ee4:infod1:xi1eee";
    auto r = bencode::decode(in);
    REQUIRE(r.ok());
    const Value& v = *r;
    CHECK(v.is_dict());
    CHECK(v.find("bar")->as_integer() == -7);
    CHECK(v.find("foo")->as_list().size() == 2);
    CHECK(v.find("foo")->as_list()[0].as_string() == "a");
    const Value* info = v.find("info");
    REQUIRE(info != nullptr);
    CHECK(in.substr(info->span().offset, info->span().length) == "d1:xi1ee");
    CHECK(v.span().offset == 0);
    CHECK(v.span().length == in.size());
    CHECK(v.find("missing") == nullptr);
}

TEST_CASE("bencode integers: limits and canonical form") {
    CHECK(bencode::decode("i0e")->as_integer() == 0);
    CHECK(bencode::decode("i9223372036854775807e")->as_integer() == INT64_MAX);
    CHECK(bencode::decode("i-9223372036854775808e")->as_integer() == INT64_MIN);
    CHECK(has(decode_error("i9223372036854775808e"), "out of range"));
    CHECK(has(decode_error("i03e"), "leading zero"));
    CHECK(has(decode_error("i-03e"), "leading zero"));
    CHECK(has(decode_error("i00e"), "leading zero"));
    CHECK(has(decode_error("i-0e"), "negative zero"));
    CHECK(has(decode_error("ie"), "no digits"));
    CHECK(has(decode_error("i-e"), "no digits"));
    CHECK(has(decode_error("i+1e"), "no digits"));
    CHECK(has(decode_error("i12"), "truncated"));
    CHECK(has(decode_error("i1x"), "not terminated"));
}

TEST_CASE("bencode strings: length prefix rules") {
    CHECK(bencode::decode("0:")->as_string().empty());
    CHECK(bencode::decode(std::string("3:a\0c", 5))->as_string() == std::string("a\0c", 3));
    CHECK(has(decode_error("-1:a"), "negative string length"));
    CHECK(has(decode_error("03:abc"), "leading zero"));
    CHECK(has(decode_error("5:abc"), "truncated string"));
    CHECK(has(decode_error("3abc"), "not followed by ':'"));
    CHECK(has(decode_error("99999999999999999999999:a"), "out of range"));
}

TEST_CASE("bencode dictionaries: sorted unique string keys") {
    CHECK(bencode::decode("d1:ai1e1:bi2ee").ok());
    CHECK(has(decode_error("d1:bi1e1:ai2ee"), "not sorted"));
    CHECK(has(decode_error("d1:ai1e1:ai2ee"), "duplicate"));
    CHECK(has(decode_error("di1ei2ee"), "not a string"));
    CHECK(has(decode_error("d1:ae"), "unexpected byte"));
    // Raw byte order: 0xff sorts after 'z' (unsigned comparison).
    CHECK(bencode::decode("d1:zi1e1:\xffi2ee").ok());
    CHECK(has(decode_error("d1:\xffi2e1:zi1ee"), "not sorted"));
    // A prefix sorts first.
    CHECK(bencode::decode("d1:ai1e2:aai2ee").ok());
    CHECK(has(decode_error("d2:aai2e1:ai1ee"), "not sorted"));
}

TEST_CASE("bencode structure errors") {
    CHECK(has(decode_error(""), "empty input"));
    CHECK(has(decode_error("l"), "truncated"));
    CHECK(has(decode_error("d"), "truncated"));
    CHECK(has(decode_error("d1:a"), "truncated"));
    CHECK(has(decode_error("li1e"), "truncated"));
    CHECK(has(decode_error("i1ei2e"), "trailing data"));
    CHECK(has(decode_error("le "), "trailing data"));
    CHECK(has(decode_error("x"), "unexpected byte"));
}

TEST_CASE("bencode limits: depth, size, items") {
    bencode::Limits limits;
    limits.max_depth = 3;
    CHECK(bencode::decode("lllee" "e", limits).ok());
    CHECK(has(decode_error("lllleeee", limits), "nesting deeper"));
    std::string deep(200, 'l');
    deep += std::string(200, 'e');
    CHECK(has(decode_error(deep), "nesting deeper"));
    bencode::Limits small;
    small.max_input = 4;
    CHECK(has(decode_error("4:abcd", small), "exceeds the limit"));
    bencode::Limits few;
    few.max_items = 3;
    CHECK(bencode::decode("li1ei2ee", few).ok());
    CHECK(has(decode_error("li1ei2ei3ee", few), "too many values"));
}

TEST_CASE("bencode encode is canonical and round-trips") {
    Value v = Value::dict();
    v.set("zeta", Value::integer(-3));
    v.set("alpha", Value::list({Value::string("x"), Value::integer(0)}));
    v.set("mid", Value::dict());
    std::string out = bencode::encode(v);
    CHECK(out == "d5:alphal1:xi0ee3:midde4:zetai-3ee");
    auto back = bencode::decode(out);
    REQUIRE(back.ok());
    CHECK(bencode::encode(*back) == out);
    v.set("zeta", Value::integer(5));  // replace keeps one key
    CHECK(bencode::encode(v) == "d5:alphal1:xi0ee3:midde4:zetai5ee");
}

TEST_CASE("bencode parse: a View walks the checked input without copying it") {
    std::string in = "d3:bari-7e5:emptyle3:fool1:ai0ee4:infod1:xi1eee";
    auto r = bencode::parse(in);
    REQUIRE(r.ok());
    bencode::View v = *r;
    CHECK(v.is_dict());
    CHECK(v.bytes().data() == in.data());
    CHECK(v.find("bar").as_integer() == -7);
    CHECK(v.find("foo").size() == 2);
    std::vector<std::string> items;
    for (bencode::View item : v.find("foo").items()) items.push_back(std::string(item.bytes()));
    CHECK(items == std::vector<std::string>{"1:a", "i0e"});
    CHECK(v.find("foo").items().begin()->as_string() == "a");
    CHECK(v.find("empty").is_list());
    CHECK(v.find("empty").size() == 0);
    CHECK(v.find("info").bytes() == "d1:xi1ee");
    CHECK_FALSE(v.find("missing").present());
    CHECK_FALSE(v.find("bar").find("x").present());
    std::vector<std::string> keys;
    for (const auto& e : v.entries()) keys.push_back(std::string(e.key));
    CHECK(keys == std::vector<std::string>{"bar", "empty", "foo", "info"});
    CHECK(bencode::parse("i-9223372036854775808e")->as_integer() == INT64_MIN);
    CHECK(bencode::parse("11:hello world")->as_string() == "hello world");
}

TEST_CASE("bencode parse refuses what decode refuses, with the same message") {
    for (std::string_view bad : {"", "i01e", "i-0e", "d1:bi1e1:ai2ee", "d1:ai1e1:ai2ee", "l", "3:ab", "i1ei2e", "di1ei2ee"}) {
        auto parsed = bencode::parse(bad);
        auto decoded = bencode::decode(bad);
        REQUIRE_FALSE(parsed.ok());
        REQUIRE_FALSE(decoded.ok());
        CHECK(parsed.error().message == decoded.error().message);
    }
}

TEST_CASE("bencode writer: pieces in order give the canonical encoding") {
    std::string out;
    bencode::Writer w(out);
    w.begin_dict();
    w.key("a");
    w.integer(-3);
    w.key("b");
    w.begin_list();
    w.string("xy");
    w.raw("i0e");
    w.end();
    w.end();
    CHECK(out == "d1:ai-3e1:bl2:xyi0eee");
    Value v = Value::dict();
    v.set("b", Value::list({Value::string("xy"), Value::integer(0)}));
    v.set("a", Value::integer(-3));
    CHECK(bencode::encode(v) == out);
}
