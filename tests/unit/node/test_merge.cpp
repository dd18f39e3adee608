// merge / unmerge on both transports: placing, provenance, conflicts, crash points.

#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::size_t k_merge_size = 256u << 10;

// A received job in sync/route/<job>/p/{1,3,5} (as Syncthing leaves it: nlink 1) and the
// merge request that places it under qb/save.
json received(NodeFixture& f, const std::string& job = "job") {
    json files = json::array();
    const char* paths[] = {"Show/a.bin", "Show/b.bin", "Show/extras/c.bin"};
    for (unsigned i = 0; i < 3; ++i) {
        unsigned index = i * 2 + 1;
        f.write("sync/route/" + job + "/p/" + std::to_string(index), random_bytes(k_merge_size, 60 + i));
        files.push_back({{"index", index}, {"path", paths[i]}, {"size", k_merge_size}});
    }
    return {{"job_dir", f.sync() + "/route/" + job}, {"save_path", f.qb() + "/save"}, {"files", files}};
}

std::set<std::uint64_t> inodes_below(const std::string& dir) {
    std::set<std::uint64_t> out;
    for (const auto& name : list_files(dir)) out.insert(lstat_path(dir + "/" + name).ino);
    return out;
}

json by_index(const json& provenance, unsigned index) {
    for (const auto& p : provenance)
        if (p["index"] == index) return p;
    FAIL("no provenance for " << index);
    return {};
}

}  // namespace

NODE_TEST(merge_moves_received_files_out_of_the_route_folder) {
    json req = received(f);
    std::map<unsigned, std::string> content;
    for (unsigned i : {1u, 3u, 5u}) content[i] = file_content(f.sync() + "/route/job/p/" + std::to_string(i));
    json r = f.ok(Op::merge, req);
    CHECK(r["complete"] == true);
    REQUIRE(r["provenance"].size() == 3);
    auto route_inodes = inodes_below(f.sync() + "/route");
    for (const auto& file : req["files"]) {
        std::string placed = f.qb() + "/save/" + file["path"].get<std::string>();
        auto st = lstat_path(placed);
        CHECK(file_content(placed) == content[file["index"]]);
        CHECK(st.nlink == 1);
        CHECK(route_inodes.count(st.ino) == 0);
        json p = by_index(r["provenance"], file["index"]);
        CHECK(p["provenance"] == "created");
        CHECK(p["how"] == "rename");
        CHECK(p["ino"] == st.ino);
    }
    CHECK(list_files(f.sync() + "/route/job/p").empty());
    std::set<std::string> dirs = r["dirs_created"].get<std::set<std::string>>();
    CHECK(dirs == std::set<std::string>{f.qb() + "/save", f.qb() + "/save/Show", f.qb() + "/save/Show/extras"});
    // A rerun recognises its own files and changes nothing.
    json again = f.ok(Op::merge, req);
    CHECK(again["provenance"] == r["provenance"]);
    // unmerge takes back exactly that.
    json u = f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    CHECK(u["removed"].size() == 6);
    CHECK_FALSE(std::filesystem::exists(f.qb() + "/save"));
    CHECK(f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}})["record"] == "absent");
}

NODE_TEST(merge_reuses_a_same_size_file_and_unmerge_never_removes_it) {
    json req = received(f);
    std::string mine = random_bytes(k_merge_size, 99);
    f.write("qb/save/Show/a.bin", mine);
    auto before = lstat_path(f.qb() + "/save/Show/a.bin");
    json r = f.ok(Op::merge, req);
    json a = by_index(r["provenance"], 1);
    CHECK(a["provenance"] == "preexisting");
    CHECK(a["ino"] == before.ino);
    CHECK(file_content(f.qb() + "/save/Show/a.bin") == mine);
    CHECK(by_index(r["provenance"], 3)["provenance"] == "created");
    CHECK(r["dirs_created"] == json{f.qb() + "/save/Show/extras"});
    // Another torrent references b.bin: unmerge keeps it, and the pre-existing a.bin.
    json u = f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]},
                              {"referenced", {f.qb() + "/save/Show/b.bin"}}});
    CHECK(file_content(f.qb() + "/save/Show/a.bin") == mine);
    CHECK(std::filesystem::exists(f.qb() + "/save/Show/b.bin"));
    CHECK_FALSE(std::filesystem::exists(f.qb() + "/save/Show/extras"));
    CHECK(u["kept"][0]["reason"] == "referenced by another torrent");
}

