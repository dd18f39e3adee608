// receive_check on both transports: arrival states, index evidence, hashing once, artifacts.

#include <fstream>
#include <set>

#include "lib/base/hash.hpp"
#include "lib/node/wire/ops_transfer.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::size_t k_size = 1u << 20;

// Stages three files (with hashes) into sync/src/job and "receives" them into sync/dst/job, as
// Syncthing would: separate copies at their final names.
struct Received {
    json files;
    std::string job;
};

Received receive_job(NodeFixture& f) {
    json files = json::array();
    for (unsigned i = 0; i < 3; ++i) {
        std::string rel = "T/f" + std::to_string(i);
        f.write("qb/save/" + rel, random_bytes(k_size, 40 + i));
        files.push_back({{"index", i}, {"path", rel}, {"size", k_size}});
    }
    std::filesystem::create_directories(f.sync() + "/src");
    std::filesystem::create_directories(f.sync() + "/dst");
    f.ok(Op::stage, {{"job_dir", f.sync() + "/src/job"}, {"source_base", f.qb() + "/save"}, {"files", files}, {"verify_transit", true}});
    std::filesystem::copy(f.sync() + "/src/job", f.sync() + "/dst/job", std::filesystem::copy_options::recursive);
    std::filesystem::remove(f.sync() + "/dst/job/.archctl-stage.jsonl");
    return {files, f.sync() + "/dst/job"};
}

json all_indexed() { return {"manifest.json", "READY", "p/0", "p/1", "p/2"}; }

json state_of(const json& check, const std::string& name) {
    for (const auto& e : check["files"])
        if (e["name"] == name) return e;
    FAIL("no entry " << name);
    return {};
}

}  // namespace

NODE_TEST(receive_check_reports_a_complete_job_without_reading_payload) {
    Received r = receive_job(f);
    json check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    CHECK(check["complete"] == true);
    CHECK(check["bytes_present"] == 3 * k_size);
    CHECK(check["bytes_total"] == 3 * k_size);
    CHECK(check["files_present"] == 3);
    CHECK(state_of(check, "p/1")["state"] == "present");
    CHECK(check["bytes_hashed"] == 0);
    CHECK(check["io"]["rchar"].get<std::uint64_t>() < (64u << 10));  // the manifest, not the payload
}

NODE_TEST(receive_check_before_anything_arrived) {
    json files = {{{"index", 0}, {"path", "x"}, {"size", 10}}};
    json check = f.ok(Op::receive_check, {{"job_dir", f.sync() + "/dst/none"}, {"files", files}});
    CHECK(check["complete"] == false);
    CHECK(check["job_exists"] == false);
    CHECK(state_of(check, "p/0")["state"] == "absent");
}

NODE_TEST(receive_check_sees_growing_temp_and_unindexed_files_in_transit) {
    Received r = receive_job(f);
    // p/0 still a Syncthing temp file, p/1 at its final name but short, p/2 not yet indexed.
    std::filesystem::rename(r.job + "/p/0", r.job + "/p/.syncthing.0.tmp");
    std::filesystem::resize_file(r.job + "/p/1", k_size / 2);
    json indexed = {"manifest.json", "READY", "p/0"};
    json check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", indexed}});
    CHECK(check["complete"] == false);
    CHECK(state_of(check, "p/0")["state"] == "in_transit");
    CHECK(state_of(check, "p/0")["have_bytes"].get<std::uint64_t>() > 0);
    CHECK(state_of(check, "p/1")["state"] == "in_transit");
    CHECK(state_of(check, "p/1")["have_bytes"] == k_size / 2);
    CHECK(state_of(check, "p/2")["state"] == "in_transit");
    CHECK(state_of(check, "p/2")["detail"] == "not yet in the target index");
    CHECK(check["ignored"] == json{"p/.syncthing.0.tmp"});
    // A final name beside a temp file is still in transit (Syncthing is replacing it).
    std::filesystem::copy_file(r.job + "/p/.syncthing.0.tmp", r.job + "/p/0");
    check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    CHECK(state_of(check, "p/0")["state"] == "in_transit");
    // Indexed with the wrong size is a mismatch, not a wait.
    CHECK(state_of(check, "p/1")["state"] == "mismatch");
}

NODE_TEST(receive_check_lists_only_what_is_not_there_and_takes_all_names_as_indexed) {
    Received r = receive_job(f);
    // indexed_all stands for every expected name; unfinished_only leaves out what is there.
    json check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed_all", true}, {"unfinished_only", true}});
    CHECK(check["complete"] == true);
    CHECK(check["index_evidence"] == true);
    CHECK(check["files"].empty());
    CHECK(check["files_present"] == 3);
    CHECK(check["files_total"] == 3);
    CHECK(check["bytes_present"] == 3 * k_size);
    // Short at its final name and indexed: a mismatch, listed; the others still left out.
    std::filesystem::resize_file(r.job + "/p/1", k_size / 2);
    std::filesystem::remove(r.job + "/p/2");
    check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed_all", true}, {"unfinished_only", true}});
    CHECK(check["complete"] == false);
    REQUIRE(check["files"].size() == 2);
    CHECK(state_of(check, "p/1")["state"] == "mismatch");
    CHECK(state_of(check, "p/2")["state"] == "absent");
    CHECK(check["files_present"] == 1);
    // Without either key every entry is listed, as before.
    check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    CHECK(check["files"].size() == 5);
    CHECK(state_of(check, "p/0")["state"] == "present");
}

