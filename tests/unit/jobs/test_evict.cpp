#include <doctest/doctest.h>

#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/evict/job.hpp"
#include "lib/state/job_store.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::jobs::evict;
using torrent::Selection;

namespace {

EvictDefinition sample() {
    EvictDefinition d;
    d.id = "20261201-183412-7f3c";
    d.created_at = "2026-12-01T18:34:12Z";
    d.identity = torrent::Identity::from_qb("78d5a6edfa4e0000000000000000000000000000",
                                            "1838bf9a70c10000000000000000000000000000000000000000000000000000").value();
    d.name = "Some.Linux.ISO.Collection";
    d.qb_id = d.identity.qb_id();
    d.aliases = {d.identity.v1_hex(), d.identity.v2_hex()};
    d.cache = "seedbox";
    d.save_path = "/srv/cache/torrents/linux";
    d.cache_fingerprint = "fp";
    d.cache_generation = 3;
    d.required = *Selection::parse("0-4");
    d.required_bytes = 1000;
    d.files = {{0, "x/a", 100, 11, 3}, {2, "x/sub/c", 300, 13, 3}};
    d.proofs = {{"nas", d.qb_id, "/tank/linux", *Selection::parse("0-2"), 2, plan::Trust::committed,
                 {{0, "x/a", 100, {1, 21, 100, 5}}, {1, "x/b", 200, {1, 22, 200, 6}}, {2, "x/sub/c", 300, {1, 23, 300, 7}}}},
                {"nas2", d.qb_id, "/tank2/linux", *Selection::parse("3-4"), 1, plan::Trust::verify_pieces,
                 {{3, "x/d", 400, {2, 31, 400, 8}}, {4, "x/e", 0, {2, 32, 0, 9}}}}};
    d.proved_at = d.created_at;
    d.verify_archive = true;
    d.piece_count = 40;
    d.piece_length = 32768;
    d.request_digest = "rd";
    d.coverage_digest = "cd";
    return d;
}

EvictPrepared incomplete() {
    EvictPrepared p;
    p.resource.identity = sample().identity;
    p.resource.name = "Some.Linux.ISO.Collection";
    p.cache = "seedbox";
    p.cache_view.save_path = "/srv/cache/torrents/linux";
    p.cache_view.run_state = "running";
    p.archive_nodes = {"nas"};
    plan::CoverageInput in;
    in.cache.node = "seedbox";
    in.cache.selected = Selection::all(3);
    in.files = {{0, "season2/e04.mkv", 100}, {1, "season2/e05.mkv", 1503238553}, {2, "season2/e06.mkv", 1503238553}};
    plan::ArchiveEvidence a;
    a.view.node = "nas";
    a.view.qb_id = "q";
    a.view.selected = *Selection::parse("0");
    a.view.complete = *Selection::parse("0");
    a.view.run_state = "running";
    a.generation = 1;
    a.committed[0] = {1, 2, 100, 3};
    a.disk = {{plan::OnDisk::file, {1, 2, 100, 3}, {}}, {plan::OnDisk::absent, {}, {}}, {plan::OnDisk::absent, {}, {}}};
    in.archives = {a};
    p.coverage = plan::compute_coverage(in).value();
    return p;
}

}  // namespace

TEST_CASE("an evict definition survives its JSON form and says it is an eviction") {
    EvictDefinition d = sample();
    nlohmann::json j = d.to_json();
    CHECK(is_evict(j));
    CHECK(j["op"] == "evict");
    CHECK(j["source"]["node"] == "seedbox");
    CHECK(j["target"]["node"] == "");
    auto back = EvictDefinition::from_json(j);
    REQUIRE(back.ok());
    CHECK(back->to_json() == j);
    CHECK(back->proofs[1].trust == plan::Trust::verify_pieces);
    CHECK(back->files[1].ino == 13);
    CHECK(d.summary() == "evict 1838bf9a70c1 from seedbox");
}

TEST_CASE("a definition of another operation or a torn one is refused") {
    nlohmann::json j = sample().to_json();
    j["op"] = "archive";
    CHECK_FALSE(is_evict(j));
    CHECK(EvictDefinition::from_json(j).error().code == "CORRUPT");
    nlohmann::json torn = sample().to_json();
    torn.erase("proofs");
    CHECK(EvictDefinition::from_json(torn).error().code == "CORRUPT");
}

TEST_CASE("an evict ledger survives its JSON form; an empty one starts at hold") {
    EvictLedger l;
    l.state = jobs::JobState::cleanup_required;
    l.step = EvictStep::unlink;
    l.removed = true;
    l.files_removed = 2;
    l.bytes_freed = 400;
    l.kept = nlohmann::json::array({{{"path", "/x"}, {"reason", "referenced by another torrent"}}});
    l.partfile = "absent";
    auto back = EvictLedger::from_json(l.to_json()).value();
    CHECK(back.to_json() == l.to_json());
    EvictLedger fresh = EvictLedger::from_json(nlohmann::json()).value();
    CHECK(fresh.step == EvictStep::hold);
    CHECK_FALSE(fresh.removed);
    CHECK(fresh.state == jobs::JobState::running);
}

