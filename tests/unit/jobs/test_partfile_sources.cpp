// jobs::transfer::source_partfile_plan against a recording node: where a built part file's bytes come from
// (the source's disk or its part file), the build request it makes, and its refusals.

#include <doctest/doctest.h>

#include <cstring>

#include <fmt/format.h>

#include "lib/jobs/transfer/preflight.hpp"
#include "lib/torrent/metainfo.hpp"
#include "tests/support/fakes.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::transfer;
using nlohmann::json;

namespace {

constexpr std::int64_t k_piece = 16384;

// v1, pieces of 16 KiB: a [0,10000), b [10000,30000), c [30000,35000), d [35000,38000).
// Piece 0 holds a|b, piece 1 b|c, piece 2 c|d.
std::string torrent_bytes() {
    std::string pieces;
    for (char c : {'0', '1', '2'}) pieces += std::string(20, c);
    auto file = [](const char* name, int size) { return fmt::format("d6:lengthi{}e4:pathl{}:{}ee", size, std::strlen(name), name); };
    std::string files = "l" + file("a.bin", 10000) + file("b.bin", 20000) + file("c.bin", 5000) + file("d.bin", 3000) + "e";
    return fmt::format("d4:infod5:files{}4:name3:pay12:piece lengthi{}e6:pieces{}:{}ee", files, k_piece, pieces.size(), pieces);
}

struct World {
    torrent::Metainfo meta = torrent::parse_metainfo(torrent_bytes(), "t").value();
    torrent::FileModel model{meta};
    fakes::FakeTransport node{"cache1"};
    node::Ops ops{node};
    torrent::Selection union_set = torrent::Selection::of({0, 2});  // a and c
    std::vector<json> builds;                                         // partfile_build requests seen
    json tree_entries;
    std::vector<int> partfile_pieces{0, 1};
    std::vector<int> failing;

    World() {
        tree_entries = json::array({{{"type", "file"}, {"size", 1024 + 2 * k_piece}},   // .<id>.parts
                                    {{"type", "absent"}},                             // b.bin
                                    {{"type", "file"}, {"size", 3000}}});              // d.bin
        node.handlers["tree"] = [this](const json&) -> Result<json> { return json{{"base_exists", true}, {"entries", tree_entries}}; };
        node.handlers["partfile_read"] = [this](const json&) -> Result<json> {
            json slots = json::array();
            for (std::size_t i = 0; i < partfile_pieces.size(); ++i) slots.push_back({{"piece", partfile_pieces[i]}, {"slot", i}});
            return json{{"piece_count", 3}, {"piece_size", k_piece}, {"header_size", 1024}, {"slots", slots}};
        };
        node.handlers["partfile_build"] = [this](const json& args) -> Result<json> {
            builds.push_back(args);
            return json{{"failed", failing}};
        };
    }
    SourceNeeds needs() {
        return SourceNeeds{.save_path = "/qb/save",
                           .files = {},
                           .partfile = plan::PartfileNeed::carry_source,
                           .boundary_pieces = model.boundary_pieces(union_set),
                           .union_set = union_set,
                           .piece_count = meta.piece_count(),
                           .piece_length = meta.piece_length(),
                           .model = &model,
                           .piece_hashes = &meta.v1_pieces()};
    }
};

}  // namespace