NODE_TEST(receive_check_answers_absent_payload_files_as_one_ranges_text_when_asked) {
    Received r = receive_job(f);
    // p/0 and p/2 not there at all, p/1 short at its final name.
    std::filesystem::remove(r.job + "/p/0");
    std::filesystem::remove(r.job + "/p/2");
    std::filesystem::resize_file(r.job + "/p/1", k_size / 2);
    json asked = {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}, {"unfinished_only", true}, {"absent_ranges", true}};
    json check = f.ok(Op::receive_check, asked);
    CHECK(check["absent"] == "0,2");
    REQUIRE(check["files"].size() == 1);  // the short one alone is an entry
    CHECK(state_of(check, "p/1")["state"] == "mismatch");
    CHECK(check["files_total"] == 3);
    CHECK(check["files_present"] == 0);
    CHECK(check["complete"] == false);
    // Read by the caller: the indices, the entry, the same counts.
    ReceiveCheckResult typed = check.get<ReceiveCheckResult>();
    CHECK(typed.absent == std::vector<std::uint32_t>{0, 2});
    REQUIRE(typed.files.size() == 1);
    CHECK(typed.files[0].index == 1u);
    // A job directory not there yet: every payload file in the text, nothing else listed.
    asked["job_dir"] = f.sync() + "/dst/none";
    check = f.ok(Op::receive_check, asked);
    CHECK(check["absent"] == "0-2");
    CHECK(check["files"].size() == 2);  // the manifest and READY, which have no index
    // Not asked: each absent file an entry, as before (and as a node that predates the key answers).
    asked.erase("absent_ranges");
    check = f.ok(Op::receive_check, asked);
    CHECK_FALSE(check.contains("absent"));
    CHECK(check["files"].size() == 5);
    CHECK(state_of(check, "p/0")["state"] == "absent");
}

TEST_CASE("receive_check's absent text from a far end: a text that is not ranges, or names more files than were checked, does not read") {
    json answer = {{"complete", false}, {"files", json::array()}, {"files_total", 3}, {"absent", "0-2"}};
    CHECK(answer.get<ReceiveCheckResult>().absent.size() == 3);
    answer["absent"] = "0-4294967294";  // billions of indices in a dozen bytes
    CHECK_THROWS(answer.get<ReceiveCheckResult>());
    answer["absent"] = "x";
    CHECK_THROWS(answer.get<ReceiveCheckResult>());
}

NODE_TEST(receive_check_hashes_once_and_finds_a_corrupted_byte) {
    Received r = receive_job(f);
    json args = {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}, {"verify_transit", true}};
    json first = f.ok(Op::receive_check, args);
    CHECK(first["complete"] == true);
    CHECK(state_of(first, "p/0")["state"] == "verified");
    CHECK(first["bytes_hashed"] == 3 * k_size);
    json second = f.ok(Op::receive_check, args);
    CHECK(second["bytes_hashed"] == 0);  // verdicts cached by size, inode and mtime
    {
        std::fstream io(r.job + "/p/2", std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(12345);
        io.put('\x5a' ^ file_content(r.job + "/p/2")[12345]);
    }
    json third = f.ok(Op::receive_check, args);
    CHECK(third["complete"] == false);
    CHECK(state_of(third, "p/2")["state"] == "mismatch");
    CHECK(third["bytes_hashed"] == k_size);
}

NODE_TEST(receive_check_ignores_conflict_copies) {
    Received r = receive_job(f);
    f.write("sync/dst/job/p/1.sync-conflict-20240101-101010-ABCDEFG", "conflict");
    f.write("sync/dst/job/manifest.sync-conflict-20240101-101010-ABCDEFG.json", "{}");
    json check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    CHECK(check["complete"] == true);
    CHECK(check["files_present"] == 3);
    CHECK(check["ignored"].size() == 2);
}

NODE_TEST(receive_check_takes_a_stage_copy_cut_off_by_a_kill_as_archctl_s_own) {
    Received r = receive_job(f);
    // A kill during stage left its temp copy of index 1, and Syncthing carried it over.
    f.write("sync/dst/job/p/.1.part", "half a copy");
    json check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    CHECK(check.value("foreign", json::array()).empty());
    CHECK(check["complete"] == true);
    // The same name for an index the job does not have, or as a symlink, is foreign.
    f.write("sync/dst/job/p/.7.part", "x");
    std::filesystem::create_symlink("/etc/passwd", f.sync() + "/dst/job/p/.2.part");
    check = f.ok(Op::receive_check, {{"job_dir", r.job}, {"files", r.files}, {"indexed", all_indexed()}});
    std::set<std::string> foreign;
    for (const auto& e : check["foreign"]) foreign.insert(e["name"].get<std::string>());
    CHECK(foreign == std::set<std::string>{"p/.7.part", "p/.2.part"});
}
