#include <doctest/doctest.h>

#include "lib/base/hash.hpp"

using namespace archctl;

TEST_CASE("xxh3-128 streaming equals one-shot and known value") {
    // Known value: xxhsum -H2 of the empty input.
    CHECK(xxh3_128_hex("") == "99aa06d3014798d86001c324468d497f");
    std::string data(100000, 'x');
    Xxh3Hasher h;
    h.update(data.data(), 7);
    h.update(data.data() + 7, data.size() - 7);
    CHECK(h.hex_digest() == xxh3_128_hex(data));
    CHECK(h.hex_digest().size() == 32);
}

TEST_CASE("hex round trip") {
    std::string raw("\x00\xff\x10", 3), back;
    CHECK(to_hex(raw) == "00ff10");
    CHECK(from_hex("00FF10", back));
    CHECK(back == raw);
    CHECK_FALSE(from_hex("0g", back));
    CHECK_FALSE(from_hex("abc", back));
    CHECK(is_hex("deadBEEF"));
    CHECK_FALSE(is_hex("xyz"));
}

#include "lib/base/base64.hpp"

TEST_CASE("base64 round trip and refusals") {
    for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"), std::string("foob"),
                          std::string("\x00\xff\x10\x80", 4)}) {
        auto back = base64_decode(base64_encode(s));
        REQUIRE(back.ok());
        CHECK(back.value() == s);
    }
    CHECK(base64_encode("foobar") == "Zm9vYmFy");
    CHECK(base64_encode("fo") == "Zm8=");
    CHECK_FALSE(base64_decode("Zm9").ok());
    CHECK_FALSE(base64_decode("Zm9*").ok());
    CHECK_FALSE(base64_decode("Z=9v").ok());
    CHECK_FALSE(base64_decode("====").ok());
    CHECK_FALSE(base64_decode("Zm9vZ===").ok());
    CHECK_FALSE(base64_decode("Zm=vYmFy").ok());
    // Every byte value, at every length's remainder.
    std::string all;
    for (int i = 0; i < 3 * 256 + 2; ++i) all += static_cast<char>((i * 37 + 11) & 255);
    for (std::size_t n : {all.size(), all.size() - 1, all.size() - 2}) {
        const std::string part = all.substr(0, n);
        auto back = base64_decode(base64_encode(part));
        REQUIRE(back.ok());
        CHECK(back.value() == part);
    }
}
