#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/torrent/file_table.hpp"
#include "lib/torrent/metainfo.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using namespace archctl::torrent::test;

TEST_CASE("file table: paths below one root, attributes and roots per row") {
    FileTable t;
    t.set_root("album");
    Sha256Digest root{};
    root[0] = 7;
    t.add({"cd1", "01.flac"}, {.size = 10, .offset = 0, .executable = true, .pieces_root = root});
    t.add({".pad", "6"}, {.size = 6, .offset = 10, .pad = true});
    std::string long_name(300, 'x');  // a length that needs two bytes of LEB128
    t.add(std::vector<std::string>{"a/b", long_name}, {.size = 0, .offset = 16, .hidden = true});
    REQUIRE(t.size() == 3);
    CHECK(t[0].path_string() == "album/cd1/01.flac");
    CHECK(t[0].path_elements() == std::vector<std::string>{"album", "cd1", "01.flac"});
    CHECK(t[0].executable);
    CHECK(t[0].pieces_root == root);
    CHECK_FALSE(t[1].pieces_root.has_value());
    CHECK(t.pad(1));
    CHECK(t[1].end() == 16);
    // An element keeps a '/' it holds (the path rules refuse it later, by element).
    CHECK(t.rel_elements(2) == std::vector<std::string>{"a/b", long_name});
    CHECK(t[2].hidden);
    CHECK(t.first_element(2) == "a/b");
    FileTable copy;
    copy.add_from(t, 0, 100);
    CHECK(copy[0].path_string() == "cd1/01.flac");  // no root in the copy
    CHECK(copy.offset_of(0) == 100);
    CHECK(copy[0].pieces_root == root);
    CHECK(copy.rel_bytes(0) == t.rel_bytes(0));
    std::vector<std::string> seen;
    for (FileEntry e : t) seen.push_back(e.path_string());
    CHECK(seen.size() == 3);
}

TEST_CASE("file table: a single file has no root, and an empty element stays one") {
    FileTable t;
    t.add({"movie.mkv"}, {.size = 5});
    CHECK(t[0].path_string() == "movie.mkv");
    t.add({"", "x"}, {.size = 1, .offset = 5});
    CHECK(t[1].path_string() == "/x");
    CHECK(t.rel_elements(1) == std::vector<std::string>{"", "x"});
}

TEST_CASE("file table: a parsed torrent's native list reads as before") {
    MemTorrent t;
    t.kind = MemKind::hybrid;
    t.files = {MemFile{{"b.bin"}, std::string(5, 'b'), "x"}, MemFile{{"sub", "a.bin"}, std::string(20000, 'a'), ""}};
    auto m = parse_metainfo(t.encode(), "t.torrent");
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().message));
    std::vector<std::string> paths;
    for (FileEntry e : m->files()) paths.push_back(e.path_string() + (e.pad ? "*" : ""));
    CHECK(paths.size() == m->files().size());
    for (FileEntry e : m->files())
        if (!e.pad && e.size > 0) CHECK(e.pieces_root.has_value());
}

TEST_CASE("file table: an adopted arena's paths are rows without a copy, in any order, and more can follow") {
    std::string arena;
    FileTable::encode_element(arena, "b");
    FileTable::encode_element(arena, "2.dat");
    std::size_t second = arena.size();
    FileTable::encode_element(arena, "a.txt");
    CHECK(FileTable::encoded_size("2.dat") == 6);
    CHECK(FileTable::encoded_size(std::string(300, 'x')) == 302);
    FileTable t;
    t.set_root("r");
    t.adopt_arena(arena);
    t.reserve(3, 7);
    t.add_encoded(second, arena.size() - second, {.size = 4, .offset = 0});
    t.add_encoded(0, second, {.size = 5, .offset = 4, .executable = true});
    t.add({".pad", "7"}, {.size = 7, .offset = 9, .pad = true});
    REQUIRE(t.size() == 3);
    CHECK(t.path_string(0) == "r/a.txt");
    CHECK(t.path_elements(1) == std::vector<std::string>{"r", "b", "2.dat"});
    CHECK(t[1].executable);
    CHECK(t.path_string(2) == "r/.pad/7");
    CHECK(t.pad(2));
    CHECK(t.path_bytes() == arena.size() + 7);  // ".pad" 5, "7" 2
}
