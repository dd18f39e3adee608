#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/refused_logins.hpp"
#include "lib/state/reservations.hpp"
#include "lib/state/tokens.hpp"
#include "lib/state/tombstones.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::state;

namespace {
const std::string k_v1 = "78d5a6edfa4e00000000000000000000000000aa";
const std::string k_v2 = "1838bf9a70c10000000000000000000000000000000000000000000000000000";
}  // namespace

TEST_CASE("the layout is created and job ids sort by time") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string());
    REQUIRE(dir.ok());
    for (const char* sub : {"jobs", "reservations", "placements", "routes", "tokens", "tombstones"})
        CHECK(std::filesystem::is_directory(s / "state" / sub));
    std::string a = new_job_id();
    CHECK(a.size() == 20);
    CHECK(a[8] == '-');
    CHECK(a[15] == '-');
}

TEST_CASE("reservations are exclusive per alias and all-or-nothing") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    REQUIRE(reserve(dir, {k_v1, k_v2}, "job-a").ok());
    CHECK(reserve(dir, {k_v1, k_v2}, "job-a").ok());  // idempotent rerun
    // A v1-only observation of the same torrent cannot schedule concurrently.
    Status other = reserve(dir, {k_v1}, "job-b");
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().code == "RESERVED");
    CHECK(other.error().message.find("job-a") != std::string::npos);
    // All or nothing: a partial success is undone.
    const std::string fresh = "ffffffffffffffffffffffffffffffffffffffff";
    CHECK_FALSE(reserve(dir, {fresh, k_v2}, "job-b").ok());
    CHECK_FALSE(holder(dir, fresh).value().has_value());
    CHECK(*holder(dir, k_v2).value() == "job-a");
    // Release only removes our own.
    REQUIRE(release(dir, {k_v1, k_v2}, "job-b").ok());
    CHECK(*holder(dir, k_v1).value() == "job-a");
    REQUIRE(release(dir, {k_v1, k_v2}, "job-a").ok());
    CHECK_FALSE(holder(dir, k_v1).value().has_value());
    CHECK(reserve(dir, {"not-hex"}, "job-c").error().code == "BAD_VALUE");
}

TEST_CASE("a reservation whose job ended is stale: the next holding_job releases it") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    JobStore jobs(dir);
    const std::string running = new_job_id();
    REQUIRE(jobs.create(running, {{"op", "archive"}, {"request_digest", "d-1"}}).ok());
    REQUIRE(jobs.write_ledger(running, {{"state", "running"}, {"step", "sync"}}).ok());
    REQUIRE(reserve(dir, {k_v1}, running).ok());
    // Another command while the job runs: refused, naming it.
    CHECK(holding_job(dir, {k_v1, k_v2}, "d-2").error().code == "RESERVED");
    CHECK(holding_job(dir, {k_v1, k_v2}, "d-1").value() == running);
    for (const char* ended : {"done", "cancelled", "failed"}) {
        CAPTURE(ended);
        // The run was killed after the job ended and before it released the resource.
        REQUIRE(jobs.write_ledger(running, {{"state", ended}, {"step", "done"}}).ok());
        REQUIRE(reserve(dir, {k_v1, k_v2}, running).ok());
        auto held = holding_job(dir, {k_v1, k_v2}, "d-2");
        REQUIRE(held.ok());
        CHECK_FALSE(held.value().has_value());
        CHECK_FALSE(holder(dir, k_v1).value().has_value());
        CHECK_FALSE(holder(dir, k_v2).value().has_value());
    }
    // Its ledger lost as well: the events it keeps apart say it was done.
    std::filesystem::remove(s.path() / "jobs" / running / "ledger.json");
    REQUIRE(reserve(dir, {k_v2}, running).ok());
    CHECK(holding_job(dir, {k_v2}, "d-2").error().code == "RESERVED");  // no record that it ended
    REQUIRE(jobs.append_event(running, "done").ok());
    CHECK_FALSE(holding_job(dir, {k_v2}, "d-2").value().has_value());
    CHECK_FALSE(holder(dir, k_v2).value().has_value());
    // A job that must still be finished keeps what it holds.
    for (const char* unfinished : {"compensating", "cleanup_required"}) {
        CAPTURE(unfinished);
        REQUIRE(jobs.write_ledger(running, {{"state", unfinished}, {"step", "merge"}}).ok());
        REQUIRE(reserve(dir, {k_v1}, running).ok());
        CHECK(holding_job(dir, {k_v1}, "d-2").error().code == "RESERVED");
    }
}

