// What both kinds of job share (lib/jobs/core): the ledger's shared part and its stored form,
// the step result, the budget stops, and retrying through an outage.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/base/retry.hpp"
#include "lib/base/signals.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/core/outage.hpp"
#include "lib/jobs/evict/job.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::transfer;
using archctl::test::EvictFixture;
using archctl::test::TransferFixture;
using nlohmann::json;

namespace {

// Ledgers as archctl stores them: a state directory written by an earlier archctl loads and is
// written back byte for byte.
const char* const k_stored_transfer =
    R"({"baseline_recorded":false,"bytes_present":77,"cleaned":false,"committed":false,"compensation_ends":"cancelled",)"
    R"("failure":{"code":"CANCELLED","compensation":"x","message":"cancelled by the user"},"generation":2,)"
    R"("kept":[{"code":"preexisting","node":"nas","path":"/p","reason":"r","step":"unmerge"}],"merge_provenance":[{"how":"rename","index":3,"ino":7,"path":"a","provenance":"created"}],)"
    R"("merged":false,"sessions":[{"bytes_copied":20,"bytes_linked":10,"bytes_synced":30,"end_reason":"budget",)"
    R"("ended":"2026-12-01T18:40:00Z","host":"seedbox","pid":4121,"started":"2026-12-01T18:34:12Z"}],"staged":true,)"
    R"("started_target":false,"state":"compensating","step":"sync","synced":false,"target_added":true,)"
    R"("target_baseline":{"qb_id":"abc"},"target_tag":"archctl-job-x","target_touched":false,"version":1})";
const char* const k_fresh_transfer =
    R"({"baseline_recorded":false,"bytes_present":0,"cleaned":false,"committed":false,"failure":null,"generation":0,"kept":[],)"
    R"("merge_provenance":[],"merged":false,"sessions":[],"staged":false,"started_target":false,"state":"running","step":"stage",)"
    R"("synced":false,"target_added":false,"target_baseline":null,"target_tag":"","target_touched":false,"version":1})";
const char* const k_stored_evict =
    R"({"bytes_freed":400,"dirs_removed":1,"failure":{"code":"PROOF_DRIFT","gone":["/a"],"message":"m","step":"unlink"},)"
    R"("files_removed":2,"kept":[{"path":"/x","reason":"referenced by another torrent"}],"op":"evict","partfile":"absent",)"
    R"("removed":true,"sessions":[{"end_reason":"error","ended":"2026-12-01T18:40:00Z","host":"seedbox","pid":4121,)"
    R"("started":"2026-12-01T18:34:12Z"}],"state":"cleanup_required","step":"unlink","version":1})";
const char* const k_fresh_evict =
    R"({"bytes_freed":0,"dirs_removed":0,"failure":null,"files_removed":0,"kept":[],"op":"evict","partfile":"","removed":false,)"
    R"("sessions":[],"state":"running","step":"hold","version":1})";

Session sample_session(const std::string& end_reason) {
    return {"2026-12-01T18:34:12Z", "2026-12-01T18:40:00Z", end_reason, "seedbox", 4121, 10, 20, 30};
}

}  // namespace

TEST_CASE("ledger: a stored transfer ledger loads and is written back unchanged") {
    const json stored = json::parse(k_stored_transfer);
    Ledger l = Ledger::from_json(stored).value();
    CHECK(l.state == JobState::compensating);
    CHECK(l.step == TransferStep::sync);
    CHECK(l.failure["code"] == "CANCELLED");
    CHECK(l.kept.size() == 1);
    REQUIRE(l.sessions.size() == 1);
    CHECK(l.sessions[0].bytes_synced == 30);
    CHECK(l.to_json().dump() == stored.dump());
    CHECK(Ledger{}.to_json().dump() == json::parse(k_fresh_transfer).dump());
    CHECK(Ledger::from_json(json::parse(k_fresh_transfer)).value().to_json().dump() == json::parse(k_fresh_transfer).dump());
}