NODE_TEST(merge_conflicts_change_nothing) {
    json req = received(f);
    f.write("qb/save/Show/b.bin", "short");
    auto before_route = list_files(f.sync());
    auto before_qb = list_files(f.qb());
    Error e = f.fails(Op::merge, req);
    CHECK(e.code == "MERGE_CONFLICT");
    CHECK(e.message.find("b.bin") != std::string::npos);
    CHECK(list_files(f.sync()) == before_route);
    CHECK(list_files(f.qb()) == before_qb);
    std::filesystem::remove(f.qb() + "/save/Show/b.bin");
    std::filesystem::create_directories(f.qb() + "/save/Show/b.bin");
    CHECK(f.fails(Op::merge, req).code == "MERGE_CONFLICT");
    std::filesystem::remove(f.qb() + "/save/Show/b.bin");
    f.write("qb/save/Show/extras", "a file where a directory belongs");
    CHECK(f.fails(Op::merge, req).code == "MERGE_CONFLICT");
    std::filesystem::remove(f.qb() + "/save/Show/extras");
    std::filesystem::create_directory_symlink(f.outside(), f.qb() + "/save/Show/extras");
    CHECK(f.fails(Op::merge, req).code == "PATH_SYMLINK");
    CHECK(list_files(f.outside()).empty());
    CHECK(list_files(f.sync()) == before_route);
}

NODE_TEST(merge_across_filesystems_copies_and_drops_the_received_file) {
    if (!mount_tmpfs(f.sync())) {
        MESSAGE("tmpfs mount not permitted here; cross-filesystem merge not exercised");
        return;
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { archctl::test::run({"umount", "-l", dir}); }
    } unmount{f.sync()};
    f.reconnect();
    json req = received(f);
    std::string c = file_content(f.sync() + "/route/job/p/5");
    json r = f.ok(Op::merge, req);
    CHECK(by_index(r["provenance"], 5)["how"] == "copy");
    CHECK(r["bytes_copied"] == 3 * k_merge_size);
    CHECK(file_content(f.qb() + "/save/Show/extras/c.bin") == c);
    CHECK(list_files(f.sync() + "/route/job/p").empty());
    f.reconnect();
}

NODE_TEST(a_merge_copy_holds_the_floor_and_leaves_no_temp_file) {
    json req = received(f);
    // A second link makes the received file one merge must copy, not move.
    std::filesystem::create_hard_link(f.sync() + "/route/job/p/1", f.outside() + "/link-1");
    // A temp file an earlier, killed run of this job left beside a destination.
    f.write("qb/save/Show/.archctl-merge-job-3.tmp", "stale");
    json floored = req;
    floored["min_free"] = std::uint64_t{1} << 62;  // more than any disk has free
    json r = f.ok(Op::merge, floored);
    CHECK(r["complete"] == false);
    CHECK(r["stopped"] == "disk");
    CHECK(r["need_bytes"] == k_merge_size);
    CHECK(r["stopped_at"] == f.qb() + "/save/Show/a.bin");
    CHECK(r["free_bytes"].get<std::uint64_t>() > 0);
    // Nothing was written: no temp file, no half file, and the received files wait in the route folder.
    CHECK(list_files(f.qb() + "/save") == std::vector<std::string>{});
    CHECK(list_files(f.sync() + "/route/job/p") == std::vector<std::string>{"1", "3", "5"});
    // merge_record: the pre-state is recorded, nothing is placed yet.
    json rec = f.ok(Op::merge_record, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    CHECK(rec["record"] == "present");
    CHECK(rec["files"] == json::array({1, 3, 5}));
    CHECK(rec["placed"] == json::array());
    // With the floor lowered the same merge completes.
    r = f.ok(Op::merge, req);
    CHECK(r["complete"] == true);
    CHECK(by_index(r["provenance"], 1)["how"] == "copy");
    CHECK(list_files(f.qb() + "/save") == std::vector<std::string>{"Show/a.bin", "Show/b.bin", "Show/extras/c.bin"});
    rec = f.ok(Op::merge_record, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    CHECK(rec["placed"] == json::array({1, 3, 5}));
    f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    CHECK(f.ok(Op::merge_record, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}})["record"] == "absent");
}

NODE_TEST(a_merge_copy_into_a_full_filesystem_stops_and_leaves_no_temp_file) {
    std::filesystem::create_directories(f.qb() + "/save");
    if (::geteuid() != 0 || archctl::test::run({"mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", f.qb() + "/save"}).exit_code != 0) {
        MESSAGE("tmpfs mount not permitted here; a full filesystem during merge not exercised");
        return;
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { archctl::test::run({"umount", "-l", dir}); }
    } unmount{f.qb() + "/save"};
    f.reconnect();
    std::string big = random_bytes(3u << 20, 5);
    f.write("sync/route/job/p/0", big);
    json req = {{"job_dir", f.sync() + "/route/job"}, {"save_path", f.qb() + "/save"},
                {"files", {{{"index", 0}, {"path", "Show/big.bin"}, {"size", big.size()}}}}};
    json r = f.ok(Op::merge, req);  // no floor: the copy runs into the full tmpfs
    CHECK(r["complete"] == false);
    CHECK(r["stopped"] == "disk");
    CHECK(r["stopped_at"] == f.qb() + "/save/Show/big.bin");
    CHECK(list_files(f.qb() + "/save") == std::vector<std::string>{});  // the partial copy is gone
    CHECK(list_files(f.sync() + "/route/job/p") == std::vector<std::string>{"0"});
    REQUIRE(archctl::test::run({"mount", "-o", "remount,size=64m", f.qb() + "/save"}).exit_code == 0);
    r = f.ok(Op::merge, req);
    CHECK(r["complete"] == true);
    CHECK(file_content(f.qb() + "/save/Show/big.bin") == big);
    f.reconnect();  // drop the descriptors into the tmpfs before it is unmounted
}