TEST_CASE("a definition's outline: its per-file lists keep their lengths, every element read as null, the rest whole") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    JobStore jobs(dir);
    const std::string id = new_job_id();
    nlohmann::json files = nlohmann::json::array();
    // Enough files for a text of several MiB: the definition is written a MiB at a time.
    for (int i = 0; i < 40000; ++i) files.push_back({{"index", i}, {"path", fmt::format("d/{}.bin", i)}, {"size", i}});
    const nlohmann::json definition = {{"op", "archive"},
                                       {"files", files},
                                       {"union_files", {files[0], {{"index", 9}, {"path", "x"}, {"size", 1}}}},
                                       {"aliases", {"a", "b"}},
                                       {"delta", {{"count", 40000}, {"ranges", "0-39999"}}},
                                       {"source", {{"node", "seedbox"}, {"files", {1, 2}}}},
                                       {"boundary_pieces", {7, 8}}};
    REQUIRE(jobs.create(id, definition).ok());
    auto outline = jobs.definition_outline(id);
    REQUIRE(outline.ok());
    CHECK(outline.value()["files"] == nlohmann::json(std::vector<std::nullptr_t>(40000, nullptr)));
    CHECK(outline.value()["union_files"] == nlohmann::json{nullptr, nullptr});
    // Every other key as written, a nested "files" too.
    for (const char* key : {"op", "aliases", "delta", "source", "boundary_pieces"}) CHECK(outline.value()[key] == definition[key]);
    CHECK(jobs.definition(id).value() == definition);
    // Written as it is serialized, the text is the document's dump(2) and a newline (the request
    // digest is read from that layout without parsing).
    CHECK(read_file((s.path() / "jobs" / id / "definition.json").string()).value() == definition.dump(2) + "\n");
    SUBCASE("a file that is not JSON is CORRUPT, as for the whole definition") {
        REQUIRE(write_file_atomic((s.path() / "jobs" / id / "definition.json").string(), "{\"files\": [").ok());
        CHECK(jobs.definition_outline(id).error().code == "CORRUPT");
        CHECK(jobs.definition(id).error().code == "CORRUPT");
    }
}

TEST_CASE("concurrent reservers: exactly one wins") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    std::atomic<int> wins{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
            if (reserve(dir, {k_v1, k_v2}, "job-" + std::to_string(i)).ok()) ++wins;
        });
    for (auto& t : threads) t.join();
    CHECK(wins == 1);
}

TEST_CASE("job definition is immutable; ledger is replaced; events append") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    JobStore jobs(dir);
    std::string id = new_job_id();
    REQUIRE(jobs.create(id, {{"op", "archive"}}).ok());
    CHECK(jobs.create(id, {{"op", "other"}}).error().code == "EXISTS");
    CHECK(jobs.definition(id).value()["op"] == "archive");
    CHECK(jobs.ledger(id).error().code == "NOT_FOUND");
    REQUIRE(jobs.write_ledger(id, {{"step", "stage"}}).ok());
    REQUIRE(jobs.write_ledger(id, {{"step", "sync"}}).ok());
    CHECK(jobs.ledger(id).value()["step"] == "sync");
    REQUIRE(jobs.append_event(id, "created", {{"by", "test"}}).ok());
    REQUIRE(jobs.append_event(id, "stage.started").ok());
    auto ev = jobs.events(id);
    REQUIRE(ev.ok());
    REQUIRE(ev->records.size() == 2);
    CHECK(ev->records[0]["type"] == "created");
    CHECK(ev->records[0]["by"] == "test");
    // An empty job directory (crash before the definition) is not a job.
    std::filesystem::create_directories(s / "jobs" / "20990101-000000-dead");
    auto ids = jobs.list().value();
    REQUIRE(ids.size() == 1);
    CHECK(ids[0] == id);
    s.write("jobs/" + id + "/ledger.json", "{torn");
    CHECK(jobs.ledger(id).error().code == "CORRUPT");
    REQUIRE(jobs.remove(id).ok());
    CHECK(jobs.list().value().empty());
}

