// chmod_readable, cleanup, nonce, unlink_owned, partfile and verify_pieces on both transports.

#include <sys/stat.h>

#include <fstream>

#include "lib/base/base64.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/torrent/creator.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

std::string be32(std::uint32_t v) {
    std::string out(4, '\0');
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    return out;
}

// A part file like docs/torrent-format.md "A part file as libtorrent writes it": 14 pieces of 16384,
// piece 6 in slot 1, piece 9 in slot 0.
std::string partfile(std::size_t total_size, std::uint32_t piece6_slot = 1) {
    std::string h = be32(14) + be32(16384);
    for (std::uint32_t p = 0; p < 14; ++p) h += be32(p == 6 ? piece6_slot : p == 9 ? 0 : 0xFFFFFFFFu);
    h.resize(1024, '\0');
    std::string body = random_bytes(total_size - 1024, 3);
    return h + body;
}

}  // namespace

NODE_TEST(chmod_readable_adds_read_bits_and_keeps_the_rest) {
    f.write("qb/save/T/sub/a.bin", "a");
    f.write("qb/save/T/b.bin", "b");
    ::chmod((f.qb() + "/save/T").c_str(), 0700);
    ::chmod((f.qb() + "/save/T/sub").c_str(), 0750);
    ::chmod((f.qb() + "/save/T/sub/a.bin").c_str(), 04600);
    ::chmod((f.qb() + "/save/T/b.bin").c_str(), 0620);
    json r = f.ok(Op::chmod_readable, {{"base", f.qb() + "/save"}, {"paths", {"T/sub/a.bin", "T/b.bin", "T/gone.bin"}}});
    CHECK(lstat_path(f.qb() + "/save/T").mode == 0755);
    CHECK(lstat_path(f.qb() + "/save/T/sub").mode == 0755);
    CHECK(lstat_path(f.qb() + "/save/T/sub/a.bin").mode == 04644);
    CHECK(lstat_path(f.qb() + "/save/T/b.bin").mode == 0664);
    CHECK(r["files_changed"] == 2);
    CHECK(r["dirs_changed"] == 2);
    CHECK(r["missing"] == json{"T/gone.bin"});
    std::filesystem::create_symlink(f.outside(), f.qb() + "/save/T/link");
    CHECK(f.fails(Op::chmod_readable, {{"base", f.qb() + "/save"}, {"paths", {"T/link/x"}}}).code == "PATH_SYMLINK");
}

NODE_TEST(cleanup_removes_only_job_owned_artifacts) {
    f.write("qb/save/T/a.bin", random_bytes(1000, 1));
    f.write("qb/save/T/b.bin", random_bytes(2000, 2));
    std::filesystem::create_directories(f.sync() + "/route");
    json files = {{{"index", 0}, {"path", "T/a.bin"}, {"size", 1000}}, {{"index", 4}, {"path", "T/b.bin"}, {"size", 2000}}};
    std::string job = f.sync() + "/route/job";
    f.ok(Op::stage, {{"job_dir", job}, {"source_base", f.qb() + "/save"}, {"files", files},
                   {"aux", {{{"name", "resource.torrent"}, {"data_b64", base64_encode("d1:xi1ee")}}}}});
    f.write("sync/route/job/p/notes.txt", "mine");
    f.write("sync/route/job/p/.syncthing.9.tmp", "pulling");
    json r = f.ok(Op::cleanup, {{"job_dir", job}});
    CHECK(r["job_dir"] == "kept");
    CHECK(list_files(job) == std::vector<std::string>{"p/.syncthing.9.tmp", "p/notes.txt"});
    CHECK(r["kept"].size() >= 3);  // the two files and the non-empty p/
    CHECK(file_content(f.qb() + "/save/T/a.bin") == random_bytes(1000, 1));  // the source survives its link
    std::filesystem::remove(job + "/p/notes.txt");
    std::filesystem::remove(job + "/p/.syncthing.9.tmp");
    r = f.ok(Op::cleanup, {{"job_dir", job}});
    CHECK(r["job_dir"] == "removed");
    CHECK_FALSE(std::filesystem::exists(job));
    CHECK(std::filesystem::exists(f.sync() + "/route"));
    CHECK(f.ok(Op::cleanup, {{"job_dir", job}})["job_dir"] == "absent");
}

