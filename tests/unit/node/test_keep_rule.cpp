// The keep rule (lib/node/server/keep_rule.hpp): one table of "must this path stay" for unmerge,
// cleanup and unlink_owned, then the same rule seen through each operation.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "lib/node/server/keep_rule.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

struct stat file_stat(mode_t type, std::uint64_t size, std::uint64_t ino, nlink_t links) {
    struct stat st {};
    st.st_mode = type | 0644;
    st.st_size = static_cast<off_t>(size);
    st.st_ino = static_cast<ino_t>(ino);
    st.st_nlink = links;
    return st;
}

struct Row {
    const char* name;
    OwnedPath owned;
    struct stat now;
    std::set<std::string> referenced;
    OtherLinks links;
    KeepReason expected;
};

}  // namespace

TEST_CASE("the keep rule: one table for every caller") {
    const std::string p = "/qb/T/a.bin";
    const OwnedPath recorded{p, 100, 7};
    const Row rows[] = {
        {"an unchanged file nobody references goes", recorded, file_stat(S_IFREG, 100, 7, 1), {}, OtherLinks::keep_file, KeepReason::none},
        {"referenced by another torrent", recorded, file_stat(S_IFREG, 100, 7, 1), {p}, OtherLinks::keep_file, KeepReason::referenced},
        {"a reference to another path does not count", recorded, file_stat(S_IFREG, 100, 7, 1), {"/qb/T/b.bin"}, OtherLinks::keep_file,
         KeepReason::none},
        {"referenced wins over every other reason", recorded, file_stat(S_IFDIR, 5, 9, 3), {p}, OtherLinks::keep_file, KeepReason::referenced},
        {"a directory is not a regular file", recorded, file_stat(S_IFDIR, 100, 7, 1), {}, OtherLinks::allowed, KeepReason::not_regular},
        {"a symlink is not a regular file", recorded, file_stat(S_IFLNK, 100, 7, 1), {}, OtherLinks::allowed, KeepReason::not_regular},
        {"size changed", recorded, file_stat(S_IFREG, 101, 7, 1), {}, OtherLinks::allowed, KeepReason::size_changed},
        {"replaced: the inode differs", recorded, file_stat(S_IFREG, 100, 8, 1), {}, OtherLinks::allowed, KeepReason::replaced},
        {"other hard links keep a placed file", recorded, file_stat(S_IFREG, 100, 7, 2), {}, OtherLinks::keep_file, KeepReason::other_links},
        {"other hard links are allowed for a cache file or a staged link", recorded, file_stat(S_IFREG, 100, 7, 2), {},
         OtherLinks::allowed, KeepReason::none},
        {"no recorded size or inode: those checks are skipped", OwnedPath{p, std::nullopt, std::nullopt}, file_stat(S_IFREG, 5, 9, 1), {},
         OtherLinks::allowed, KeepReason::none},
        {"no recorded inode, size still checked", OwnedPath{p, 100, std::nullopt}, file_stat(S_IFREG, 5, 9, 1), {}, OtherLinks::allowed,
         KeepReason::size_changed},
    };
    for (const auto& row : rows) {
        CAPTURE(row.name);
        KeepVerdict v = keep_verdict(row.owned, row.now, row.referenced, row.links);
        CHECK(v.reason == row.expected);
        CHECK(v.keep() == (row.expected != KeepReason::none));
        CHECK(v.text.empty() == !v.keep());
    }
    KeepVerdict referenced = keep_verdict(recorded, file_stat(S_IFREG, 100, 7, 1), {p}, OtherLinks::allowed);
    CHECK(referenced.text == "referenced by another torrent");
    CHECK(json(kept_entry(p, referenced)) == json{{"path", p}, {"reason", "referenced by another torrent"}, {"code", "referenced"}});
    CHECK(keep_verdict(recorded, file_stat(S_IFDIR, 100, 7, 1), {}, OtherLinks::allowed).text == "a dir, not a regular file");
}