TEST_CASE("placement generations advance once per commit, idempotently") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    PlacementStore p(dir);
    CHECK_FALSE(p.get(k_v1, "nas").value().has_value());
    CHECK(p.advance({k_v1, k_v2}, "nas", "fp1", "job-a", {{"qb_id", "x"}}).value() == 1);
    CHECK(p.advance({k_v1, k_v2}, "nas", "fp1", "job-a", {}).value() == 1);  // rerun of the same commit
    CHECK(p.advance({k_v1, k_v2}, "nas", "fp2", "job-b", {}).value() == 2);
    auto rec = p.get(k_v2, "nas").value();
    REQUIRE(rec);
    CHECK(rec->generation == 2);
    CHECK(rec->fingerprint == "fp2");
    CHECK(rec->job_id == "job-b");
    CHECK_FALSE(p.get(k_v1, "other").value().has_value());
}

TEST_CASE("tokens are single use, expire and bind to the plan digest") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    auto t = mint_token(dir, {"digest-1", "archive x a → b", "req-x", std::chrono::seconds(3600)});
    REQUIRE(t.ok());
    CHECK(t->size() == 6);
    CHECK(spend_token(dir, *t, {"digest-2", "req-x", "archive x a → b"}).error().code == "TOKEN_MISMATCH");
    REQUIRE(spend_token(dir, *t, {"digest-1", "req-x", "archive x a → b"}).ok());
    CHECK(spend_token(dir, *t, {"digest-1", "req-x", ""}).error().code == "TOKEN_SPENT");
    CHECK(spend_token(dir, "abcdef", {"digest-1", "req-x", ""}).error().code == "TOKEN_UNKNOWN");
    auto old = mint_token(dir, {"d", "x", "req-x", std::chrono::seconds(-10)});
    CHECK(spend_token(dir, *old, {"d", "req-x", ""}).error().code == "TOKEN_EXPIRED");
}

TEST_CASE("a token spent by another command says what it was shown for, and stays unspent") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    auto t = mint_token(dir, {"digest-1", "archive 1838bf9a70c1 a → b", "req-1838", std::chrono::seconds(3600)});
    REQUIRE(t.ok());
    Status other = spend_token(dir, *t, {"digest-9", "req-77aa", "archive 77aa00000000 a → b"});
    REQUIRE_FALSE(other.ok());
    CHECK(other.error().code == "TOKEN_MISMATCH");
    CHECK(other.error().message.find("shown for 'archive 1838bf9a70c1 a → b', not for this command ('archive 77aa00000000 a → b')") !=
          std::string::npos);
    CHECK(other.error().message.find("live state") == std::string::npos);
    // The same command whose live plan changed is told so.
    Status changed = spend_token(dir, *t, {"digest-2", "req-1838", "archive 1838bf9a70c1 a → b"});
    REQUIRE_FALSE(changed.ok());
    CHECK(changed.error().message.find("live state changed") != std::string::npos);
    CHECK(spend_token(dir, *t, {"digest-1", "req-1838", ""}).ok());
}

