// partfile_build on both transports: the libtorrent part file a new v1 target needs, written
// from the bytes of files outside its selection (on disk, or in the source's own part file).

#include <unistd.h>

#include <filesystem>

#include "lib/torrent/sha.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

std::string big_endian32(std::uint32_t v) {
    std::string out(4, '\0');
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    return out;
}

constexpr std::uint32_t k_piece = 16384;

// Three files in piece space: a [0,10000), b [10000,30000), c [30000,35000); pieces 0, 1, 2
// (the last 2232 bytes). Piece 0 holds a|b, piece 1 b|c, piece 2 only c.
struct Payload {
    std::string a = random_bytes(10000, 11), b = random_bytes(20000, 12), c = random_bytes(5000, 13);
    std::string all() const { return a + b + c; }
    std::string sha1_of(std::uint32_t piece) const {
        std::string bytes = all().substr(std::size_t{piece} * k_piece, k_piece);
        return torrent::to_hex(torrent::sha1(bytes));
    }
};

json range(std::uint64_t at, std::uint64_t length, const std::string& path, std::uint64_t offset, bool keep) {
    json r = {{"at", at}, {"length", length}, {"path", path}, {"offset", offset}};
    if (keep) r["keep"] = true;
    return r;
}

// Selection {a, c}: pieces 0 and 1 need b's bytes.
json request_for(NodeFixture& f, const Payload& p, const std::string& to) {
    std::string dir = f.qb() + "/save/T/";
    return {{"to", to},
            {"create_parents", true},
            {"piece_count", 3},
            {"piece_size", k_piece},
            {"pieces",
             {{{"piece", 0}, {"length", k_piece}, {"sha1", p.sha1_of(0)},
               {"ranges", {range(0, 10000, dir + "a.bin", 0, false), range(10000, 6384, dir + "b.bin", 0, true)}}},
              {{"piece", 1}, {"length", k_piece}, {"sha1", p.sha1_of(1)},
               {"ranges", {range(0, 13616, dir + "b.bin", 6384, true), range(13616, 2768, dir + "c.bin", 0, false)}}}}}};
}

void write_payload(NodeFixture& f, const Payload& p) {
    f.write("qb/save/T/a.bin", p.a);
    f.write("qb/save/T/b.bin", p.b);
    f.write("qb/save/T/c.bin", p.c);
}

}  // namespace

NODE_TEST(partfile_build_writes_the_slots_libtorrent_reads) {
    Payload p;
    write_payload(f, p);
    std::string to = f.sync() + "/route/job/a/partfile";
    json r = f.ok(Op::partfile_build, request_for(f, p, to));
    CHECK(r["used_slots"] == 2);
    CHECK(r["slots"] == json{{{"piece", 0}, {"slot", 0}}, {{"piece", 1}, {"slot", 1}}});
    CHECK(r["failed"] == json::array());
    std::string built = file_content(to);
    REQUIRE(built.size() == 1024 + 2 * k_piece);
    CHECK(r["bytes"] == built.size());
    std::string header = big_endian32(3) + big_endian32(k_piece) + big_endian32(0) + big_endian32(1) + big_endian32(0xFFFFFFFFu);
    header.resize(1024, '\0');
    CHECK(built.substr(0, 1024) == header);
    // Slot 0 (piece 0): only b's bytes, at their piece-relative offset; slot 1 (piece 1) likewise.
    CHECK(built.substr(1024, 10000) == std::string(10000, '\0'));
    CHECK(built.substr(1024 + 10000, 6384) == p.b.substr(0, 6384));
    CHECK(built.substr(1024 + k_piece, 13616) == p.b.substr(6384, 13616));
    CHECK(built.substr(1024 + k_piece + 13616, 2768) == std::string(2768, '\0'));
    // The node reads it back as a valid part file of this torrent.
    json h = f.ok(Op::partfile_read, {{"path", to}, {"expect_pieces", 3}, {"expect_piece_size", k_piece}});
    CHECK(h["slots"] == r["slots"]);
    CHECK(list_files(f.sync() + "/route/job/a").size() == 1);  // no temp file
}

NODE_TEST(partfile_build_reads_a_skipped_files_bytes_from_the_source_part_file) {
    Payload p;
    write_payload(f, p);
    std::filesystem::remove(f.qb() + "/save/T/b.bin");
    // The source's own part file: piece 1 in slot 0, piece 0 in slot 1 (b's bytes only).
    std::string source = big_endian32(3) + big_endian32(k_piece) + big_endian32(1) + big_endian32(0) + big_endian32(0xFFFFFFFFu);
    source.resize(1024, '\0');
    std::string slot0(k_piece, '\0'), slot1(k_piece, '\0');
    slot0.replace(0, 13616, p.b.substr(6384, 13616));
    slot1.replace(10000, 6384, p.b.substr(0, 6384));
    f.write("qb/save/.src.parts", source + slot0 + slot1.substr(0, 16384));
    json request = request_for(f, p, f.sync() + "/route/job/a/partfile");
    request["source_partfile"] = f.qb() + "/save/.src.parts";
    for (auto& piece : request["pieces"])
        for (auto& r : piece["ranges"])
            if (r.value("keep", false)) {
                r.erase("path");
                r.erase("offset");
                r["from_partfile"] = true;
            }
    json r = f.ok(Op::partfile_build, request);
    std::string built = file_content(f.sync() + "/route/job/a/partfile");
    CHECK(built.substr(1024 + 10000, 6384) == p.b.substr(0, 6384));
    CHECK(built.substr(1024 + k_piece, 13616) == p.b.substr(6384, 13616));
    // A piece the source's part file does not hold is refused, not guessed.
    request["pieces"][0]["piece"] = 2;
    request["pieces"][0]["length"] = 35000 - 2 * k_piece;
    request["pieces"][0].erase("sha1");
    request["pieces"][0]["ranges"] = {{{"at", 0}, {"length", 10}, {"from_partfile", true}, {"keep", true}}};
    Error e = f.fails(Op::partfile_build, request);
    CHECK(e.code == "PARTFILE_INVALID");
    CHECK(e.message.find("does not hold piece 2") != std::string::npos);
}

