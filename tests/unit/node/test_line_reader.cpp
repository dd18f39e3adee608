// LineReader: the node protocol's framing, bounded in memory whatever the other end sends.

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "lib/node/wire/line_reader.hpp"
#include "lib/node/wire/protocol.hpp"

using archctl::node::LineReader;

namespace {

// Every event next() gives after `chunk` is fed, as "line:TEXT" or "overlong:FIRST".
std::vector<std::string> drain_after(LineReader& in, std::string_view chunk) {
    in.feed(chunk);
    std::vector<std::string> out;
    while (auto l = in.next()) out.push_back((l->kind == LineReader::Kind::line ? "line:" : "overlong:") + l->text);
    return out;
}

}  // namespace

TEST_CASE("lines split across chunks come out whole, empty lines skipped") {
    LineReader in(100);
    CHECK(drain_after(in, "{\"a\"").empty());
    CHECK(in.partial() == "{\"a\"");
    CHECK(drain_after(in, ":1}\n\n{\"b\":2}\n{\"c") == std::vector<std::string>{"line:{\"a\":1}", "line:{\"b\":2}"});
    CHECK(in.partial() == "{\"c");
    CHECK(drain_after(in, "\":3}\n") == std::vector<std::string>{"line:{\"c\":3}"});
    CHECK(in.partial().empty());
}

TEST_CASE("a line past the limit is reported as soon as it passes it, and the line after it reads") {
    LineReader in(16);
    CHECK(drain_after(in, "0123456789").empty());
    // Still no newline, and now longer than 16 bytes: reported now, not when it ends.
    CHECK(drain_after(in, "abcdefghij") == std::vector<std::string>{"overlong:0123456789abcdefghij"});
    CHECK(in.partial().empty());
    CHECK(in.buffered() == 0);
    // Its rest is dropped as it comes, however long.
    for (int i = 0; i < 100; ++i) CHECK(drain_after(in, std::string(1000, 'x')).empty());
    CHECK(in.buffered() == 0);
    CHECK(drain_after(in, "xxx\n{\"ok\":1}\n") == std::vector<std::string>{"line:{\"ok\":1}"});
}

TEST_CASE("an overlong line that ends in the same chunk is reported and the next one reads") {
    LineReader in(8);
    CHECK(drain_after(in, "{\"a\":1}\n0123456789ABCDEF\n{\"b\":2}\n") ==
          std::vector<std::string>{"line:{\"a\":1}", "overlong:0123456789ABCDEF", "line:{\"b\":2}"});
}

TEST_CASE("an overlong line is quoted by its first bytes only") {
    LineReader in(LineReader::k_overlong_prefix * 2);
    auto events = drain_after(in, std::string(LineReader::k_overlong_prefix * 3, 'y'));
    REQUIRE(events.size() == 1);
    CHECK(events[0] == "overlong:" + std::string(LineReader::k_overlong_prefix, 'y'));
}

TEST_CASE("a stream without newlines never makes the buffer larger than the limit and one chunk") {
    const std::size_t limit = 1u << 20;
    const std::string chunk(65536, 'z');
    LineReader in(limit);
    int overlong = 0;
    for (int i = 0; i < 200; ++i) {  // 12.5 MiB, twelve times the limit
        for (const auto& e : drain_after(in, chunk)) overlong += e.rfind("overlong:", 0) == 0;
        CHECK(in.buffered() <= limit + chunk.size());
    }
    CHECK(overlong == 1);
}

TEST_CASE("a line of exactly the limit is a line") {
    LineReader in(10);
    CHECK(drain_after(in, "0123456789\n") == std::vector<std::string>{"line:0123456789"});
    CHECK(drain_after(in, "01234567890\n") == std::vector<std::string>{"overlong:01234567890"});
}

TEST_CASE("the protocol's line limit is above the largest legitimate line and bounded") {
    // A tree of 100,000 files with 80-byte paths is a 27 MB response line (measured: 268 bytes
    // a file); the limit leaves room for paths several times as long.
    CHECK(archctl::node::k_max_line_bytes >= std::size_t{2} * 27'000'000);
    CHECK(archctl::node::k_max_line_bytes <= std::size_t{64} << 20);
}
