// stage on both transports: hard link, copy, cross-filesystem, refusals, budgets, crash points.

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include "lib/base/base64.hpp"
#include "lib/base/hash.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/wire/protocol.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

constexpr std::size_t k_file_size = 3u << 20;

// Three payload files below qb/save/Show/ and the stage request for them.
json make_payload(NodeFixture& f, const std::string& job, const std::string& method = "auto", std::size_t size = k_file_size) {
    json files = json::array();
    for (unsigned i = 0; i < 3; ++i) {
        std::string rel = i == 2 ? "Show/extras/c.bin" : "Show/" + std::string(1, static_cast<char>('a' + i)) + ".bin";
        f.write("qb/save/" + rel, random_bytes(size, i + 1));
        files.push_back({{"index", i * 2 + 1}, {"path", rel}, {"size", size}});
    }
    std::filesystem::create_directories(f.sync() + "/route");
    return {{"job_dir", f.sync() + "/route/" + job}, {"source_base", f.qb() + "/save"}, {"files", files}, {"method", method}};
}

json manifest_of(const std::string& job_dir) { return json::parse(file_content(job_dir + "/manifest.json")); }

std::string staged(const json& req, unsigned index) {
    return req["job_dir"].get<std::string>() + "/p/" + std::to_string(index);
}
std::string source(const json& req, const json& file) {
    return req["source_base"].get<std::string>() + "/" + file["path"].get<std::string>();
}

}  // namespace

NODE_TEST(stage_hard_links_without_reading_payload) {
    json req = make_payload(f, "job-link");
    json r = f.ok(Op::stage, req);
    CHECK(r["complete"] == true);
    CHECK(r["files_linked"] == 3);
    CHECK(r["bytes_copied"] == 0);
    CHECK(r["bytes_hashed"] == 0);
    // The node process read almost nothing: the payload was linked, not read.
    CHECK(r["io"]["rchar"].get<std::uint64_t>() < (256u << 10));
    for (const auto& file : req["files"]) {
        auto s = lstat_path(staged(req, file["index"]));
        CHECK(s.ino == lstat_path(source(req, file)).ino);
        CHECK(s.nlink == 2);
    }
    json m = manifest_of(req["job_dir"]);
    REQUIRE(m["files"].size() == 3);
    CHECK(m["files"][0]["index"] == 1);
    CHECK(m["files"][0]["name"] == "p/1");
    CHECK(m["files"][0]["path"] == "Show/a.bin");
    CHECK(m["files"][0]["method"] == "hardlink");
    CHECK(m["files"][0]["xxh3"].is_null());
    CHECK(std::filesystem::exists(req["job_dir"].get<std::string>() + "/READY"));
    json again = f.ok(Op::stage, req);
    CHECK(again["already_ready"] == true);
    CHECK(again["manifest_xxh3"] == r["manifest_xxh3"]);
}

NODE_TEST(stage_verify_transit_hashes_linked_files_once) {
    json req = make_payload(f, "job-verify");
    req["verify_transit"] = true;
    json r = f.ok(Op::stage, req);
    CHECK(r["files_linked"] == 3);
    CHECK(r["bytes_hashed"] == 3 * k_file_size);
    CHECK(r["io"]["rchar"].get<std::uint64_t>() >= 3 * k_file_size);
    CHECK(r["io"]["rchar"].get<std::uint64_t>() < 3 * k_file_size + (1u << 20));
    json m = manifest_of(req["job_dir"]);
    for (std::size_t i = 0; i < 3; ++i)
        CHECK(m["files"][i]["xxh3"] == xxh3_128_hex(file_content(source(req, req["files"][i]))));
}

NODE_TEST(stage_forced_copy_hashes_in_the_same_pass) {
    json req = make_payload(f, "job-copy", "copy");
    json r = f.ok(Op::stage, req);
    CHECK(r["files_copied"] == 3);
    CHECK(r["bytes_copied"] == 3 * k_file_size);
    CHECK(r["bytes_hashed"] == 0);  // no second pass
    CHECK(r["io"]["rchar"].get<std::uint64_t>() < 3 * k_file_size + (1u << 20));
    json m = manifest_of(req["job_dir"]);
    for (std::size_t i = 0; i < 3; ++i) {
        const json& file = req["files"][i];
        CHECK(lstat_path(staged(req, file["index"])).ino != lstat_path(source(req, file)).ino);
        std::string content = file_content(staged(req, file["index"]));
        CHECK(content == file_content(source(req, file)));
        CHECK(m["files"][i]["xxh3"] == xxh3_128_hex(content));
        CHECK(m["files"][i]["method"] == "copy");
    }
    CHECK(list_files(req["job_dir"].get<std::string>() + "/p") == std::vector<std::string>{"1", "3", "5"});
}

