#include <doctest/doctest.h>

#include "lib/torrent/partfile.hpp"

using namespace archctl::torrent;

namespace {
void put32(std::string& s, std::uint32_t v) {
    s.push_back(static_cast<char>(v >> 24));
    s.push_back(static_cast<char>(v >> 16));
    s.push_back(static_cast<char>(v >> 8));
    s.push_back(static_cast<char>(v));
}
std::string header(std::uint32_t pieces, std::uint32_t size, const std::vector<std::uint32_t>& slots) {
    std::string s;
    put32(s, pieces);
    put32(s, size);
    for (auto slot : slots) put32(s, slot);
    s.resize((s.size() + 1023) / 1024 * 1024, '\0');
    return s;
}
constexpr std::uint32_t k_none = 0xFFFFFFFFu;
}  // namespace

TEST_CASE("partfile: header parse") {
    std::string h = header(4, 16384, {k_none, 0, k_none, 1});
    auto r = parse_partfile_header(h, {4, 16384, 1024 + 2 * 16384});
    REQUIRE(r.ok());
    CHECK(r->header_size == 1024);
    CHECK(r->used_slots == 2);
    CHECK_FALSE(r->slots[0].has_value());
    CHECK(*r->slots[3] == 1);
    CHECK(r->slot_offset(3) == 1024 + 16384);
    // 300 pieces: (2 + 300) * 4 = 1208 → header 2048.
    std::vector<std::uint32_t> many(300, k_none);
    CHECK(parse_partfile_header(header(300, 16384, many))->header_size == 2048);
}

TEST_CASE("partfile: refusal rules") {
    std::string h = header(4, 16384, {k_none, 0, k_none, 1});
    auto code = [](const archctl::Result<PartfileHeader>& r) { return r.ok() ? std::string("ok") : r.error().code; };
    CHECK(code(parse_partfile_header(h, {5, 16384, {}})) == "PARTFILE_INVALID");           // piece count
    CHECK(code(parse_partfile_header(h, {4, 32768, {}})) == "PARTFILE_INVALID");           // piece size
    CHECK(code(parse_partfile_header(h.substr(0, 12), {})) == "PARTFILE_INVALID");          // shorter than header
    CHECK(code(parse_partfile_header(h, {4, 16384, 1000})) == "PARTFILE_INVALID");          // file shorter than header
    CHECK(code(parse_partfile_header(h, {4, 16384, 1024 + 16384 + 100})) == "PARTFILE_INVALID");  // truncated slot
    CHECK(code(parse_partfile_header(header(4, 16384, {0, 0, k_none, k_none}))) == "PARTFILE_INVALID");  // duplicate
    CHECK(code(parse_partfile_header(header(4, 16384, {7, k_none, k_none, k_none}))) == "PARTFILE_INVALID");  // range
    CHECK(code(parse_partfile_header(header(1, 0, {k_none}))) == "PARTFILE_INVALID");
    CHECK(parse_partfile_header(header(4, 16384, {0, 0, k_none, k_none})).error().message.find("two pieces") != std::string::npos);
}
