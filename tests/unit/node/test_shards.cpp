// The sharded payload layout (lib/node/wire/job_layout.hpp) through stage, receive_check, merge
// and cleanup on both transports: files land in p/<index / 1000>/<index>, the manifest says so,
// the far side's copy is judged and merged by the same names, cleanup removes the shards; a
// request without a layout keeps the flat p/<index> of jobs made before the shards.

#include <set>

#include "lib/node/wire/job_layout.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::size_t k_sharded_size = 4096;
const unsigned k_sharded_indices[] = {1, 999, 1000, 2500};

// Four source files whose indices fall in three shards (0, 1, 2) and the stage request for them.
json sharded_stage(NodeFixture& f, const std::string& job) {
    json files = json::array();
    for (unsigned i : k_sharded_indices) {
        std::string rel = "T/f" + std::to_string(i);
        f.write("qb/save/" + rel, random_bytes(k_sharded_size, i));
        files.push_back({{"index", i}, {"path", rel}, {"size", k_sharded_size}});
    }
    std::filesystem::create_directories(f.sync() + "/src");
    std::filesystem::create_directories(f.sync() + "/dst");
    return {{"job_dir", f.sync() + "/src/" + job}, {"source_base", f.qb() + "/save"}, {"files", files}, {"layout", "sharded"}};
}

std::string shard_path(const std::string& job_dir, unsigned index) {
    return job_dir + "/p/" + std::to_string(index / 1000) + "/" + std::to_string(index);
}

// The staged job as Syncthing leaves it on the far side: separate copies at their final names.
std::string receive_sharded(NodeFixture& f, const std::string& job) {
    std::filesystem::copy(f.sync() + "/src/" + job, f.sync() + "/dst/" + job, std::filesystem::copy_options::recursive);
    std::filesystem::remove(f.sync() + "/dst/" + job + "/.archctl-stage.jsonl");
    return f.sync() + "/dst/" + job;
}

std::vector<std::string> sharded_foreign(const json& check) {
    std::vector<std::string> out;
    for (const auto& e : check["foreign"]) out.push_back(e["name"]);
    return out;
}

}  // namespace

NODE_TEST(sharded_stage_puts_each_file_in_its_shard_and_says_so_in_the_manifest) {
    json req = sharded_stage(f, "job");
    json r = f.ok(Op::stage, req);
    CHECK(r["complete"] == true);
    CHECK(r["files_linked"] == 4);
    const std::string job = req["job_dir"];
    for (const auto& file : req["files"]) {
        auto s = lstat_path(shard_path(job, file["index"]));
        CHECK(s.ino == lstat_path(f.qb() + "/save/" + file["path"].get<std::string>()).ino);
    }
    std::set<std::string> in_p;
    for (const auto& e : std::filesystem::directory_iterator(job + "/p")) {
        CHECK(e.is_directory());
        in_p.insert(e.path().filename().string());
    }
    CHECK(in_p == std::set<std::string>{"0", "1", "2"});
    json m = json::parse(file_content(job + "/manifest.json"));
    CHECK(m["layout"] == "sharded");
    CHECK(m["files"][2]["index"] == 1000);
    CHECK(m["files"][2]["name"] == "p/1/1000");
    // Done for good; the same job asked for in the flat layout is another request.
    CHECK(f.ok(Op::stage, req)["already_ready"] == true);
    json flat = req;
    flat.erase("layout");
    CHECK(f.fails(Op::stage, flat).is(ErrorCode::JOB_MISMATCH));
}

NODE_TEST(sharded_receive_check_judges_files_in_their_shards_and_finds_what_does_not_belong) {
    json req = sharded_stage(f, "job");
    f.ok(Op::stage, req);
    const std::string dst = receive_sharded(f, "job");
    json ask = {{"job_dir", dst}, {"files", req["files"]}, {"layout", "sharded"},
                {"indexed", {"manifest.json", "READY", "p/0/1", "p/0/999", "p/1/1000", "p/2/2500", "a/resource.torrent"}}};
    json check = f.ok(Op::receive_check, ask);
    CHECK(check["complete"] == true);
    CHECK(check["files_present"] == 4);
    CHECK(check["foreign"].empty());
    // One file still on its way: absent from its shard, in transit under Syncthing's temp name.
    std::filesystem::rename(shard_path(dst, 2500), dst + "/p/2/.syncthing.2500.tmp");
    check = f.ok(Op::receive_check, ask);
    CHECK(check["complete"] == false);
    CHECK(check["files_present"] == 3);
    CHECK(check["foreign"].empty());
    std::filesystem::rename(dst + "/p/2/.syncthing.2500.tmp", shard_path(dst, 2500));
    // Something archctl did not stage, in a shard and beside the shards.
    f.write("sync/dst/job/p/1/evil", "x");
    f.write("sync/dst/job/p/stray", "y");
    check = f.ok(Op::receive_check, ask);
    CHECK(sharded_foreign(check) == std::vector<std::string>{"p/stray", "p/1/evil"});
    CHECK(check["complete"] == false);
}

