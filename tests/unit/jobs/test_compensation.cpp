// What compensation decides without touching a node: who added the torrent on a new target,
// which paths a qBittorrent references now (against a recording fake qBittorrent), and how a job
// says what it kept.

#include <doctest/doctest.h>

#include <mutex>

#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/jobs/transfer/summary.hpp"
#include "tests/unit/clients/canned_server.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::evidence;
using namespace archctl::jobs::transfer;
using archctl::test::CannedReply;
using archctl::test::CannedServer;
using archctl::test::SeenRequest;
using nlohmann::json;

namespace {

const std::string k_job = "20261201-183412-7f3c";
const std::string k_own = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

// torrents/info and torrents/files from a table; everything else is "Ok.".
struct CompensationQb {
    json torrents = json::array();
    std::map<std::string, json> files;  // qB id → torrents/files body

    CannedReply operator()(const SeenRequest& req) {
        if (req.path == "/api/v2/auth/login") return {200, "Ok.", {"Set-Cookie: SID=s; HttpOnly; path=/"}};
        if (req.path == "/api/v2/app/version") return {200, "v4.5.2"};
        if (req.path == "/api/v2/app/webapiVersion") return {200, "2.8.19"};
        if (req.path == "/api/v2/torrents/info") return {200, torrents.dump()};
        if (req.path == "/api/v2/torrents/files") {
            std::string id = req.target.substr(req.target.find("hash=") + 5);
            auto it = files.find(id);
            return it == files.end() ? CannedReply{404, "Not Found"} : CannedReply{200, it->second.dump()};
        }
        return {200, "Ok."};
    }
};

json listed(const std::string& id, const std::string& save_path) {
    return {{"hash", id}, {"infohash_v1", id}, {"name", id.substr(0, 4)}, {"save_path", save_path}, {"state", "pausedUP"}, {"tags", ""}};
}

json file(unsigned index, const std::string& name) {
    return {{"index", index}, {"name", name}, {"size", 10}, {"progress", 1}, {"priority", 1}};
}

config::NodeConfig node_at(const std::string& url) {
    config::NodeConfig c;
    c.name = "nas";
    c.role = config::Role::archive;
    c.qb_root = "/tank";
    c.sync_root = "/tank/sync";
    c.qbittorrent.url = url;
    c.qbittorrent.password.value = "pw";
    return c;
}

std::size_t calls_to(const CannedServer& server, const std::string& path) {
    std::size_t n = 0;
    for (const auto& r : server.requests())
        if (r.path == path) ++n;
    return n;
}

}  // namespace

TEST_CASE("who added a new target's torrent is decided from the live torrent") {
    Ledger intent;
    intent.target_added = true;
    intent.target_tag = job_tag(k_job);
    Ledger nothing;
    Ledger legacy;  // added before jobs tagged their torrents
    legacy.target_added = true;
    const std::vector<std::string> tagged = {"keep", job_tag(k_job)};
    const std::vector<std::string> untagged = {"keep"};
    const std::vector<std::string> other_job = {job_tag("20261201-183412-0000")};
    struct Row {
        const char* name;
        const Ledger& ledger;
        std::optional<std::vector<std::string>> tags;
        TargetOwner expected;
    } rows[] = {
        {"no torrent there", intent, std::nullopt, TargetOwner::absent},
        {"the job's tag proves it", intent, tagged, TargetOwner::this_job},
        {"the tag proves it even when the ledger lost the intent", nothing, tagged, TargetOwner::this_job},
        {"the intent alone does not: the user added it", intent, untagged, TargetOwner::someone_else},
        {"another job's tag (another state directory)", intent, other_job, TargetOwner::someone_else},
        {"no intent, no tag", nothing, untagged, TargetOwner::someone_else},
        {"a job without a tag goes by its record", legacy, untagged, TargetOwner::this_job},
    };
    for (const auto& row : rows) {
        CAPTURE(row.name);
        CHECK(target_owner(row.ledger, k_job, row.tags) == row.expected);
    }
    CHECK(job_tag(k_job) == "archctl-job-20261201-183412-7f3c");
}

TEST_CASE("referenced_paths: one torrent list, each torrent's files, the excluded one skipped") {
    CompensationQb fake;
    fake.torrents = json::array({listed(k_own, "/tank/t/show"), listed("bbbb", "/tank/t/show/"), listed("cccc", "/tank/other")});
    fake.files[k_own] = json::array({file(0, "Show/a.bin")});
    fake.files["bbbb"] = json::array({file(0, "Show/a.bin"), file(1, "Show/sub/b.bin")});
    fake.files["cccc"] = json::array({file(0, "x.iso")});
    CannedServer server(std::ref(fake));
    config::NodeConfig cfg = node_at(server.url());
    NodeHandle node(cfg, clients::Tuning{});

    auto all = referenced_paths(node);
    REQUIRE(all.ok());
    CHECK(all->paths == std::set<std::string>{"/tank/t/show/Show/a.bin", "/tank/t/show/Show/sub/b.bin", "/tank/other/x.iso"});
    CHECK(all->qb_ids == std::vector<std::string>{k_own, "bbbb", "cccc"});
    CHECK_FALSE(all->excluded_present);
    CHECK(calls_to(server, "/api/v2/torrents/info") == 1);
    CHECK(calls_to(server, "/api/v2/torrents/files") == 3);

    auto without = referenced_paths(node, k_own);
    REQUIRE(without.ok());
    CHECK(without->excluded_present);
    CHECK(without->torrents == 3);
    CHECK(without->qb_ids == std::vector<std::string>{"bbbb", "cccc"});
    // bbbb still references a.bin: excluding one torrent never hides another's use.
    CHECK(without->paths.count("/tank/t/show/Show/a.bin") == 1);
    CHECK(calls_to(server, "/api/v2/torrents/files") == 5);
    std::size_t own_reads = 0;
    for (const auto& r : server.requests())
        if (r.path == "/api/v2/torrents/files" && r.target.find("hash=" + k_own) != std::string::npos) ++own_reads;
    CHECK(own_reads == 1);  // only the first snapshot read the excluded torrent's files
}