TEST_CASE("ledger: a transfer ledger built field by field is stored as before") {
    Ledger l;
    l.state = JobState::compensating;
    l.compensation_ends = JobState::cancelled;
    l.step = TransferStep::sync;
    l.staged = true;
    l.target_added = true;
    l.target_tag = "archctl-job-x";
    l.target_baseline = {{"qb_id", "abc"}};
    l.generation = 2;
    l.bytes_present = 77;
    l.merge_provenance = {{.index = 3, .path = "a", .provenance = "created", .how = "rename", .ino = 7}};
    l.failure = {{"code", "CANCELLED"}, {"message", "cancelled by the user"}, {"compensation", "x"}};
    l.kept = json::array({{{"node", "nas"}, {"path", "/p"}, {"reason", "r"}, {"code", "preexisting"}, {"step", "unmerge"}}});
    l.sessions.push_back(sample_session("budget"));
    CHECK(l.to_json().dump() == json::parse(k_stored_transfer).dump());
}

TEST_CASE("ledger: a stored evict ledger loads and is written back unchanged; its sessions count no bytes") {
    const json stored = json::parse(k_stored_evict);
    jobs::evict::EvictLedger l = jobs::evict::EvictLedger::from_json(stored).value();
    CHECK(l.state == JobState::cleanup_required);
    CHECK(l.step == jobs::evict::EvictStep::unlink);
    CHECK(l.failure["gone"] == json::array({"/a"}));
    REQUIRE(l.sessions.size() == 1);
    CHECK(l.sessions[0].pid == 4121);
    CHECK(l.to_json().dump() == stored.dump());
    CHECK(jobs::evict::EvictLedger{}.to_json().dump() == json::parse(k_fresh_evict).dump());

    jobs::evict::EvictLedger built;
    built.state = JobState::cleanup_required;
    built.step = jobs::evict::EvictStep::unlink;
    built.removed = true;
    built.files_removed = 2;
    built.bytes_freed = 400;
    built.dirs_removed = 1;
    built.kept = json::array({{{"path", "/x"}, {"reason", "referenced by another torrent"}}});
    built.partfile = "absent";
    built.failure = {{"code", "PROOF_DRIFT"}, {"message", "m"}, {"step", "unlink"}, {"gone", {"/a"}}};
    built.sessions.push_back(sample_session("error"));  // its bytes are not part of an evict session
    CHECK(built.to_json().dump() == stored.dump());
}

TEST_CASE("ledger: a step that is none of the kind's steps makes the ledger unreadable") {
    const auto transfer = Ledger::from_json(json{{"state", "running"}, {"step", "syncing"}});
    REQUIRE_FALSE(transfer.ok());
    CHECK(transfer.error().is(ErrorCode::CORRUPT));
    CHECK(transfer.error().message.find("\"syncing\"") != std::string::npos);
    CHECK_FALSE(Ledger::from_json(json{{"step", 3}}).ok());
    CHECK_FALSE(Ledger::from_json(json::array()).ok());
    CHECK_FALSE(jobs::evict::EvictLedger::from_json(json{{"step", "sync"}}).ok());  // a transfer's step
    CHECK(jobs::evict::EvictLedger::from_json(json{{"step", "partfile"}}).value().step == jobs::evict::EvictStep::partfile);
    // Every name reads back as its step.
    for (std::size_t i = 0; i < k_transfer_steps.names.size(); ++i)
        CHECK(static_cast<std::size_t>(*k_transfer_steps.parse(k_transfer_steps.names[i])) == i);
}

TEST_CASE("ledger: job states read back; an unknown one is running") {
    for (JobState s : {JobState::running, JobState::done, JobState::failed, JobState::cancelled, JobState::cleanup_required,
                       JobState::compensating})
        CHECK(parse_job_state(to_string(s)) == s);
    CHECK(parse_job_state("exploded") == JobState::running);
}