NODE_TEST(sharded_merge_takes_the_files_from_their_shards_and_cleanup_removes_the_shards) {
    json req = sharded_stage(f, "job");
    f.ok(Op::stage, req);
    const std::string dst = receive_sharded(f, "job");
    json files = json::array();
    for (const auto& file : req["files"]) files.push_back({{"index", file["index"]}, {"path", "Show/" + file["path"].get<std::string>()}, {"size", k_sharded_size}});
    json r = f.ok(Op::merge, {{"job_dir", dst}, {"save_path", f.qb() + "/archive"}, {"files", files}, {"layout", "sharded"}});
    CHECK(r["complete"] == true);
    for (unsigned i : k_sharded_indices) {
        CHECK(file_content(f.qb() + "/archive/Show/T/f" + std::to_string(i)) == random_bytes(k_sharded_size, i));
        CHECK_FALSE(lstat_path(shard_path(dst, i)).exists);
    }
    // Cleanup on both sides (it reads the layout from what is there): every shard goes.
    json indices = json::array();
    for (unsigned i : k_sharded_indices) indices.push_back(i);
    for (const std::string& job : {dst, req["job_dir"].get<std::string>()}) {
        json c = f.ok(Op::cleanup, {{"job_dir", job}, {"files", indices}, {"aux", {"resource.torrent"}}});
        CHECK(c["job_dir"] == "removed");
        CHECK_FALSE(std::filesystem::exists(job));
    }
    for (unsigned i : k_sharded_indices) CHECK(file_content(f.qb() + "/save/T/f" + std::to_string(i)) == random_bytes(k_sharded_size, i));
}

NODE_TEST(sharded_cleanup_keeps_what_is_not_the_job_s_in_a_shard) {
    json req = sharded_stage(f, "job");
    f.ok(Op::stage, req);
    const std::string job = req["job_dir"];
    f.write("sync/src/job/p/1/notes.txt", "mine");
    json c = f.ok(Op::cleanup, {{"job_dir", job}});
    CHECK(c["job_dir"] == "kept");
    CHECK(list_files(job) == std::vector<std::string>{"p/1/notes.txt"});
    std::filesystem::remove(job + "/p/1/notes.txt");
    CHECK(f.ok(Op::cleanup, {{"job_dir", job}})["job_dir"] == "removed");
}

NODE_TEST(a_request_without_a_layout_stages_flat) {
    json req = sharded_stage(f, "job");
    req.erase("layout");
    f.ok(Op::stage, req);
    const std::string job = req["job_dir"];
    for (unsigned i : k_sharded_indices) CHECK(lstat_path(job + "/p/" + std::to_string(i)).exists);
    CHECK_FALSE(json::parse(file_content(job + "/manifest.json")).contains("layout"));
    const std::string dst = receive_sharded(f, "job");
    json check = f.ok(Op::receive_check, {{"job_dir", dst}, {"files", req["files"]}});
    CHECK(check["files_present"] == 4);
    CHECK(check["foreign"].empty());
}

TEST_CASE("a manifest's text is its document's, written entry by entry") {
    for (PayloadLayout layout : {PayloadLayout::flat, PayloadLayout::sharded}) {
        Manifest m;
        m.job = "20261205-130000-ab\"c";
        m.layout = layout;
        CHECK(m.to_text() == m.to_json().dump(1) + "\n");  // no files, no aux
        m.files.push_back({0, "T/plain.bin", 12, "", StageMethod::hardlink});
        m.files.push_back({1001, "T/ünï \"quoted\" back\\slash\ttab\x01.bin", 0, "0123456789abcdef0123456789abcdef", StageMethod::copy});
        m.files.push_back({4000000000u, "T/ファイル", 1ull << 40, "", StageMethod::reflink});
        CHECK(m.to_text() == m.to_json().dump(1) + "\n");
        m.aux.push_back({"resource.torrent", 5403, "fedcba9876543210fedcba9876543210"});
        m.aux.push_back({"part", 0, ""});
        CHECK(m.to_text() == m.to_json().dump(1) + "\n");
        auto back = Manifest::from_json(json::parse(m.to_text()));
        REQUIRE(back.ok());
        CHECK(back->files.size() == 3);
        CHECK(back->files[1].path == m.files[1].path);
    }
}