TEST_CASE("referenced_paths_below reads only torrents that can reference the directory") {
    CompensationQb fake;
    fake.torrents = json::array({listed("aaaa", "/tank/sync/route"), listed("bbbb", "/tank/sync/route/job/p"),
                                 listed("cccc", "/tank/t/show"), listed("dddd", "/")});
    fake.files["aaaa"] = json::array({file(0, "job/p/0")});
    fake.files["bbbb"] = json::array({file(0, "1")});
    fake.files["cccc"] = json::array({file(0, "Show/a.bin")});
    fake.files["dddd"] = json::array({file(0, "tank/sync/route/job/p/2")});
    CannedServer server(std::ref(fake));
    config::NodeConfig cfg = node_at(server.url());
    NodeHandle node(cfg, clients::Tuning{});
    auto below = referenced_paths_below(node, "/tank/sync/route/job/");
    REQUIRE(below.ok());
    CHECK(below->qb_ids == std::vector<std::string>{"aaaa", "bbbb", "dddd"});
    CHECK(below->paths.count("/tank/sync/route/job/p/0") == 1);
    CHECK(below->paths.count("/tank/sync/route/job/p/1") == 1);
    CHECK(below->paths.count("/tank/sync/route/job/p/2") == 1);
    CHECK(calls_to(server, "/api/v2/torrents/files") == 3);
}

TEST_CASE("path_at_or_below compares whole components") {
    CHECK(path_at_or_below("/tank/t", "/tank/t"));
    CHECK(path_at_or_below("/tank/t/a", "/tank/t"));
    CHECK_FALSE(path_at_or_below("/tank/tx", "/tank/t"));
    CHECK_FALSE(path_at_or_below("/tank", "/tank/t"));
    CHECK(path_at_or_below("/anything", ""));
}

TEST_CASE("a job says what compensation and cleanup kept") {
    json kept = json::array();
    CHECK(kept_text(kept).empty());
    for (const char* p : {"/t/a", "/t/b", "/t/c"})
        kept.push_back({{"node", "nas"}, {"path", p}, {"reason", "referenced by another torrent"}, {"code", "referenced"}, {"step", "unmerge"}});
    CHECK(kept_text(kept) == "compensation kept 3 files used by other torrents");
    kept.push_back({{"node", "nas"}, {"path", "/t/d"}, {"reason", "it was there before this job"}, {"code", "preexisting"}, {"step", "unmerge"}});
    CHECK(kept_text(kept) == "compensation kept 4 files: 3 used by other torrents, 1 there before the job");
    kept.push_back({{"node", "seedbox"}, {"path", "/s/j/p/0"}, {"reason", "referenced by another torrent"}, {"code", "referenced"}, {"step", "cleanup"}});
    CHECK(kept_text(kept) == "compensation kept 4 files: 3 used by other torrents, 1 there before the job; "
                            "cleanup kept 1 file used by another torrent");

    json def = {{"op", "archive"}, {"delta_bytes", 10}, {"files", json::array()}};
    Ledger l;
    l.state = JobState::failed;
    l.failure = {{"code", "STALE_STATE"}, {"message", "the target changed"}};
    l.kept = json::array({kept[0]});
    CHECK(progress_text(def, l) == "failed: the target changed (compensation kept 1 file used by another torrent)");
    l.state = JobState::cancelled;
    l.failure = json();
    CHECK(progress_text(def, l) == "cancelled (compensation kept 1 file used by another torrent)");
    l.kept = json::array();
    CHECK(progress_text(def, l) == "cancelled");
}

TEST_CASE("the ledger keeps the add's tag and the kept files") {
    Ledger l;
    l.target_added = true;
    l.target_tag = job_tag(k_job);
    l.kept = json::array({{{"node", "nas"}, {"path", "/t/a"}, {"reason", "referenced by another torrent"}, {"code", "referenced"}, {"step", "unmerge"}}});
    Ledger back = Ledger::from_json(l.to_json()).value();
    CHECK(back.target_tag == l.target_tag);
    CHECK(back.kept == l.kept);
    CHECK(Ledger::from_json(json::object()).value().kept == json::array());
}
