#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/state/job_store.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::evidence;
using namespace archctl::jobs::transfer;

TEST_CASE("a job definition survives its JSON form") {
    JobDefinition d;
    d.id = "20261201-183412-7f3c";
    d.op = plan::Operation::unarchive;
    d.identity = torrent::Identity::from_qb("78d5a6edfa4e0000000000000000000000000000",
                                            "1838bf9a70c10000000000000000000000000000000000000000000000000000").value();
    d.name = "Some.Linux.ISO.Collection";
    d.qb_id = d.identity.qb_id();
    d.aliases = {d.identity.v1_hex(), d.identity.v2_hex()};
    d.source = "nas";
    d.target = "seedbox";
    d.source_save_path = "/tank/t/linux";
    d.target_save_path = "/srv/cache/t/linux";
    d.route = {"archctl-seedbox-nas-k3x9", "/tank/sync/r", "/srv/sync/r"};
    d.requested = torrent::Selection::parse("0-3,7").value();
    d.delta = torrent::Selection::parse("2-3,7").value();
    d.files = {{2, "x/c", 10}, {3, "x/d", 0}, {7, "x/h", 5}};
    d.partfile = plan::PartfileNeed::carry_source;
    d.file_count = 8;
    auto back = JobDefinition::from_json(d.to_json());
    REQUIRE(back.ok());
    CHECK(back->to_json() == d.to_json());
    CHECK(back->summary() == "unarchive 1838bf9a70c1 nas → seedbox");
    auto legacy = d.to_json();  // written before the data path existed
    legacy["source"].erase("data_path");
    auto old = JobDefinition::from_json(legacy);
    REQUIRE(old.ok());
    CHECK(old->source_data_path == "/tank/t/linux");
    // Staged before the shards: a definition without a payload layout is flat, and stays so.
    CHECK(d.to_json()["payload_layout"] == "flat");
    d.payload_layout = node::PayloadLayout::sharded;
    CHECK(JobDefinition::from_json(d.to_json())->payload_layout == node::PayloadLayout::sharded);
    legacy.erase("payload_layout");
    CHECK(JobDefinition::from_json(legacy)->payload_layout == node::PayloadLayout::flat);
    auto unknown = d.to_json();
    unknown["payload_layout"] = "nested";
    CHECK(JobDefinition::from_json(unknown).error().code == "CORRUPT");
    auto broken = d.to_json();
    broken.erase("route");
    CHECK(JobDefinition::from_json(broken).error().code == "CORRUPT");
}

TEST_CASE("a job definition keeps each file's disk paths and the new target's layout; older ones load at metainfo paths") {
    JobDefinition d;
    d.id = "20261201-183412-7f3d";
    d.identity = torrent::Identity::from_qb("78d5a6edfa4e0000000000000000000000000000", "").value();
    d.qb_id = d.identity.qb_id();
    d.aliases = {d.identity.v1_hex()};
    d.source = "seedbox";
    d.target = "nas";
    d.route = {"r", "/a", "/b"};
    d.target_layout = torrent::ContentLayout::no_subfolder;
    d.files = {{0, "pay/a.bin", 10, "a.bin", "a.bin"}, {1, "pay/b.bin", 5, "", "other/b.bin"}};
    d.union_files = d.files;
    auto j = d.to_json();
    CHECK(j["target"]["layout"] == "NoSubfolder");
    CHECK(j["files"][0]["source_disk"] == "a.bin");
    CHECK_FALSE(j["files"][1].contains("source_disk"));
    auto back = JobDefinition::from_json(j);
    REQUIRE(back.ok());
    CHECK(back->to_json() == j);
    CHECK(back->target_layout == torrent::ContentLayout::no_subfolder);
    CHECK(back->files[1].at_source() == "pay/b.bin");
    CHECK(back->files[1].at_target() == "other/b.bin");
    // A definition written before layouts: Original, every file at its metainfo path.
    j["target"].erase("layout");
    for (auto& f : j["files"]) {
        f.erase("source_disk");
        f.erase("target_disk");
    }
    auto old = JobDefinition::from_json(j);
    REQUIRE(old.ok());
    CHECK(old->target_layout == torrent::ContentLayout::original);
    CHECK(old->files[0].at_source() == "pay/a.bin");
    CHECK(old->files[0].at_target() == "pay/a.bin");
    j["target"]["layout"] = "Sideways";
    CHECK(JobDefinition::from_json(j).error().code == "CORRUPT");
}