TEST_CASE("records: a run's sessions and a write it could not make, for both kinds") {
    SUBCASE("a transfer session counts the bytes it moved") {
        TransferFixture f;
        REQUIRE(f.run().outcome == RunOutcome::done);
        const json session = f.ledger()["sessions"][0];
        for (const char* key : {"started", "ended", "end_reason", "host", "pid", "bytes_linked", "bytes_copied", "bytes_synced"})
            CHECK_MESSAGE(session.contains(key), key);
        CHECK(session.size() == 8);
        CHECK(session["end_reason"] == "complete");
    }
    SUBCASE("an evict session has no byte counts") {
        EvictFixture f;
        REQUIRE(f.run().outcome == RunOutcome::done);
        const json session = f.ledger()["sessions"][0];
        for (const char* key : {"started", "ended", "end_reason", "host", "pid"}) CHECK_MESSAGE(session.contains(key), key);
        CHECK(session.size() == 5);
        CHECK(session["end_reason"] == "complete");
    }
    SUBCASE("a write that failed after the outcome is a warning naming it") {
        TransferFixture f;
        std::vector<std::string> lines;
        JobIo io;
        io.log = [&](const std::string& line) { lines.push_back(line); };
        state::JobStore store(f.state);
        RunEnv env{f.config, f.state, f.nodes, store, io, Budgets{}};
        warn_unrecorded(env, Status(Error(ErrorCode::IO, "disk full")), "the cancel request");
        JobRecords<Ledger> records(env, "20261201-183412-7f3c");
        records.warn_unrecorded(Status(Error(ErrorCode::IO, "disk full")), "the failure");
        records.warn_unrecorded(Status(), "the failure event");
        REQUIRE(lines.size() == 2);
        CHECK(lines[0] == "archctl: warning: the cancel request was not recorded: disk full");
        CHECK(lines[1] == "archctl: warning: the failure of job 20261201-183412-7f3c was not recorded: disk full");
    }
}

TEST_CASE("budgets: one stop text for a job's steps and for the run that drives several jobs") {
    fakes::ManualClock clock;
    const SteadyTime start = clock.steady();
    Budgets b;
    b.max_bytes = 1024;
    b.max_duration = std::chrono::seconds(60);
    CHECK_FALSE(budget_stop(b, 1023, start, start + std::chrono::seconds(59)));
    auto bytes = budget_stop(b, 2048, start, start);
    REQUIRE(bytes);
    CHECK(bytes->kind == StepResult::stop);
    CHECK(bytes->reason == StopReason::budget);
    CHECK(bytes->text == "budget reached (2.0 KiB moved this run, limit 1.0 KiB)");
    CHECK(budget_text(2048, 1024) == bytes->text);  // the sync step's stop at the budget opens with it
    auto late = budget_stop(b, 0, start, start + std::chrono::seconds(60));
    REQUIRE(late);
    CHECK(late->reason == StopReason::deadline);
    CHECK(late->text == "deadline reached (1m this run)");

    SharedBudgets shared(b, start);
    RunResult moved;
    moved.bytes_moved = 2048;
    shared.count(moved);
    auto stop = shared.exhausted(start);
    REQUIRE(stop);
    CHECK(stop->reason == bytes->reason);
    CHECK(stop->text == bytes->text);
}

TEST_CASE("retry_through_outage: again while the outage lasts and the wait allows, the result otherwise") {
    int calls = 0, waits = 0;
    auto attempt = [&]() -> Result<int> {
        ++calls;
        if (calls < 3) return Error(ErrorCode::HTTP_UNREACHABLE, "connection refused");
        return calls;
    };
    auto outage = [](const Result<int>& r) { return !r.ok() && r.error().is(ErrorCode::HTTP_UNREACHABLE); };
    SUBCASE("the wait goes on: the attempt that worked") {
        Result<int> r = retry_through_outage(attempt, outage, [&](const Result<int>&) -> std::optional<Result<int>> {
            ++waits;
            return std::nullopt;
        });
        REQUIRE(r.ok());
        CHECK(r.value() == 3);
        CHECK(waits == 2);
    }
    SUBCASE("the wait ends: what it ends with") {
        Result<int> r = retry_through_outage(attempt, outage, [&](const Result<int>&) -> std::optional<Result<int>> {
            ++waits;
            return Error(ErrorCode::ROUTE_WAITING, "still unreachable");
        });
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == "ROUTE_WAITING");
        CHECK(calls == 1);
        CHECK(waits == 1);
    }
    SUBCASE("no outage: no wait") {
        Result<int> r = retry_through_outage([] { return Result<int>(Error(ErrorCode::CORRUPT, "bad")); }, outage,
                                             [&](const Result<int>&) -> std::optional<Result<int>> {
                                                 ++waits;
                                                 return std::nullopt;
                                             });
        CHECK(r.error().code == "CORRUPT");
        CHECK(waits == 0);
    }
}