NODE_TEST(unmerge_applies_the_keep_rule_to_every_file_it_placed) {
    const std::size_t size = 4096;
    json files = json::array();
    const char* paths[] = {"S/a.bin", "S/b.bin", "S/c.bin", "S/d.bin", "S/e.bin"};
    for (unsigned i = 0; i < 5; ++i) {
        f.write("sync/route/job/p/" + std::to_string(i), random_bytes(size, 10 + i));
        files.push_back({{"index", i}, {"path", paths[i]}, {"size", size}});
    }
    std::string s = f.qb() + "/save";
    f.write("qb/save/S/e.bin", random_bytes(size, 99));  // pre-existing, reused
    json req = {{"job_dir", f.sync() + "/route/job"}, {"save_path", s}, {"files", files}};
    f.ok(Op::merge, req);
    auto e_before = lstat_path(s + "/S/e.bin");
    // a: referenced; b: replaced by another file; c: linked elsewhere; d: nobody's.
    // Written beside it and renamed over it: a new inode (a freed one could be reused at once).
    f.write("qb/save/S/b.bin.new", random_bytes(size, 50));
    std::filesystem::rename(s + "/S/b.bin.new", s + "/S/b.bin");
    std::filesystem::create_hard_link(s + "/S/c.bin", f.outside() + "/c-link");
    json u = f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", s}, {"referenced", {s + "/S/a.bin"}}});
    std::map<std::string, std::string> codes;
    for (const auto& k : u["kept"]) codes[k["path"]] = k["code"];
    CHECK(codes[s + "/S/a.bin"] == "referenced");
    CHECK(codes[s + "/S/b.bin"] == "replaced");
    CHECK(codes[s + "/S/c.bin"] == "other_links");
    CHECK(codes.size() == 3);  // S/ was there before the merge: no directory of the job to remove
    CHECK(codes.count(s + "/S/e.bin") == 0);
    CHECK(u["preexisting"] == json{s + "/S/e.bin"});
    CHECK(u["removed"] == json{s + "/S/d.bin"});
    for (const char* kept : {"S/a.bin", "S/b.bin", "S/c.bin"}) CHECK(std::filesystem::exists(s + "/" + kept));
    CHECK(lstat_path(s + "/S/e.bin").ino == e_before.ino);
    CHECK(file_content(s + "/S/e.bin") == random_bytes(size, 99));
}

NODE_TEST(cleanup_keeps_a_staged_file_another_torrent_references) {
    f.write("qb/save/T/a.bin", random_bytes(1000, 1));
    f.write("qb/save/T/b.bin", random_bytes(2000, 2));
    std::filesystem::create_directories(f.sync() + "/route");
    json files = {{{"index", 0}, {"path", "T/a.bin"}, {"size", 1000}}, {{"index", 1}, {"path", "T/b.bin"}, {"size", 2000}}};
    std::string job = f.sync() + "/route/job";
    f.ok(Op::stage, {{"job_dir", job}, {"source_base", f.qb() + "/save"}, {"files", files}});
    json r = f.ok(Op::cleanup, {{"job_dir", job}, {"referenced", {job + "/p/1"}}});
    CHECK(r["job_dir"] == "kept");
    CHECK(list_files(job) == std::vector<std::string>{"p/1"});
    bool found = false;
    for (const auto& k : r["kept"])
        if (k["path"] == job + "/p/1") found = k["code"] == "referenced";
    CHECK(found);
    // Staged links share the source's inode: the other link did not keep p/0, and the source
    // survives both.
    CHECK(file_content(f.qb() + "/save/T/a.bin") == random_bytes(1000, 1));
    CHECK(file_content(f.qb() + "/save/T/b.bin") == random_bytes(2000, 2));
}

NODE_TEST(unlink_owned_keeps_a_replaced_file_and_unlinks_a_linked_one) {
    std::string s = f.qb() + "/save";
    f.write("qb/save/T/a.bin", "aaaa");
    f.write("qb/save/T/b.bin", "bbbb");
    std::filesystem::create_hard_link(s + "/T/b.bin", f.outside() + "/b-link");
    auto a = lstat_path(s + "/T/a.bin");
    auto b = lstat_path(s + "/T/b.bin");
    f.write("qb/save/T/a.bin.new", "AAAA");
    std::filesystem::rename(s + "/T/a.bin.new", s + "/T/a.bin");
    json r = f.ok(Op::unlink_owned, {{"stop_at", s},
                                   {"paths", {json{{"path", s + "/T/a.bin"}, {"size", 4}, {"ino", a.ino}},
                                              json{{"path", s + "/T/b.bin"}, {"size", 4}, {"ino", b.ino}}}}});
    CHECK(std::filesystem::exists(s + "/T/a.bin"));
    CHECK_FALSE(std::filesystem::exists(s + "/T/b.bin"));
    CHECK(file_content(f.outside() + "/b-link") == "bbbb");
    CHECK(r["kept"][0]["code"] == "replaced");
}
