#include <doctest/doctest.h>

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/verifier.hpp"
#include "tests/support/scratch.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;
using archctl::test::Scratch;
using test::MemFile;
using test::MemKind;
using test::MemTorrent;
namespace fs = std::filesystem;

namespace {

MemTorrent payload(MemKind kind) {
    // 16 KiB pieces. v1 layout: a(10000) b(10000) c(0) d(70000) e(6)
    MemTorrent t;
    t.kind = kind;
    t.files = {MemFile{{"a"}, test::random_bytes(10000, 1), ""}, MemFile{{"b"}, test::random_bytes(10000, 2), ""},
               MemFile{{"c"}, "", ""}, MemFile{{"dir", "d"}, test::random_bytes(70000, 3), ""},
               MemFile{{"e"}, test::random_bytes(6, 4), ""}};
    return t;
}

Metainfo meta_of(const MemTorrent& t) {
    auto m = parse_metainfo(t.encode(), "t.torrent");
    REQUIRE(m.ok());
    return *m;
}

VerifyReport run(const Metainfo& m, const fs::path& dir, VerifyOptions o = {}) {
    auto r = verify(m, dir, o);
    REQUIRE(r.ok());
    return *r;
}

void flip_byte(const fs::path& p, std::int64_t offset) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(offset);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(offset);
    f.write(&c, 1);
}

const FileReport& file(const VerifyReport& r, std::uint32_t index) {
    for (const auto& f : r.files)
        if (f.index == index) return f;
    FAIL("no report for file " << index);
    return r.files.front();
}

}  // namespace

TEST_CASE("verifier: complete payloads verify for v1, v2 and hybrid") {
    for (MemKind kind : {MemKind::v1, MemKind::v2, MemKind::hybrid}) {
        Scratch s;
        MemTorrent t = payload(kind);
        t.write_payload(s.path());
        Metainfo m = meta_of(t);
        VerifyReport r = run(m, s.path());
        CHECK(r.all_verified());
        CHECK(r.files.size() == 5);
        CHECK(r.pieces_corrupt == 0);
        CHECK(r.pieces_ok == m.piece_count());
        CHECK(r.bytes_read == 90006);
        CHECK(r.to_json()["verified"] == true);
    }
}

TEST_CASE("verifier: single-byte corruptions at start, middle and end fail the right piece") {
    for (MemKind kind : {MemKind::v1, MemKind::v2, MemKind::hybrid}) {
        Scratch s;
        MemTorrent t = payload(kind);
        t.write_payload(s.path());
        Metainfo m = meta_of(t);
        const fs::path d = s.path() / "root" / "dir" / "d";
        flip_byte(d, 0);
        flip_byte(d, 35000);
        flip_byte(d, 69999);
        VerifyReport r = run(m, s.path(), VerifyOptions{std::nullopt, PieceDetail::all, 2, 16384});
        CHECK_FALSE(r.all_verified());
        const FileReport& fd = file(r, 3);
        CHECK(fd.verdict == FileVerdict::corrupt);
        // d starts at 20000 in v1 (pieces 1..5) and on piece 2 when aligned (pieces 2..6).
        std::vector<std::int64_t> expected = kind == MemKind::v1 ? std::vector<std::int64_t>{1, 3, 5}
                                                                  : std::vector<std::int64_t>{2, 4, 6};
        CHECK(fd.corrupt_pieces == expected);
        if (kind == MemKind::v1) {
            // Piece 1 also holds b's tail; piece 5 holds e: those files fail with d's piece.
            CHECK(file(r, 1).verdict == FileVerdict::corrupt);
            CHECK(file(r, 4).verdict == FileVerdict::corrupt);
            CHECK(file(r, 0).verdict == FileVerdict::complete);
        } else {
            for (std::uint32_t i : {0u, 1u, 2u, 4u}) CHECK(file(r, i).verdict == FileVerdict::complete);
        }
        CHECK(r.pieces_corrupt == 3);
        CHECK(r.to_json()["pieces"]["corrupt"] == piece_ranges(expected));
    }
}