TEST_CASE("tombstones are kept for the retention period") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    REQUIRE(write_tombstone(dir, {"job-new", "req", "done", ""}).ok());
    REQUIRE(write_tombstone(dir, {"job-old", "req2", "done", "2020-01-01T00:00:00Z"}).ok());
    CHECK(read_tombstones(dir).value().size() == 2);
    CHECK(purge_tombstones(dir, 30).value() == 1);
    auto left = read_tombstones(dir).value();
    REQUIRE(left.size() == 1);
    CHECK(left[0].job_id == "job-new");
}

TEST_CASE("a refused login is remembered by digest: the same credentials match, others do not, forget clears it") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string());
    REQUIRE(dir.ok());
    RefusedLogins logins(dir.value());
    CHECK_FALSE(logins.refused("cache1", "admin", "hunter2"));
    REQUIRE(logins.remember("cache1", "admin", "hunter2").ok());
    CHECK(logins.refused("cache1", "admin", "hunter2"));
    CHECK_FALSE(logins.refused("cache1", "admin", "hunter3"));   // a changed password is tried
    CHECK_FALSE(logins.refused("cache1", "admin2", "hunter2"));  // so is another user
    CHECK_FALSE(logins.refused("cache1", "adminh", "unter2"));   // the pair, not the concatenation
    CHECK_FALSE(logins.refused("nas", "admin", "hunter2"));      // per node
    auto text = read_file(logins.path_of("cache1"));
    REQUIRE(text.ok());
    CHECK(text->find("hunter2") == std::string::npos);
    CHECK(text->find("admin") == std::string::npos);
    // A record that is not one never blocks a login.
    REQUIRE(write_file_atomic(logins.path_of("nas"), "{not json", 0600).ok());
    CHECK_FALSE(logins.refused("nas", "admin", "hunter2"));
    REQUIRE(logins.forget("cache1").ok());
    CHECK_FALSE(logins.refused("cache1", "admin", "hunter2"));
    CHECK(logins.forget("cache1").ok());  // nothing to forget is fine
}

TEST_CASE("a tombstone batch holds many jobs in one file, read as one record each and purged as a whole") {
    test::Scratch s;
    auto dir = StateDir::open(s.path().string()).value();
    {
        auto dropped = TombstoneBatch::create(dir);  // never committed: nothing is left
        REQUIRE(dropped.ok());
        REQUIRE(dropped->add({"job-x", "req-x", "done", ""}).ok());
    }
    CHECK(read_tombstones(dir).value().empty());
    auto batch = TombstoneBatch::create(dir);
    REQUIRE(batch.ok());
    for (int i = 0; i < 3; ++i) REQUIRE(batch->add({fmt::format("job-{}", i), fmt::format("req-{}", i), "done", ""}).ok());
    CHECK(batch->size() == 3);
    REQUIRE(batch->commit().ok());
    REQUIRE(write_tombstone(dir, {"job-single", "req", "cancelled", ""}).ok());
    auto all = read_tombstones(dir).value();
    REQUIRE(all.size() == 4);
    CHECK(all[0].job_id == "job-0");
    CHECK(all[2].request_digest == "req-2");
    CHECK(all[1].outcome == "done");
    CHECK_FALSE(all[0].hidden_at.empty());
    CHECK(purge_tombstones(dir, 30).value() == 0);
    // An old batch goes whole, counted by its records.
    s.write("tombstones/cleared-20200101T000000Z-1.jsonl",
            "{\"hidden_at\":\"2020-01-01T00:00:00Z\",\"tombstones\":\"cleared\",\"version\":1}\n"
            "{\"job_id\":\"old-1\",\"outcome\":\"done\",\"request_digest\":\"r1\"}\n"
            "{\"job_id\":\"old-2\",\"outcome\":\"done\",\"request_digest\":\"r2\"}\n");
    CHECK(read_tombstones(dir).value().size() == 6);
    CHECK(purge_tombstones(dir, 30).value() == 2);
    CHECK(read_tombstones(dir).value().size() == 4);
}