TEST_CASE("partfile sources: a skipped file on disk is read there, one that is not from the part file") {
    World w;
    auto needs = w.needs();
    REQUIRE(needs.boundary_pieces == std::vector<std::int64_t>{0, 1, 2});
    auto s = source_partfile_plan(w.ops, "cache1", "abc", needs);
    REQUIRE(s.ok());
    CHECK(s->from_disk == std::vector<std::uint32_t>{3});
    CHECK(s->from_partfile == std::vector<std::uint32_t>{1});
    REQUIRE(s->bytes.size() == 3);
    CHECK((s->bytes[0].piece == 0 && s->bytes[0].file == 1 && std::string(s->bytes[0].from) == "partfile"));
    CHECK((s->bytes[2].piece == 2 && s->bytes[2].file == 3 && std::string(s->bytes[2].from) == "disk"));
    // Only the piece whose outside bytes are all on disk was checked, read-only, with its SHA-1.
    REQUIRE(w.builds.size() == 1);
    CHECK(w.builds[0]["dry_run"] == true);
    REQUIRE(w.builds[0]["pieces"].size() == 1);
    CHECK(w.builds[0]["pieces"][0]["piece"] == 2);
    CHECK(w.builds[0]["pieces"][0]["sha1"] == "3232323232323232323232323232323232323232");  // twenty '2's
    // The build request: piece 2 is c's bytes (checked only) then d's (kept), at their offsets.
    const node::PartfileBuildRequest& r = s->request;
    CHECK(r.source_partfile == std::optional<std::string>("/qb/save/.abc.parts"));
    REQUIRE(r.pieces.size() == 3);
    const auto& p2 = r.pieces[2];
    CHECK(p2.length == 38000 - 2 * k_piece);
    REQUIRE(p2.ranges.size() == 2);
    CHECK((p2.ranges[0].at == 0 && p2.ranges[0].length == 35000 - 32768 && !p2.ranges[0].keep));
    CHECK((p2.ranges[0].path == "/qb/save/pay/c.bin" && p2.ranges[0].offset == 32768 - 30000));
    CHECK((p2.ranges[1].at == 35000 - 32768 && p2.ranges[1].length == 3000 && p2.ranges[1].keep && !p2.ranges[1].from_partfile));
    CHECK(p2.ranges[1].path == "/qb/save/pay/d.bin");
    const auto& p0 = r.pieces[0];
    REQUIRE(p0.ranges.size() == 2);
    CHECK((p0.ranges[1].at == 10000 && p0.ranges[1].length == 6384 && p0.ranges[1].keep && p0.ranges[1].from_partfile));
}

TEST_CASE("partfile sources: bytes that are nowhere refuse, naming the pieces and files") {
    World w;
    w.partfile_pieces = {0};  // piece 1's share of b is in no slot
    auto s = source_partfile_plan(w.ops, "cache1", "abc", w.needs());
    REQUIRE(!s.ok());
    CHECK(s.error().code == "PARTFILE_UNSUPPORTED");
    CHECK(s.error().message ==
          "PARTFILE_UNSUPPORTED: boundary piece(s) 1 need bytes of file(s) 1 that 'cache1' has neither complete on its disk nor in its "
          "part file '/qb/save/.abc.parts'");
    CHECK(s.error().hint.find("recheck the torrent there in qBittorrent, then request only files that share no piece with file(s) 1") !=
          std::string::npos);
}

TEST_CASE("partfile sources: a disk copy that does not verify is taken from the part file, or refused") {
    World w;
    w.failing = {2};
    w.partfile_pieces = {0, 1, 2};
    auto s = source_partfile_plan(w.ops, "cache1", "abc", w.needs());
    REQUIRE(s.ok());
    CHECK(s->from_disk.empty());
    CHECK(s->from_partfile == std::vector<std::uint32_t>{1, 3});
    CHECK(s->request.pieces[2].ranges[1].from_partfile);
    w.partfile_pieces = {0, 1};
    auto refused = source_partfile_plan(w.ops, "cache1", "abc", w.needs());
    REQUIRE(!refused.ok());
    CHECK(refused.error().message.find("boundary piece(s) 2 need bytes of file(s) 4") == std::string::npos);
    CHECK(refused.error().message.find("boundary piece(s) 2 need bytes of file(s) 3") != std::string::npos);
    CHECK(refused.error().message.find("(with the bytes on its disk, piece(s) 2 do not match the torrent)") != std::string::npos);
}

TEST_CASE("partfile sources: no part file and every neighbour on disk reads the disk only") {
    World w;
    w.tree_entries = json::array({{{"type", "absent"}}, {{"type", "file"}, {"size", 20000}}, {{"type", "file"}, {"size", 3000}}});
    w.node.handlers.erase("partfile_read");  // never asked for
    auto s = source_partfile_plan(w.ops, "cache1", "abc", w.needs());
    REQUIRE(s.ok());
    CHECK(s->from_disk == std::vector<std::uint32_t>{1, 3});
    CHECK(!s->reads_partfile());
    CHECK(!s->request.source_partfile);
    REQUIRE(w.builds.size() == 1);
    CHECK(w.builds[0]["pieces"].size() == 3);
    // A neighbour of another size than the torrent's is not read from disk.
    w.tree_entries[1]["size"] = 19999;
    auto short_file = source_partfile_plan(w.ops, "cache1", "abc", w.needs());
    REQUIRE(!short_file.ok());
    CHECK(short_file.error().message.find("boundary piece(s) 0, 1 need bytes of file(s) 1") != std::string::npos);
}