TEST_CASE("retry_through_outage in a job run: next, the error that is no outage, or the wait's stop with the outage") {
    TransferFixture f;
    std::vector<std::string> lines;
    JobIo io;
    io.clock = &f.clock;
    io.log = [&](const std::string& line) { lines.push_back(line); };
    state::JobStore store(f.state);
    Budgets budgets;
    budgets.outage_wait = std::chrono::seconds(5);
    RunEnv env{f.config, f.state, f.nodes, store, io, budgets};
    const Error down(ErrorCode::NODE_UNREACHABLE, "node 'nas' does not answer");

    SUBCASE("an outage that ends within the window") {
        OutageWait outage(env);
        int calls = 0;
        StepResult r = retry_through_outage(outage, [&]() -> Status {
            if (++calls < 3) return down;
            return {};
        });
        CHECK(r.kind == StepResult::next);
        CHECK(calls == 3);
        CHECK(outage.waiting());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0] == "archctl: waiting: node 'nas' does not answer (retrying for up to 5s)");
    }
    SUBCASE("an error that is no outage fails at once") {
        OutageWait outage(env);
        StepResult r = retry_through_outage(outage, [&]() -> Status { return Error(ErrorCode::CORRUPT, "bad"); });
        CHECK(r.kind == StepResult::fail);
        CHECK(r.error.code == "CORRUPT");
        CHECK_FALSE(outage.waiting());
    }
    SUBCASE("past the window: a stop 'waiting' that keeps the outage") {
        OutageWait outage(env);
        StepResult r = retry_through_outage(outage, [&]() -> Status { return down; });
        CHECK(r.kind == StepResult::stop);
        CHECK(r.reason == StopReason::waiting);
        CHECK(r.text == "still unreachable after 5s: node 'nas' does not answer");
        CHECK(r.error.code == "NODE_UNREACHABLE");
    }
}

TEST_CASE("an evict ledger keeps the unlink step's progress and intent, and a ledger without them reads as none") {
    archctl::jobs::evict::EvictLedger l;
    l.unlink_done = 1000;
    l.unlinking = std::make_pair(std::uint64_t{1000}, std::uint64_t{1500});
    const auto j = l.to_json();
    CHECK(j["unlink_done"] == 1000);
    CHECK(j["unlinking"] == nlohmann::json::array({1000, 1500}));
    const auto back = archctl::jobs::evict::EvictLedger::from_json(j).value();
    CHECK(back.unlink_done == 1000);
    REQUIRE(back.unlinking);
    CHECK(*back.unlinking == std::make_pair(std::uint64_t{1000}, std::uint64_t{1500}));
    const auto old = archctl::jobs::evict::EvictLedger::from_json(archctl::jobs::evict::EvictLedger{}.to_json()).value();
    CHECK(old.unlink_done == 0);
    CHECK_FALSE(old.unlinking);
}

TEST_CASE("driver: a job found ended whose run was killed before it released gives its resource back when resumed or cancelled") {
    for (const char* how : {"resume", "cancel"}) {
        CAPTURE(how);
        SUBCASE("transfer") {
            TransferFixture f;
            REQUIRE(f.run().outcome == RunOutcome::done);
            // The kill: the job's ledger says done, its reservation is still there.
            REQUIRE(state::reserve(f.state, f.aliases, f.job_id).ok());
            REQUIRE(f.holder(f.aliases[0]) == f.job_id);
            if (std::string(how) == "resume") CHECK(f.run().outcome == RunOutcome::done);
            else (void)f.cancel();
            for (const auto& alias : f.aliases) CHECK(f.holder(alias).empty());
        }
        SUBCASE("evict") {
            EvictFixture e;
            REQUIRE(e.run().outcome == RunOutcome::done);
            REQUIRE(state::reserve(e.state, e.aliases, e.job_id).ok());
            if (std::string(how) == "resume") CHECK(e.run().outcome == RunOutcome::done);
            else (void)e.cancel();
            for (const auto& alias : e.aliases) CHECK(e.holder(alias).empty());
        }
    }
}