TEST_CASE("the source data path: the download path while the content is there; older definitions read the save path") {
    plan::PlacementView v;
    v.node = "seedbox";
    v.save_path = "/srv/t/linux/";
    v.download_path = "/srv/t/.incomplete";
    v.content_path = "/srv/t/.incomplete/pay";
    CHECK(data_path(v) == "/srv/t/.incomplete");
    config::NodeConfig node;
    node.qb_root = "/srv/t";
    CHECK(check_data_path_served(v, node, "pay").ok());
    node.qb_root = "/srv/t/linux";
    auto refused = check_data_path_served(v, node, "pay");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message ==
          "the files of 'pay' on 'seedbox' are in qBittorrent's incomplete-downloads folder '/srv/t/.incomplete', outside the "
          "node's qb_root '/srv/t/linux'");
    CHECK(refused.error().hint.find("nodes.seedbox.qb_root") != std::string::npos);
    v.content_path = "/srv/t/linux/pay";  // complete: qBittorrent moved it to the save path
    CHECK(data_path(v) == "/srv/t/linux");
    CHECK(check_data_path_served(v, node, "pay").ok());
    v.download_path = "/srv/t/.incompletely";  // a sibling with a common prefix is not "below"
    v.content_path = "/srv/t/.incompletely/pay";
    CHECK(data_path(v) == "/srv/t/.incompletely");
    v.content_path = "/srv/t/.incomplete/pay";
    CHECK(data_path(v) == "/srv/t/linux");

    JobDefinition d;
    d.source_save_path = "/srv/t/linux";
    CHECK(d.source_files_path() == "/srv/t/linux");
    d.source_data_path = "/srv/t/.incomplete";
    CHECK(d.source_files_path() == "/srv/t/.incomplete");
    auto j = d.to_json();
    CHECK(j["source"]["data_path"] == "/srv/t/.incomplete");
}

TEST_CASE("a ledger survives its JSON form; unknown fields default") {
    Ledger l;
    l.state = JobState::cleanup_required;
    l.step = TransferStep::cleanup;
    l.staged = l.synced = l.merged = l.committed = true;
    l.generation = 3;
    l.sessions.push_back({"2026-12-01T18:34:12Z", "2026-12-01T18:40:00Z", "budget", "seedbox", 4121, 10, 20, 30});
    Ledger back = Ledger::from_json(l.to_json()).value();
    CHECK(back.to_json() == l.to_json());
    Ledger empty = Ledger::from_json(nlohmann::json::object()).value();
    CHECK(empty.state == JobState::running);
    CHECK(empty.step == TransferStep::stage);
}

TEST_CASE("the same command gives the same request digest") {
    TransferRequest r;
    r.res = "1838bf9a";
    std::string a = request_digest(r, {"b", "a"}, "seedbox", "nas");
    CHECK(a == request_digest(r, {"a", "b"}, "seedbox", "nas"));
    CHECK(a != request_digest(r, {"a", "b"}, "seedbox", "nas2"));
    r.files = torrent::Selection::parse("0-3").value();
    CHECK(a != request_digest(r, {"a", "b"}, "seedbox", "nas"));
}

TEST_CASE("only archive and unarchive definitions are transfer jobs") {
    CHECK(is_transfer_definition({{"op", "archive"}}));
    CHECK(is_transfer_definition({{"op", "unarchive"}}));
    CHECK_FALSE(is_transfer_definition({{"op", "evict"}}));
    CHECK_FALSE(is_transfer_definition({{"id", "x"}}));
    CHECK_FALSE(is_transfer_definition(nlohmann::json::array()));
    auto evict = JobDefinition::from_json({{"id", "20261201-183412-7f3c"}, {"op", "evict"}});
    REQUIRE_FALSE(evict.ok());
    CHECK(evict.error().code == "NOT_A_TRANSFER");
}

namespace {

// An archive job seedbox → nas, written to `store`.
JobDefinition stored_archive(state::JobStore& store) {
    JobDefinition d;
    d.id = "20261201-183412-7f3c";
    d.identity = torrent::Identity::from_qb("78d5a6edfa4e0000000000000000000000000000", "").value();
    d.qb_id = d.identity.qb_id();
    d.aliases = {d.identity.v1_hex()};
    d.source = "seedbox";
    d.target = "nas";
    REQUIRE(store.create(d.id, d.to_json()).ok());
    return d;
}

}  // namespace

