// write_json_text / write_json_atomic / write_json_exclusive: a document's text written as it is
// serialized, byte for byte doc.dump(indent) and a newline, and the first write error kept.

#include <doctest/doctest.h>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/json_file.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using nlohmann::json;

namespace {

// Several MiB of text: the writer hands it on in more than one chunk.
json large_document() {
    json files = json::array();
    for (int i = 0; i < 60000; ++i) files.push_back({{"index", i}, {"path", fmt::format("dir/é {}.bin", i)}, {"size", i * 7}});
    return {{"files", files}, {"name", "x"}, {"version", 1}};
}

}  // namespace

TEST_CASE("write_json_text: the bytes of dump(indent) and a newline, in chunks of at most a MiB") {
    const json doc = large_document();
    for (int indent : {2, -1}) {
        CAPTURE(indent);
        std::string text;
        std::size_t chunks = 0, largest = 0;
        REQUIRE(write_json_text(doc, indent, [&](std::string_view chunk) {
                    ++chunks;
                    largest = std::max(largest, chunk.size());
                    text.append(chunk);
                    return Status{};
                }).ok());
        CHECK(text == doc.dump(indent) + "\n");
        CHECK(chunks > 1);
        CHECK(largest <= (1u << 20) + 64);
    }
}

TEST_CASE("write_json_text: the first error is returned and nothing is written after it") {
    std::size_t calls = 0;
    Status s = write_json_text(large_document(), 2, [&](std::string_view) {
        ++calls;
        return Status(Error("IO", "disk full"));
    });
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == "disk full");
    CHECK(calls == 1);
}

TEST_CASE("write_json_atomic replaces, write_json_exclusive creates only") {
    test::Scratch dir;
    const std::string path = (dir / "doc.json").string();
    const json doc = large_document();
    REQUIRE(write_json_exclusive(path, doc, 2).ok());
    CHECK(read_file(path).value() == doc.dump(2) + "\n");
    auto again = write_json_exclusive(path, json{{"other", true}}, 2);
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == "EXISTS");
    CHECK(read_file(path).value() == doc.dump(2) + "\n");  // untouched
    REQUIRE(write_json_atomic(path, json{{"other", true}}, -1).ok());
    CHECK(read_file(path).value() == "{\"other\":true}\n");
    // No temp file left beside it.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
    CHECK(entries == 1);
}