TEST_CASE("verifier: missing, short, oversized and zero-length files") {
    for (MemKind kind : {MemKind::v1, MemKind::hybrid}) {
        Scratch s;
        MemTorrent t = payload(kind);
        t.write_payload(s.path());
        Metainfo m = meta_of(t);
        fs::remove(s.path() / "root" / "a");
        fs::resize_file(s.path() / "root" / "dir" / "d", 50000);
        { std::ofstream(s.path() / "root" / "e", std::ios::app) << "extra"; }
        fs::remove(s.path() / "root" / "c");
        VerifyReport r = run(m, s.path());
        CHECK(file(r, 0).verdict == FileVerdict::missing);
        CHECK(file(r, 2).verdict == FileVerdict::missing);  // zero-length files must exist
        CHECK(file(r, 3).verdict == FileVerdict::short_file);
        CHECK(*file(r, 3).actual_size == 50000);
        CHECK(file(r, 4).verdict == FileVerdict::oversized);
        if (kind == MemKind::v1) {
            CHECK(file(r, 1).verdict == FileVerdict::incomplete);  // shares piece 0 with missing a
            CHECK(file(r, 1).blocked_pieces == std::vector<std::int64_t>{0});
        } else {
            CHECK(file(r, 1).verdict == FileVerdict::complete);
        }
        CHECK(r.failed_files() >= 4);
        // A zero-length file that is not empty is oversized.
        { std::ofstream(s.path() / "root" / "c") << "x"; }
        CHECK(file(run(m, s.path()), 2).verdict == FileVerdict::oversized);
    }
}

TEST_CASE("verifier: symlinks below the save path are refused") {
    Scratch s;
    MemTorrent t = payload(MemKind::hybrid);
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    fs::rename(s.path() / "root" / "a", s.path() / "real_a");
    fs::create_symlink(s.path() / "real_a", s.path() / "root" / "a");
    fs::rename(s.path() / "root" / "dir", s.path() / "real_dir");
    fs::create_directory_symlink(s.path() / "real_dir", s.path() / "root" / "dir");
    VerifyReport r = run(m, s.path());
    CHECK(file(r, 0).verdict == FileVerdict::unsafe);
    CHECK(file(r, 0).detail.find("symlink") != std::string::npos);
    CHECK(file(r, 3).verdict == FileVerdict::unsafe);
    // The save path itself may be a symlink (the operator's choice).
    Scratch s2;
    t.write_payload(s2.path() / "real");
    fs::create_directory_symlink(s2.path() / "real", s2.path() / "link");
    CHECK(run(m, s2.path() / "link").all_verified());
    // A directory where a file should be is not a regular file.
    Scratch s3;
    t.write_payload(s3.path());
    fs::remove(s3.path() / "root" / "e");
    fs::create_directory(s3.path() / "root" / "e");
    CHECK(file(run(m, s3.path()), 4).verdict == FileVerdict::unsafe);
}

TEST_CASE("verifier: readable neighbours let a selection's boundary pieces verify, and only what they need is read") {
    Scratch s;
    MemTorrent t = payload(MemKind::v1);
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    VerifyOptions o;
    o.files = *Selection::parse("3");
    o.readable = Selection::all(FileModel(m).file_count());
    o.pieces = PieceDetail::all;
    VerifyReport r = run(m, s.path(), o);
    REQUIRE(r.files.size() == 1);
    CHECK(file(r, 3).verdict == FileVerdict::complete);
    CHECK(r.pieces[1] == PieceVerdict::ok);
    CHECK(r.pieces[5] == PieceVerdict::ok);
    CHECK(r.pieces[0] == PieceVerdict::not_checked);
}

TEST_CASE("verifier: selections never read skipped files; shared pieces need them") {
    Scratch s;
    MemTorrent t = payload(MemKind::v1);
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    fs::remove(s.path() / "root" / "a");  // skipped, so its absence does not matter
    VerifyOptions o;
    o.files = *Selection::parse("1-4");
    o.pieces = PieceDetail::all;
    VerifyReport r = run(m, s.path(), o);
    CHECK(r.files.size() == 4);
    CHECK(file(r, 1).verdict == FileVerdict::needs_skipped);
    CHECK(file(r, 1).skipped_pieces == std::vector<std::int64_t>{0});
    CHECK(file(r, 3).verdict == FileVerdict::complete);
    CHECK(r.pieces[0] == PieceVerdict::needs_skipped);
    CHECK(r.pieces[1] == PieceVerdict::ok);
    CHECK(r.to_json()["pieces"]["needs_skipped"] == "0");
    CHECK(r.to_json()["selection"]["ranges"] == "1-4");
    // Only file 0 selected: piece 0 needs b's bytes, nothing is read.
    o.files = *Selection::parse("3");
    VerifyReport only_d = run(m, s.path(), o);
    CHECK(only_d.files.size() == 1);
    CHECK(file(only_d, 3).verdict == FileVerdict::needs_skipped);
    CHECK(file(only_d, 3).skipped_pieces == std::vector<std::int64_t>{1, 5});
    CHECK(only_d.pieces[0] == PieceVerdict::not_checked);
    // Hybrid: files are aligned, so any selection verifies on its own.
    Scratch h;
    MemTorrent th = payload(MemKind::hybrid);
    th.write_payload(h.path());
    fs::remove(h.path() / "root" / "a");
    VerifyOptions ho;
    ho.files = *Selection::parse("1-4");
    CHECK(run(meta_of(th), h.path(), ho).all_verified());
    // Out-of-range selections are an error, not a report.
    VerifyOptions bad;
    bad.files = *Selection::parse("9");
    CHECK(verify(m, s.path(), bad).error().code == "SELECTION_OUT_OF_RANGE");
}