NODE_TEST(stage_copy_of_a_file_spanning_many_write_behind_windows_is_exact_and_read_once) {
    // Larger than several write-behind windows and not a multiple of the copy's I/O block.
    std::size_t size = (37u << 20) + 123;
    json req = make_payload(f, "job-big-copy", "copy", size);
    json r = f.ok(Op::stage, req);
    CHECK(r["complete"] == true);
    CHECK(r["bytes_copied"] == 3 * size);
    CHECK(r["bytes_hashed"] == 0);
    // Read budget: the node reads each copied byte once (rchar), and says what it read from disk.
    CHECK(r["io"]["rchar"].get<std::uint64_t>() >= 3 * size);
    CHECK(r["io"]["rchar"].get<std::uint64_t>() < 3 * size + (1u << 20));
    CHECK(r["io"].contains("read_bytes"));
    json m = manifest_of(req["job_dir"]);
    for (std::size_t i = 0; i < 3; ++i) {
        std::string content = file_content(staged(req, req["files"][i]["index"]));
        CHECK(content == file_content(source(req, req["files"][i])));
        CHECK(m["files"][i]["xxh3"] == xxh3_128_hex(content));
    }
}

NODE_TEST(stage_journals_one_parseable_record_per_linked_file) {
    std::filesystem::create_directories(f.sync() + "/route");
    json files = json::array();
    for (unsigned i = 0; i < 500; ++i) {
        std::string rel = "many/d" + std::to_string(i % 7) + "/f" + std::to_string(i);
        f.write("qb/save/" + rel, std::string(i % 13, 'x'));
        files.push_back({{"index", i}, {"path", rel}, {"size", i % 13}});
    }
    json req = {{"job_dir", f.sync() + "/route/job-many"}, {"source_base", f.qb() + "/save"}, {"files", files}, {"method", "hardlink"}};
    json r = f.ok(Op::stage, req);
    CHECK(r["files_linked"] == 500);
    CHECK(r["io"]["rchar"].get<std::uint64_t>() < (256u << 10));
    std::istringstream lines(file_content(req["job_dir"].get<std::string>() + "/.archctl-stage.jsonl"));
    std::string line;
    std::getline(lines, line);
    CHECK(json::parse(line)["journal"] == "archctl-stage");
    std::map<unsigned, json> records;
    while (std::getline(lines, line)) {
        json rec = json::parse(line);
        records[rec["i"].get<unsigned>()] = rec;
    }
    REQUIRE(records.size() == 500);
    for (unsigned i : {0u, 250u, 499u}) {
        std::string src = f.qb() + "/save/" + files[i]["path"].get<std::string>();
        CHECK(records[i]["m"] == "hardlink");
        CHECK(records[i]["x"].is_null());
        CHECK(records[i]["size"] == i % 13);
        CHECK(records[i]["ino"].get<std::uint64_t>() == lstat_path(src).ino);
        CHECK(records[i]["src_ino"] == records[i]["ino"]);
        CHECK(records[i]["mtime"] == records[i]["src_mtime"]);
    }
    // A rerun without READY reuses every record and links nothing again.
    std::filesystem::remove(req["job_dir"].get<std::string>() + "/READY");
    json again = f.ok(Op::stage, req);
    CHECK(again["files_reused"] == 500);
    CHECK(again["files_linked"] == 0);
}