TEST_CASE("merge converges, or unmerges cleanly, after a crash at every point [exec]") {
    NodeFixture f(Kind::exec);
    json reference = received(f, "ref");
    f.write("qb/save/Show/a.bin", random_bytes(k_merge_size, 7));  // one pre-existing file
    CrashRun clean = run_serve(f, Op::merge, reference, "");
    REQUIRE(clean.exit_code == 0);
    auto specs = crash_specs(clean.passed);
    REQUIRE(specs.size() >= 5);
    std::string preexisting = file_content(f.qb() + "/save/Show/a.bin");
    f.ok(Op::unmerge, {{"job_dir", reference["job_dir"]}, {"save_path", reference["save_path"]}});
    REQUIRE(list_files(f.qb()) == std::vector<std::string>{"save/Show/a.bin"});
    for (const auto& spec : specs) {
        for (bool then_unmerge : {false, true}) {
            CAPTURE(spec);
            CAPTURE(then_unmerge);
            json req = received(f, "job");
            CHECK(run_serve(f, Op::merge, req, spec).exit_code == 137);
            f.reconnect();
            if (!then_unmerge) {
                json r = f.ok(Op::merge, req);
                CHECK(r["complete"] == true);
                CHECK(by_index(r["provenance"], 1)["provenance"] == "preexisting");
                CHECK(list_files(f.qb() + "/save/Show") == std::vector<std::string>{"a.bin", "b.bin", "extras/c.bin"});
            }
            json u = f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
            CHECK(list_files(f.qb()) == std::vector<std::string>{"save/Show/a.bin"});
            CHECK(file_content(f.qb() + "/save/Show/a.bin") == preexisting);
            CHECK_FALSE(std::filesystem::exists(f.qb() + "/save/Show/extras"));
            std::filesystem::remove_all(f.sync() + "/route/job");
        }
    }
}

// qBittorrent's incomplete names ('.!qB'): adopt_incomplete moves this job's file over the
// all-zero file qBittorrent allocated under that name, never over real bytes; unmerge takes back
// this job's file there and the all-zero allocation, and keeps anything else.
NODE_TEST(adopt_incomplete_moves_only_over_an_allocation_and_unmerge_takes_back_the_incomplete_names) {
    json req = received(f);
    std::string partial = random_bytes(1000, 7);
    json r = f.ok(Op::merge, req);
    REQUIRE(r["complete"] == true);
    std::string save = f.qb() + "/save/";
    std::string a_bytes = file_content(save + "Show/a.bin");
    auto a_ino = lstat_path(save + "Show/a.bin").ino;
    f.write("qb/save/Show/a.bin.!qB", std::string(k_merge_size, '\0'));  // what qBittorrent allocates
    f.write("qb/save/Show/b.bin.!qB", partial);                     // real bytes: never replaced
    json base = {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}, {"indices", {1, 3, 5}}};
    json report = base;
    report["adopt"] = false;
    json seen = f.ok(Op::adopt_incomplete, report);
    CHECK(seen["pending"] == json{1});
    CHECK(seen["foreign"] == json{3});
    CHECK(seen["plain"] == json{5});
    CHECK(std::filesystem::exists(save + "Show/a.bin"));
    json adopted = f.ok(Op::adopt_incomplete, base);
    CHECK(adopted["suffixed"] == json{1});
    CHECK(adopted["foreign"] == json{3});
    CHECK(adopted["plain"] == json{5});
    CHECK_FALSE(std::filesystem::exists(save + "Show/a.bin"));
    CHECK(lstat_path(save + "Show/a.bin.!qB").ino == a_ino);
    CHECK(file_content(save + "Show/a.bin.!qB") == a_bytes);
    CHECK(file_content(save + "Show/b.bin.!qB") == partial);
    // c.bin's incomplete name gets an allocation after the fact (qBittorrent selected it late).
    f.write("qb/save/Show/extras/c.bin.!qB", std::string());
    // merge_record still counts a.bin as placed under its incomplete name.
    json rec = f.ok(Op::merge_record, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    CHECK(rec["placed"].size() == 3);
    json u = f.ok(Op::unmerge, {{"job_dir", req["job_dir"]}, {"save_path", req["save_path"]}});
    std::set<std::string> removed = u["removed"].get<std::set<std::string>>();
    CHECK(removed.count(save + "Show/a.bin.!qB") == 1);
    CHECK(removed.count(save + "Show/extras/c.bin.!qB") == 1);
    CHECK(removed.count(save + "Show/b.bin.!qB") == 0);
    CHECK_FALSE(std::filesystem::exists(save + "Show/a.bin.!qB"));
    CHECK_FALSE(std::filesystem::exists(save + "Show/extras"));
    CHECK(file_content(save + "Show/b.bin.!qB") == partial);
}