NODE_TEST(partfile_build_refuses_what_it_cannot_prove) {
    Payload p;
    write_payload(f, p);
    std::string dir = f.sync() + "/route/job/a";
    std::string to = dir + "/partfile";
    // b's bytes on disk are not the torrent's: piece 0 does not match its SHA-1.
    std::string wrong = p.b;
    wrong[100] = static_cast<char>(wrong[100] ^ 1);
    f.write("qb/save/T/b.bin", wrong);
    Error e = f.fails(Op::partfile_build, request_for(f, p, to));
    CHECK(e.code == "PARTFILE_INVALID");
    CHECK(e.message.find("piece 0") != std::string::npos);
    CHECK(!std::filesystem::exists(to));
    CHECK(list_files(dir).empty());  // no temp file left behind
    // A dry run writes nothing and says which pieces fail.
    json dry = request_for(f, p, to);
    dry["dry_run"] = true;
    CHECK(f.ok(Op::partfile_build, dry)["failed"] == json{0});
    CHECK(list_files(dir).empty());
    f.write("qb/save/T/b.bin", p.b);
    dry["to"] = "";
    CHECK(f.ok(Op::partfile_build, dry)["failed"] == json::array());
    // The free-space floor: nothing written.
    json floor = request_for(f, p, to);
    floor["min_free"] = std::uint64_t{1} << 62;
    CHECK(f.fails(Op::partfile_build, floor).code == "DISK_INSUFFICIENT");
    CHECK(list_files(dir).empty());
    // A neighbour reached through a symlink is refused.
    std::filesystem::rename(f.qb() + "/save/T/b.bin", f.qb() + "/save/b.bin");
    std::filesystem::create_symlink(f.qb() + "/save/b.bin", f.qb() + "/save/T/b.bin");
    CHECK(f.fails(Op::partfile_build, request_for(f, p, to)).code == "PATH_SYMLINK");
    CHECK(list_files(dir).empty());
    // A file shorter than the range it should hold.
    std::filesystem::remove(f.qb() + "/save/T/b.bin");
    f.write("qb/save/T/b.bin", p.b.substr(0, 100));
    CHECK(f.fails(Op::partfile_build, request_for(f, p, to)).code == "SOURCE_CHANGED");
    // Malformed requests.
    json bad = request_for(f, p, to);
    bad["pieces"][0]["ranges"][0]["length"] = 20000;  // past the piece
    CHECK(f.fails(Op::partfile_build, bad).code == "BAD_REQUEST");
    bad = request_for(f, p, to);
    bad["pieces"][1]["piece"] = 0;  // listed twice
    CHECK(f.fails(Op::partfile_build, bad).code == "BAD_REQUEST");
    CHECK(list_files(dir).empty());
}

NODE_TEST(partfile_build_into_a_filesystem_without_room_stops_and_leaves_no_temp_file) {
    std::string dir = f.sync() + "/route/job/a";
    std::filesystem::create_directories(dir);
    if (::geteuid() != 0 || archctl::test::run({"mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir}).exit_code != 0) {
        MESSAGE("tmpfs mount not permitted here; a full filesystem during partfile_build not exercised");
        return;
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { archctl::test::run({"umount", "-l", dir}); }
    } unmount{dir};
    f.reconnect();
    // One 2 MiB piece: 1.5 MiB of a skipped file kept, more than the filesystem holds.
    constexpr std::uint64_t piece = 2u << 20, kept = 3u << 19;
    std::string skipped = random_bytes(kept, 21);
    f.write("qb/save/T/skipped.bin", skipped);
    json request = {{"to", dir + "/partfile"},
                    {"piece_count", 1},
                    {"piece_size", piece},
                    {"pieces", {{{"piece", 0}, {"length", piece}, {"ranges", {range(0, kept, f.qb() + "/save/T/skipped.bin", 0, true)}}}}}};
    // Refused before a byte is written: it would write more than the filesystem has free.
    Error e = f.fails(Op::partfile_build, request);
    CHECK(e.code == "DISK_INSUFFICIENT");
    CHECK(e.message.find("free, it needs 1.5 MiB") != std::string::npos);
    CHECK(list_files(dir).empty());
    REQUIRE(archctl::test::run({"mount", "-o", "remount,size=8m", dir}).exit_code == 0);
    json r = f.ok(Op::partfile_build, request);
    CHECK(file_content(dir + "/partfile").substr(1024, kept) == skipped);
    f.reconnect();  // drop the descriptors into the tmpfs before it is unmounted
}