NODE_TEST(stage_across_filesystems_falls_back_to_copy) {
    if (!mount_tmpfs(f.sync())) {
        MESSAGE("tmpfs mount not permitted here; cross-filesystem staging covered by forced copy only");
        return;
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { archctl::test::run({"umount", "-l", dir}); }
    } unmount{f.sync()};
    f.reconnect();
    json req = make_payload(f, "job-xfs", "auto", 1u << 20);
    json r = f.ok(Op::stage, req);
    CHECK(r["files_copied"] == 3);
    CHECK(r["files_linked"] == 0);
    CHECK(r["bytes_copied"] == 3 * (1u << 20));
    req["method"] = "hardlink";
    req["job_dir"] = f.sync() + "/route/job-xfs-forced";
    CHECK(f.fails(Op::stage, req).code == "LINK_FAILED");
    f.reconnect();  // drop the descriptors into the tmpfs before it is unmounted
}

NODE_TEST(stage_refuses_fifos_symlinks_and_changed_sizes) {
    json req = make_payload(f, "job-refuse");
    REQUIRE(::mkfifo((f.qb() + "/save/Show/pipe").c_str(), 0644) == 0);
    json bad = req;
    bad["files"].push_back({{"index", 9}, {"path", "Show/pipe"}, {"size", 0}});
    CHECK(f.fails(Op::stage, bad).code == "NOT_REGULAR");
    std::filesystem::create_symlink(f.qb() + "/save/Show/a.bin", f.qb() + "/save/Show/alias.bin");
    bad = req;
    bad["files"].push_back({{"index", 9}, {"path", "Show/alias.bin"}, {"size", k_file_size}});
    CHECK(f.fails(Op::stage, bad).code == "PATH_SYMLINK");
    bad = req;
    bad["files"][0]["size"] = 5;
    CHECK(f.fails(Op::stage, bad).code == "SOURCE_CHANGED");
    CHECK_FALSE(std::filesystem::exists(req["job_dir"].get<std::string>()));
    bad = req;
    bad["files"].push_back(req["files"][0]);
    CHECK(f.fails(Op::stage, bad).code == "BAD_REQUEST");
}

NODE_TEST(stage_budget_stops_between_chunks_and_resumes_without_recopying) {
    json req = make_payload(f, "job-budget", "copy", 10u << 20);
    req["budget_bytes"] = 13u << 20;
    json first = f.ok(Op::stage, req);
    CHECK(first["complete"] == false);
    CHECK(first["stopped"] == "budget");
    std::uint64_t copied = first["bytes_copied"];
    CHECK(copied >= (13u << 20));
    CHECK(copied < (30u << 20));
    CHECK_FALSE(std::filesystem::exists(req["job_dir"].get<std::string>() + "/manifest.json"));
    req.erase("budget_bytes");
    json second = f.ok(Op::stage, req);
    CHECK(second["complete"] == true);
    CHECK(copied + second["bytes_copied"].get<std::uint64_t>() == (30u << 20));
    json m = manifest_of(req["job_dir"]);
    for (std::size_t i = 0; i < 3; ++i) {
        std::string content = file_content(staged(req, req["files"][i]["index"]));
        CHECK(content == file_content(source(req, req["files"][i])));
        CHECK(m["files"][i]["xxh3"] == xxh3_128_hex(content));
    }
}

NODE_TEST(stage_copy_into_a_full_filesystem_stops_and_resumes_once_there_is_room) {
    if (::geteuid() != 0 || archctl::test::run({"mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", f.sync()}).exit_code != 0) {
        MESSAGE("tmpfs mount not permitted here; a full filesystem during stage not exercised");
        return;
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { archctl::test::run({"umount", "-l", dir}); }
    } unmount{f.sync()};
    f.reconnect();
    json req = make_payload(f, "job-full", "copy");
    json r = f.ok(Op::stage, req);
    CHECK(r["complete"] == false);
    CHECK(r["stopped"] == "disk");
    CHECK(r["need_bytes"].get<std::uint64_t>() > 0);
    CHECK_FALSE(std::filesystem::exists(req["job_dir"].get<std::string>() + "/READY"));
    // Room again (the filesystem grows, its content stays): the stage goes on from the
    // journaled partial copy and ends with exact copies.
    REQUIRE(archctl::test::run({"mount", "-o", "remount,size=64m", f.sync()}).exit_code == 0);
    r = f.ok(Op::stage, req);
    CHECK(r["complete"] == true);
    for (const auto& file : req["files"]) CHECK(file_content(staged(req, file["index"])) == file_content(source(req, file)));
    f.reconnect();  // drop the descriptors into the tmpfs before it is unmounted
}