TEST_CASE("evict progress text follows the ledger") {
    nlohmann::json def = sample().to_json();
    EvictLedger l;
    CHECK(evict_progress_text(def, l.to_json()) == "evicting: proofs held, the cache torrent is not removed yet");
    l.step = EvictStep::unlink;
    l.removed = true;
    CHECK(evict_progress_text(def, l.to_json()) == "evicting: cache torrent removed, 2 files to unlink");
    l.state = jobs::JobState::done;
    l.files_removed = 2;
    l.bytes_freed = 2048;
    CHECK(evict_progress_text(def, l.to_json()) == "done: 2 files (2.0 KiB) freed");
    l.state = jobs::JobState::cleanup_required;
    l.failure = {{"code", "PROOF_DRIFT"}, {"message", "the archive proof no longer holds"}};
    CHECK(evict_progress_text(def, l.to_json()) == "CLEANUP_REQUIRED: the archive proof no longer holds");
    CHECK(evict_progress_text(def, nlohmann::json::object()).rfind("evicting:", 0) == 0);
}

TEST_CASE("job show lines say what was deleted and what proved it safe") {
    nlohmann::json proofs = nlohmann::json::array();
    for (const auto& p : sample().proofs) proofs.push_back(p.to_json());
    std::string created = describe_event({{"type", "created"}, {"required", "0-4"}, {"required_bytes", 1000}, {"proofs", proofs},
                                          {"cache_fingerprint", "fp"}, {"cache_generation", 3}});
    // File indices are labelled as indices: "holds 0" read as a count of none.
    CHECK(created.find("proved: files #0-4 (") != std::string::npos);
    CHECK(created.find("nas holds files #0-2 (generation 2)") != std::string::npos);
    CHECK(created.find("nas2 holds files #3-4 (piece check before deleting)") != std::string::npos);
    std::string one = describe_event({{"type", "created"}, {"required", "0"}, {"required_bytes", 10},
                                      {"proofs", {{{"node", "archive2"}, {"files", "0"}, {"trust", "committed"}, {"generation", 1}}}},
                                      {"cache_fingerprint", "fp"}, {"cache_generation", 1}});
    CHECK(one.find("archive2 holds file #0 (generation 1)") != std::string::npos);
    CHECK(one.find("holds 0") == std::string::npos);
    std::string revalidated = describe_event({{"type", "revalidated"},
                                              {"proofs", {{{"node", "archive2"}, {"files", "1,4"}, {"generation", 1}, {"state", "pausedUP"}}}},
                                              {"pieces_checked", {{"archive2", "4"}}}});
    CHECK(revalidated.find("archive2 still holds files #1, #4 (generation 1") != std::string::npos);
    CHECK(revalidated.find("piece-checked file #4 on archive2") != std::string::npos);
    std::string removed = describe_event({{"type", "removed"}, {"qb_id", "abc"}, {"node", "seedbox"}, {"already_absent", false}});
    CHECK(removed == "removed torrent abc from qBittorrent on seedbox, data deletion disabled");
    std::string unlinked = describe_event({{"type", "unlinked"}, {"files", {"/a", "/b"}}, {"dirs", {"/d"}},
                                           {"kept", {{{"path", "/c"}, {"reason", "referenced by another torrent"}}}}});
    CHECK(unlinked == "unlinked 2 files, removed 1 directories; kept /c (referenced by another torrent)");
    CHECK(describe_event({{"type", "snapshot"}, {"torrents", 3}, {"referenced_paths", 9}, {"owned_referenced", {"/c"}}}) ==
          "3 other torrents reference 9 paths on this node; 1 of this torrent's files (kept)");
    CHECK(describe_event({{"type", "something-else"}}).empty());
}

TEST_CASE("incomplete coverage refuses listing the missing files and the archive command") {
    EvictPrepared p = incomplete();
    Error e = incomplete_error(p);
    CHECK(e.code == "NOT_COVERED");
    CHECK(e.message.rfind("cannot evict '1838bf9a70c1' from seedbox: 2 of 3 files have no archive copy", 0) == 0);
    CHECK(e.message.find("missing  idx  1  season2/e05.mkv  1.4 GiB") != std::string::npos);
    CHECK(e.message.find("covered  1 file: 1 on nas") != std::string::npos);
    CHECK(e.hint == "archctl archive 1838bf9a70c1 --from seedbox --to nas --files 1-2");
    std::string plan = render_plan(p);
    CHECK(plan.find("MISSING") != std::string::npos);
    CHECK(plan.find("season2/e04.mkv") != std::string::npos);
}

TEST_CASE("the driver lists unfinished jobs of every kind: evict jobs running or needing cleanup, and transfers") {
    test::Scratch s;
    auto dir = state::StateDir::open((s / "state").string());
    REQUIRE(dir.ok());
    state::JobStore store(dir.value());
    EvictDefinition a = sample();
    a.id = "20261201-000001-aaaa";
    EvictDefinition b = sample();
    b.id = "20261201-000002-bbbb";
    EvictDefinition c = sample();
    c.id = "20261201-000003-cccc";
    REQUIRE(store.create(a.id, a.to_json()).ok());
    REQUIRE(store.create(b.id, b.to_json()).ok());
    REQUIRE(store.create(c.id, c.to_json()).ok());
    REQUIRE(store.create("20261201-000004-dddd", {{"op", "archive"}, {"id", "20261201-000004-dddd"}}).ok());
    EvictLedger done;
    done.state = jobs::JobState::done;
    REQUIRE(store.write_ledger(b.id, done.to_json()).ok());
    EvictLedger cleanup;
    cleanup.state = jobs::JobState::cleanup_required;
    REQUIRE(store.write_ledger(c.id, cleanup.to_json()).ok());
    config::Config config;
    jobs::Nodes nodes(config, clients::Tuning{});
    jobs::Driver driver(config, dir.value(), nodes, jobs::JobIo{});
    auto ids = driver.unfinished();
    REQUIRE(ids.ok());
    CHECK(ids.value() == std::vector<std::string>{a.id, c.id, "20261201-000004-dddd"});
}