NODE_TEST(nonce_files_round_trip) {
    std::filesystem::create_directories(f.sync() + "/route");
    std::string path = f.sync() + "/route/.archctl-nonce-abc";
    CHECK(f.ok(Op::nonce_observe, {{"path", path}})["present"] == false);
    f.ok(Op::nonce_write, {{"path", path}, {"content", "n-123"}});
    json seen = f.ok(Op::nonce_observe, {{"path", path}});
    CHECK(seen["present"] == true);
    CHECK(seen["content"] == "n-123");
    CHECK(f.ok(Op::nonce_observe, {{"path", f.sync() + "/nope/x"}})["present"] == false);
    CHECK(f.fails(Op::nonce_write, {{"path", f.sync() + "/nope/x"}, {"content", "n"}}).code == "NOT_FOUND");
    f.ok(Op::nonce_write, {{"path", f.sync() + "/nope/x"}, {"content", "n"}, {"create_parents", true}});
    CHECK(file_content(f.sync() + "/nope/x") == "n");
}

NODE_TEST(unlink_owned_keeps_referenced_files_and_unknown_content) {
    for (const char* rel : {"T/a.bin", "T/b.bin", "T/sub/x.bin", "T/sub/unknown.txt", "T/only/y.bin"}) f.write(std::string("qb/save/") + rel, rel);
    std::string s = f.qb() + "/save";
    json r = f.ok(Op::unlink_owned, {{"stop_at", s},
                                   {"paths", {s + "/T/a.bin", s + "/T/b.bin", s + "/T/sub/x.bin", json{{"path", s + "/T/only/y.bin"}, {"size", 12}}}},
                                   {"referenced", {s + "/T/b.bin"}}});
    CHECK_FALSE(std::filesystem::exists(s + "/T/a.bin"));
    CHECK(std::filesystem::exists(s + "/T/b.bin"));
    CHECK_FALSE(std::filesystem::exists(s + "/T/sub/x.bin"));
    CHECK(std::filesystem::exists(s + "/T/sub/unknown.txt"));
    CHECK_FALSE(std::filesystem::exists(s + "/T/only"));  // owned and emptied
    CHECK(std::filesystem::exists(s));
    std::map<std::string, std::string> kept;
    for (const auto& k : r["kept"]) kept[k["path"]] = k["reason"];
    CHECK(kept[s + "/T/b.bin"] == "referenced by another torrent");
    CHECK(kept[s + "/T/sub"] == "directory has other content");
    CHECK(kept.count(s + "/T") == 1);
    // A recorded size that no longer matches keeps the file.
    f.write("qb/save/T/c.bin", "ccc");
    r = f.ok(Op::unlink_owned, {{"stop_at", s}, {"paths", {json{{"path", s + "/T/c.bin"}, {"size", 99}}}}});
    CHECK(std::filesystem::exists(s + "/T/c.bin"));
    CHECK(f.fails(Op::unlink_owned, {{"stop_at", s}, {"paths", {f.qb() + "/other"}}}).code == "BAD_REQUEST");
}

NODE_TEST(unlink_owned_checks_every_path_before_the_first_unlink_and_a_failure_says_what_it_removed) {
    for (const char* rel : {"T/a.bin", "T/b.bin"}) f.write(std::string("qb/save/") + rel, rel);
    std::string s = f.qb() + "/save";
    // A path outside stop_at later in the request: nothing is unlinked.
    Error refused = f.fails(Op::unlink_owned, {{"stop_at", s}, {"paths", {s + "/T/a.bin", f.qb() + "/other"}}});
    CHECK(refused.code == "BAD_REQUEST");
    CHECK(std::filesystem::exists(s + "/T/a.bin"));
    // A path that cannot be reached (its parent is a file) after one that was unlinked: the
    // error says what the request had removed before it.
    Error failed = f.fails(Op::unlink_owned, {{"stop_at", s}, {"paths", {s + "/T/a.bin", s + "/T/b.bin/x"}}});
    CAPTURE(failed.message);
    CHECK_FALSE(std::filesystem::exists(s + "/T/a.bin"));
    CHECK(failed.message.find("after unlinking 1 path(s) of this request, the last '" + s + "/T/a.bin'") != std::string::npos);
}

