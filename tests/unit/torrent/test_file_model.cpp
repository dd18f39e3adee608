#include <doctest/doctest.h>

#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using test::MemFile;
using test::MemKind;
using test::MemTorrent;

namespace {
MemTorrent v1_sample() {
    // 16 KiB pieces: a(10000) b(10000) c(0) d(40000) e(6)
    //   piece 0: a, b   piece 1: b, d   piece 2: d   piece 3: d, e
    MemTorrent t;
    t.kind = MemKind::v1;
    t.files = {MemFile{{"a"}, test::random_bytes(10000, 1), ""}, MemFile{{"b"}, test::random_bytes(10000, 2), ""},
               MemFile{{"c"}, "", ""}, MemFile{{"d"}, test::random_bytes(40000, 3), ""},
               MemFile{{"e"}, test::random_bytes(6, 4), ""}};
    return t;
}
Selection sel(std::string_view s) { return *Selection::parse(s); }
}  // namespace

TEST_CASE("file model: v1 indices, byte and piece ranges, piece → files") {
    auto m = parse_metainfo(v1_sample().encode(), "v1");
    REQUIRE(m.ok());
    FileModel model(*m);
    REQUIRE(model.file_count() == 5);
    CHECK(model.piece_count() == 4);
    const auto& f = model.files();
    CHECK(f[1].offset == 10000);
    CHECK(f[1].first_piece == 0);
    CHECK(f[1].end_piece == 2);
    CHECK(f[2].first_piece == 1);
    CHECK(f[2].end_piece == 1);  // empty: no pieces
    CHECK(f[2].qb_piece_range(16384) == std::pair<std::int64_t, std::int64_t>{1, 1});
    CHECK(f[3].first_piece == 1);
    CHECK(f[3].end_piece == 4);
    CHECK(f[4].qb_piece_range(16384) == std::pair<std::int64_t, std::int64_t>{3, 3});
    CHECK(std::vector<std::uint32_t>(model.files_in_piece(0).begin(), model.files_in_piece(0).end()) == std::vector<std::uint32_t>{0, 1});
    CHECK(std::vector<std::uint32_t>(model.files_in_piece(1).begin(), model.files_in_piece(1).end()) == std::vector<std::uint32_t>{1, 3});
    CHECK(std::vector<std::uint32_t>(model.files_in_piece(2).begin(), model.files_in_piece(2).end()) == std::vector<std::uint32_t>{3});
    CHECK(std::vector<std::uint32_t>(model.files_in_piece(3).begin(), model.files_in_piece(3).end()) == std::vector<std::uint32_t>{3, 4});
}

TEST_CASE("file model: part-piece queries (selected vs skipped)") {
    auto m = parse_metainfo(v1_sample().encode(), "v1");
    FileModel model(*m);
    CHECK(model.pieces_of(sel("0")) == std::vector<std::int64_t>{0});
    CHECK(model.pieces_of(sel("1,3")) == std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK(model.pieces_of(sel("2")).empty());
    CHECK(model.boundary_pieces(sel("0")) == std::vector<std::int64_t>{0});
    CHECK(model.boundary_pieces(sel("3")) == std::vector<std::int64_t>{1, 3});
    CHECK(model.boundary_pieces(sel("0-1")) == std::vector<std::int64_t>{1});
    CHECK(model.boundary_pieces(sel("0-4")).empty());
    CHECK(model.boundary_pieces(sel("0-2,4")) == std::vector<std::int64_t>{1, 3});
    CHECK(sel("0-1").bytes(model) == 20000);
    CHECK(model.all().to_string() == "0-4");
}

TEST_CASE("file model: hybrid and v2 skip pads and align every file") {
    MemTorrent t = v1_sample();
    for (MemKind kind : {MemKind::hybrid, MemKind::v2}) {
        t.kind = kind;
        auto m = parse_metainfo(t.encode(), "h");
        REQUIRE(m.ok());
        FileModel model(*m);
        REQUIRE(model.file_count() == 5);
        CHECK(model.files()[1].native_index == 2);  // a, pad, b, ...
        CHECK(model.files()[1].first_piece == 1);
        CHECK(model.files()[2].first_piece == 2);  // empty file after b's pad
        // An empty file on a piece boundary: qB shows [first, first - 1].
        CHECK(model.files()[2].qb_piece_range(16384) == std::pair<std::int64_t, std::int64_t>{2, 1});
        CHECK(model.files()[3].first_piece == 2);
        CHECK(model.files()[3].end_piece == 5);
        CHECK(model.files()[4].first_piece == 5);
        CHECK(model.piece_count() == 6);
        for (std::uint32_t i = 0; i < 5; ++i) CHECK(model.boundary_pieces(Selection::of({i})).empty());
    }
}