TEST_CASE("the driver's unfinished() lists every kind of job in the directory, and skips definitions no kind claims") {
    test::Scratch scratch;
    auto dir = state::StateDir::open((scratch / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    JobDefinition d = stored_archive(store);
    REQUIRE(store.create("20261201-183413-aaaa", {{"id", "20261201-183413-aaaa"}, {"op", "evict"}, {"node", "seedbox"}}).ok());
    REQUIRE(store.create("20261201-183414-bbbb", {{"id", "20261201-183414-bbbb"}, {"op", "mystery"}}).ok());
    config::Config config;
    Nodes nodes(config, clients::Tuning{});
    Driver driver(config, dir.value(), nodes, JobIo{});
    auto ids = driver.unfinished();
    REQUIRE(ids.ok());
    CHECK(ids.value() == std::vector<std::string>{d.id, "20261201-183413-aaaa"});
}

TEST_CASE("cancelling a job that already ended says so and changes nothing") {
    test::Scratch scratch;
    auto dir = state::StateDir::open((scratch / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    JobDefinition d = stored_archive(store);
    Ledger failed;
    failed.state = JobState::failed;
    failed.step = TransferStep::verify;
    REQUIRE(store.write_ledger(d.id, failed.to_json()).ok());
    config::Config config;
    Nodes nodes(config, clients::Tuning{});
    Driver driver(config, dir.value(), nodes, JobIo{});
    auto r = driver.cancel(d.id);
    CHECK(r.outcome == RunOutcome::done);
    CHECK(r.ended == "failed");
    CHECK(r.to_json()["already_ended"] == "failed");
    CHECK(Ledger::from_json(store.ledger(d.id).value()).value().state == JobState::failed);
}

TEST_CASE("a plan whose target lacks the space above the floor is refused the same way the job would be") {
    Prepared p;
    p.target = "nas";
    p.plan.disk_ok = true;
    CHECK_FALSE(p.refusal());
    p.plan.disk_ok = false;
    p.plan.delta_bytes = 3 * 1024 * 1024;
    p.target_free = 5 * 1024 * 1024;
    p.min_free = 4 * 1024 * 1024;
    auto refused = p.refusal();
    REQUIRE(refused);
    CHECK(refused->code == "DISK_INSUFFICIENT");
    CHECK(refused->message ==
          "not enough free space on 'nas': the job needs 3.0 MiB, 1.0 MiB is free above the 4.0 MiB floor (5.0 MiB free in all)");
    CHECK(refused->hint == "free 2.0 MiB on 'nas', or lower the floor (--min-free SIZE, transfer.min_free; now 4.0 MiB)");
}

TEST_CASE("a job whose definition is lost or unreadable is listed as damaged, and job rm removes it") {
    test::Scratch scratch;
    auto dir = state::StateDir::open((scratch / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    // Worked, then its definition was truncated; worked, then its definition was deleted; a
    // directory a crash left before the definition was written, which never became a job.
    const std::string torn = "20261201-000001-aaaa", lost = "20261201-000002-bbbb", never = "20261201-000003-cccc";
    REQUIRE(store.create(torn, {{"id", torn}, {"op", "archive"}}).ok());
    REQUIRE(store.append_event(torn, "created").ok());
    { std::ofstream(store.dir_of(torn) + "/definition.json", std::ios::trunc) << "{\"id\": \"2026"; }
    REQUIRE(store.create(lost, {{"id", lost}, {"op", "archive"}}).ok());
    REQUIRE(store.append_event(lost, "created").ok());
    std::filesystem::remove(store.dir_of(lost) + "/definition.json");
    std::filesystem::create_directories(store.dir_of(never));

    auto damaged = store.damaged();
    REQUIRE(damaged.ok());
    CHECK(damaged.value() == std::vector<std::string>{torn, lost});
    auto rows = summarize_jobs(store);
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 2);
    const JobSummary& row = rows->front();
    CHECK(row.id == torn);
    CHECK(row.damaged);
    CHECK(row.needs_attention);
    CHECK_FALSE(row.finished());
    CHECK(row.to_json()["state"] == "damaged");
    CHECK(row.status.find("archctl job rm " + torn) != std::string::npos);
    // Nothing can drive it, so it is not an unfinished job the driver would run.
    config::Config config;
    Nodes nodes(config, clients::Tuning{});
    Driver driver(config, dir.value(), nodes, JobIo{});
    CHECK(driver.unfinished().value().empty());
    REQUIRE(hide_job(dir.value(), row).ok());
    CHECK(store.damaged().value() == std::vector<std::string>{lost});
}