TEST_CASE("verifier: thread count and chunking do not change results") {
    Scratch s;
    MemTorrent t;
    t.kind = MemKind::hybrid;
    t.piece_length = 32768;
    for (int i = 0; i < 12; ++i)
        t.files.push_back(MemFile{{fmt::format("f{:02}", i)}, test::random_bytes(static_cast<std::size_t>(5000 + i * 9000), static_cast<std::uint32_t>(i)), ""});
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    flip_byte(s.path() / "root" / "f07", 100);
    VerifyReport one = run(m, s.path(), VerifyOptions{std::nullopt, PieceDetail::all, 1, 0});
    VerifyReport many = run(m, s.path(), VerifyOptions{std::nullopt, PieceDetail::all, 4, 32768});
    CHECK(one.pieces == many.pieces);
    CHECK(one.to_json()["files"] == many.to_json()["files"]);
    CHECK(file(one, 7).verdict == FileVerdict::corrupt);
    CHECK(one.failed_files() == 1);
}

TEST_CASE("verifier: missing save path is an error") {
    Scratch s;
    Metainfo m = meta_of(payload(MemKind::v1));
    auto r = verify(m, s.path() / "nope");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("save path") != std::string::npos);
}

TEST_CASE("verifier: pad files are never opened, whatever is on disk at their paths") {
    Scratch s;
    MemTorrent t = payload(MemKind::hybrid);
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    s.write("root/.pad/6384", "junk");
    s.write("root/.pad/11920", std::string(11920, '\0'));
    // inotify reports every open or read of a file in the watched directory.
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::inotify_add_watch(fd, (s.path() / "root/.pad").c_str(), IN_OPEN | IN_ACCESS) >= 0);
    VerifyReport r = run(m, s.path());
    char events[4096];
    ssize_t n = ::read(fd, events, sizeof events);
    int err = errno;
    ::close(fd);
    CHECK(n < 0);
    CHECK(err == EAGAIN);
    CHECK(r.all_verified());
    CHECK(r.bytes_read == 90006);
}

TEST_CASE("verifier: files a content layout puts elsewhere are read at their disk paths") {
    Scratch s;
    MemTorrent t = payload(MemKind::v1);
    t.write_payload(s.path());
    Metainfo m = meta_of(t);
    // As qBittorrent's NoSubfolder places it: without the root folder.
    fs::rename(s.path() / "root", s.path() / "flat");
    for (const auto& e : fs::directory_iterator(s.path() / "flat")) fs::rename(e.path(), s.path() / e.path().filename());
    fs::remove(s.path() / "flat");
    CHECK_FALSE(run(m, s.path()).all_verified());
    VerifyOptions o;
    o.disk_paths = {"a", "b", "c", "dir/d", "e"};
    VerifyReport r = run(m, s.path(), o);
    CHECK(r.all_verified());
    CHECK(r.pieces_ok == m.piece_count());
    CHECK(file(r, 3).path == "root/dir/d");  // reported by its metainfo path
}

TEST_CASE("verifier: a hybrid without its piece layers is proven by SHA-1; a v2-only one is refused") {
    for (MemKind kind : {MemKind::v2, MemKind::hybrid}) {
        Scratch s;
        MemTorrent t = payload(kind);
        t.write_payload(s.path());
        auto v = t.build();
        auto& top = v.mutable_dict();
        std::erase_if(top, [](const auto& e) { return e.key == "piece layers"; });
        auto m = parse_metainfo(bencode::encode(v), "t.torrent", k_layers_optional);
        REQUIRE(m.ok());
        CHECK(m->layers_missing());
        auto r = verify(*m, s.path(), VerifyOptions{});
        if (kind == MemKind::v2) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error().message.find("no 'piece layers'") != std::string::npos);
            continue;
        }
        REQUIRE(r.ok());
        CHECK(r->all_verified());
        flip_byte(s.path() / "root" / "dir" / "d", 35000);
        auto bad = verify(*m, s.path(), VerifyOptions{});
        REQUIRE(bad.ok());
        CHECK(file(*bad, 3).verdict == FileVerdict::corrupt);
    }
}