NODE_TEST(stage_copy_stops_before_the_free_space_floor_and_links_cost_nothing) {
    json req = make_payload(f, "job-floor", "copy");
    req["min_free"] = std::uint64_t{1} << 62;  // more than any disk has free
    json r = f.ok(Op::stage, req);
    CHECK(r["complete"] == false);
    CHECK(r["stopped"] == "disk");
    CHECK(r["need_bytes"] == k_file_size);
    CHECK(r["free_bytes"].get<std::uint64_t>() > 0);
    CHECK(r["bytes_copied"] == 0);
    CHECK(list_files(req["job_dir"].get<std::string>() + "/p").empty());  // no partial copy, no temp file
    // A hard link takes no space: the same floor does not stop a linking stage.
    json linked = make_payload(f, "job-floor-link", "hardlink");
    linked["min_free"] = std::uint64_t{1} << 62;
    CHECK(f.ok(Op::stage, linked)["complete"] == true);
    req.erase("min_free");
    CHECK(f.ok(Op::stage, req)["complete"] == true);
}

NODE_TEST(stage_writes_auxiliary_files_before_the_manifest) {
    json req = make_payload(f, "job-aux");
    std::string torrent = "d4:infod4:name1:xee";
    req["aux"] = {{{"name", "source.torrent"}, {"data_b64", base64_encode(torrent)}}};
    json r = f.ok(Op::stage, req);
    CHECK(file_content(req["job_dir"].get<std::string>() + "/a/source.torrent") == torrent);
    json m = manifest_of(req["job_dir"]);
    REQUIRE(m["aux"].size() == 1);
    CHECK(m["aux"][0]["name"] == "a/source.torrent");
    CHECK(m["aux"][0]["xxh3"] == xxh3_128_hex(torrent));
    json bad = make_payload(f, "job-aux-bad");
    bad["aux"] = {{{"name", "../x"}, {"data_b64", ""}}};
    CHECK(f.fails(Op::stage, bad).code == "BAD_REQUEST");
}

namespace {

// Kill the node at every crash point of a stage, rerun, and compare with an uninterrupted run.
void crash_every_point(NodeFixture& f, const std::string& method) {
    json reference = make_payload(f, "job", method, 1u << 20);
    reference["job_dir"] = f.sync() + "/reference/job";
    std::filesystem::create_directories(f.sync() + "/reference");
    CrashRun clean = run_serve(f, Op::stage, reference, "");
    REQUIRE(clean.exit_code == 0);
    std::string expected = file_content(reference["job_dir"].get<std::string>() + "/manifest.json");
    auto specs = crash_specs(clean.passed);
    REQUIRE(specs.size() >= 6);
    for (const auto& spec : specs) {
        CAPTURE(spec);
        json req = reference;
        std::string folder = f.sync() + "/crash-" + std::to_string(&spec - specs.data());
        std::filesystem::create_directories(folder);
        req["job_dir"] = folder + "/job";
        // Every run stages job "job": the first run's record of the source stamps would stand.
        std::filesystem::remove(f.qb() + "/.archctl/stage-job.json");
        CrashRun crashed = run_serve(f, Op::stage, req, spec);
        CHECK(crashed.exit_code == 137);
        json rerun = f.ok(Op::stage, req);
        CHECK(rerun["complete"] == true);
        CHECK(file_content(req["job_dir"].get<std::string>() + "/manifest.json") == expected);
        if (method == "copy") {
            // Each copied file is journaled (journal.synced) before its rename: those are never copied again.
            auto committed = static_cast<std::uint64_t>(std::count(crashed.passed.begin(), crashed.passed.end(), "journal.synced"));
            CHECK(rerun["bytes_copied"].get<std::uint64_t>() + committed * (1u << 20) == 3u * (1u << 20));
        } else {
            CHECK(rerun["bytes_copied"] == 0);
        }
        for (const auto& file : req["files"])
            CHECK(file_content(staged(req, file["index"])) == file_content(source(req, file)));
    }
}

}  // namespace

TEST_CASE("stage converges after a crash at every point: hard links [exec]") {
    NodeFixture f(Kind::exec);
    crash_every_point(f, "auto");
}

TEST_CASE("stage converges after a crash at every point: copies [exec]") {
    NodeFixture f(Kind::exec);
    crash_every_point(f, "copy");
}