NODE_TEST(partfile_read_parses_the_header_and_refuses_what_it_cannot_prove) {
    f.write("qb/save/.lab.parts", partfile(33792));
    json h = f.ok(Op::partfile_read, {{"path", f.qb() + "/save/.lab.parts"}, {"expect_pieces", 14}, {"expect_piece_size", 16384}});
    CHECK(h["piece_count"] == 14);
    CHECK(h["piece_size"] == 16384);
    CHECK(h["header_size"] == 1024);
    CHECK(h["used_slots"] == 2);
    CHECK(h["slots"] == json{{{"piece", 6}, {"slot", 1}}, {{"piece", 9}, {"slot", 0}}});
    CHECK(f.fails(Op::partfile_read, {{"path", f.qb() + "/save/.lab.parts"}, {"expect_pieces", 15}}).code == "PARTFILE_INVALID");
    // The second lab file ends inside its last slot (19954 bytes): refused unless allowed.
    f.write("qb/save/.short.parts", partfile(19954));
    CHECK(f.fails(Op::partfile_read, {{"path", f.qb() + "/save/.short.parts"}}).code == "PARTFILE_INVALID");
    json s = f.ok(Op::partfile_read, {{"path", f.qb() + "/save/.short.parts"}, {"allow_short_last_slot", true}});
    CHECK(s["short_slots"] == json{6});
    f.write("qb/save/.dup.parts", partfile(33792, 0));
    CHECK(f.fails(Op::partfile_read, {{"path", f.qb() + "/save/.dup.parts"}}).code == "PARTFILE_INVALID");
    f.write("qb/save/.tiny.parts", partfile(1024).substr(0, 500));
    CHECK(f.fails(Op::partfile_read, {{"path", f.qb() + "/save/.tiny.parts"}}).code == "PARTFILE_INVALID");
}

NODE_TEST(partfile_copy_places_it_atomically_and_never_overwrites_another) {
    std::string data = partfile(33792);
    f.write("qb/save/.src.parts", data);
    std::filesystem::create_directories(f.sync() + "/route/job/a");
    json r = f.ok(Op::partfile_copy, {{"from", f.qb() + "/save/.src.parts"}, {"to", f.sync() + "/route/job/a/partfile"},
                                    {"expect_pieces", 14}, {"expect_piece_size", 16384}});
    CHECK(r["already"] == false);
    CHECK(file_content(f.sync() + "/route/job/a/partfile") == data);
    std::filesystem::create_directories(f.qb() + "/target");
    std::string to = f.qb() + "/target/.0123456789abcdef0123456789abcdef01234567.parts";
    f.ok(Op::partfile_copy, {{"from", f.sync() + "/route/job/a/partfile"}, {"to", to}});
    CHECK(file_content(to) == data);
    CHECK(f.ok(Op::partfile_copy, {{"from", f.sync() + "/route/job/a/partfile"}, {"to", to}})["already"] == true);
    f.write("qb/target/.0123456789abcdef0123456789abcdef01234567.parts", partfile(33792, 1) + "x");
    CHECK(f.fails(Op::partfile_copy, {{"from", f.sync() + "/route/job/a/partfile"}, {"to", to}}).code == "PARTFILE_EXISTS");
    CHECK(list_files(f.qb() + "/target").size() == 1);  // no temp file left behind
}

NODE_TEST(partfile_copy_refuses_to_cross_the_free_space_floor) {
    f.write("qb/save/.src.parts", partfile(33792));
    std::filesystem::create_directories(f.sync() + "/route/job/a");
    json request = {{"from", f.qb() + "/save/.src.parts"}, {"to", f.sync() + "/route/job/a/partfile"},
                    {"min_free", std::uint64_t{1} << 62}};  // more than any disk has free
    Error e = f.fails(Op::partfile_copy, request);
    CHECK(e.code == "DISK_INSUFFICIENT");
    CHECK(e.message.find("floor") != std::string::npos);
    CHECK(list_files(f.sync() + "/route/job/a").empty());  // nothing written, no temp file
    request["min_free"] = 1;
    CHECK(f.ok(Op::partfile_copy, request)["already"] == false);
}

NODE_TEST(verify_pieces_checks_the_nodes_own_disk) {
    f.write("qb/save/Pay/a.bin", random_bytes(100001, 1));
    f.write("qb/save/Pay/b.bin", random_bytes(50001, 2));
    torrent::CreateOptions options;
    options.kind = torrent::Kind::v1;
    options.piece_length = 16384;
    auto meta = torrent::create_torrent(f.qb() + "/save/Pay", options);
    REQUIRE(meta.ok());
    json args = {{"save_path", f.qb() + "/save"}, {"torrent_b64", base64_encode(meta.value())}};
    json ok = f.ok(Op::verify_pieces, args);
    CHECK(ok["verified"] == true);
    {
        std::fstream io(f.qb() + "/save/Pay/b.bin", std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(40000);
        io.put('!');
    }
    json bad = f.ok(Op::verify_pieces, args);
    CHECK(bad["verified"] == false);
    std::filesystem::create_directory_symlink(f.qb() + "/save", f.qb() + "/alias");
    CHECK(f.fails(Op::verify_pieces, {{"save_path", f.qb() + "/alias"}, {"torrent_b64", base64_encode(meta.value())}}).code == "PATH_SYMLINK");
}
