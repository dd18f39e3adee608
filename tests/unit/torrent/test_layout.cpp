// Content layouts: which on-disk path qBittorrent gives each metainfo path, and which names no
// layout explains (real renames).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/torrent/layout.hpp"

using namespace archctl::torrent;

namespace {
const std::vector<std::string> k_multi = {"ns1/a.bin", "ns1/sub/b.bin", "ns1/c.txt"};
}

TEST_CASE("layout: Original names every file at its metainfo path") {
    auto l = infer_layout(k_multi, k_multi);
    CHECK(l.layout == ContentLayout::original);
    for (std::uint32_t i = 0; i < 3; ++i) {
        CHECK_FALSE(l.renamed(i));
        CHECK(l.disk_path(i) == k_multi[i]);
    }
}

TEST_CASE("layout: NoSubfolder drops a multi-file torrent's root folder, and is no rename") {
    auto l = infer_layout(k_multi, {"a.bin", "sub/b.bin", "c.txt"});
    CHECK(l.layout == ContentLayout::no_subfolder);
    CHECK(to_string(l.layout) == "NoSubfolder");
    CHECK_FALSE(l.renamed(0));
    CHECK_FALSE(l.renamed(1));
    CHECK(l.disk_path(1) == "sub/b.bin");
    CHECK(l.expected_path(2) == "c.txt");
}

TEST_CASE("layout: Subfolder puts a single-file torrent in a folder named after the file") {
    std::vector<std::string> single = {"movie.mkv"};
    auto l = infer_layout(single, {"movie/movie.mkv"});
    CHECK(l.layout == ContentLayout::subfolder);
    CHECK(l.folder == "movie");
    CHECK_FALSE(l.renamed(0));
    CHECK(l.disk_path(0) == "movie/movie.mkv");
    // A multi-part extension is qBittorrent's choice too.
    CHECK(infer_layout({"x.tar.gz"}, {"x/x.tar.gz"}).layout == ContentLayout::subfolder);
    // Any other folder is a rename, not a layout.
    auto moved = infer_layout(single, {"elsewhere/movie.mkv"});
    CHECK(moved.layout == ContentLayout::original);
    CHECK(moved.renamed(0));
    CHECK(moved.expected_path(0) == "movie.mkv");
    // Applied to a new target: the same folder.
    auto applied = apply_layout(single, ContentLayout::subfolder, "movie");
    CHECK(applied.expected_path(0) == "movie/movie.mkv");
    CHECK(apply_layout(single, ContentLayout::subfolder, "").expected_path(0) == "movie/movie.mkv");
    // Subfolder of a multi-file torrent and NoSubfolder of a single file change nothing.
    CHECK(apply_layout(k_multi, ContentLayout::subfolder, "").expected_path(0) == "ns1/a.bin");
    CHECK(apply_layout(single, ContentLayout::no_subfolder, "").expected_path(0) == "movie.mkv");
}

TEST_CASE("layout: an element of 240 bytes or more is cut as libtorrent cuts it, keeping a short extension") {
    std::string stem(246, 'n');
    std::string name = stem + ".bin";  // 250 bytes
    CHECK(disk_element(name) == std::string(240, 'n') + ".bin");
    CHECK(disk_element(std::string(250, 'x')) == std::string(240, 'x'));
    // An extension longer than the last 9 bytes is not kept.
    CHECK(disk_element(std::string(240, 'y') + ".abcdefghijk") == std::string(240, 'y'));
    // A short name is untouched; multi-byte characters are never split.
    CHECK(disk_element("café.txt") == "café.txt");
    std::string wide;
    for (int i = 0; i < 121; ++i) wide += "é";  // 242 bytes
    CHECK(disk_element(wide).size() == 240);
    std::string odd = "a" + wide;  // 243 bytes: cut after the code point that reaches 240
    CHECK(disk_element(odd).size() == 241);
    // The layout applies it to every element, and a truncated name is no rename.
    std::vector<std::string> meta = {"long/" + name, "long/b.bin"};
    auto l = infer_layout(meta, {"long/" + std::string(240, 'n') + ".bin", "long/b.bin"});
    CHECK(l.layout == ContentLayout::original);
    CHECK_FALSE(l.renamed(0));
    CHECK(disk_path_of(std::string(245, 'r') + "/f") == std::string(240, 'r') + "/f");
}

TEST_CASE("layout: libtorrent's sanitizing of odd elements") {
    CHECK(disk_element("") == "_");
    CHECK(disk_element(".") == "");
    CHECK(disk_element("..") == "");
    CHECK(disk_element("a\x01" "b") == "a_b");
    CHECK(disk_element("a\xff" "b") == "a_b");
    CHECK(disk_element("a\u202e" "b") == "ab");
    CHECK(disk_element("a\\b") == "ab");
}

TEST_CASE("layout: one real rename among files the layout explains is named, the others are not") {
    auto l = infer_layout(k_multi, {"a.bin", "sub/b-renamed.bin", "c.txt"});
    CHECK(l.layout == ContentLayout::no_subfolder);
    CHECK_FALSE(l.renamed(0));
    CHECK(l.renamed(1));
    CHECK(l.expected_path(1) == "sub/b.bin");
    CHECK(l.disk_path(1) == "sub/b-renamed.bin");
    CHECK_FALSE(l.renamed(2));
    auto orig = infer_layout(k_multi, {"ns1/a.bin", "ns1/x.bin", "ns1/c.txt"});
    CHECK(orig.layout == ContentLayout::original);
    CHECK(orig.renamed(1));
    CHECK_FALSE(orig.renamed(0));
}

TEST_CASE("layout: unknown indices and missing names are never renames") {
    std::vector<std::string> partial = {"", "ns1/sub/b.bin", ""};
    auto l = infer_layout(partial, {"a.bin", "sub/b.bin", "c.txt"});
    CHECK(l.layout == ContentLayout::no_subfolder);
    CHECK_FALSE(l.renamed(0));
    CHECK(l.disk_path(0) == "a.bin");
    auto none = infer_layout(k_multi, {});
    CHECK(none.layout == ContentLayout::original);
    CHECK(none.disk_path(2) == "ns1/c.txt");
    ContentLayout parsed{};
    CHECK(parse_content_layout("NoSubfolder", parsed));
    CHECK(parsed == ContentLayout::no_subfolder);
    CHECK_FALSE(parse_content_layout("nosub", parsed));
}
