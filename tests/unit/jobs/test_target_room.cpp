// A job that cannot land moves on (lib/jobs/transfer/target_room.hpp): a transfer whose target
// cannot take its bytes stops as before and records it; past the bound (3 runs and 24 h since it
// was first recorded) the run that meets it again undoes the job with the compensation a cancel
// uses and releases it; a run that gets past it clears the record. On the recording fakes
// (job_fixture.hpp), with a real jobs::Driver and a ManualClock.

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/transfer/target_room.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::transfer;
using archctl::test::TransferFixture;
using nlohmann::json;

namespace {

bool has_text(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Budgets floor_of(std::uint64_t bytes) {
    Budgets b;
    b.min_free = bytes;
    return b;
}

}  // namespace

TEST_CASE("target room: below the floor the job waits, bounded by runs and time, then is undone and released") {
    TransferFixture f;
    std::uint64_t free = 50;
    target_without_room(f, [&free] { return free; });
    const std::string first_seen = format_rfc3339(f.clock.now());

    RunResult r1 = f.run(floor_of(100));
    REQUIRE_MESSAGE(r1.outcome == RunOutcome::stopped, r1.error.message);
    CHECK(r1.stop_reason == StopReason::disk);
    CHECK(r1.step == "sync");
    CHECK(has_text(r1.stop_text, "destination free space on 'nas' fell below the floor (50 B free < 100 B floor)"));
    CHECK(has_text(r1.stop_text, "'nas' has not taken it since " + first_seen + " (1 run)"));
    CHECK(has_text(r1.stop_text, "once 3 runs and 24 h have passed"));
    auto room = target_room_of(r1);
    REQUIRE(room);
    CHECK(room->kind == TargetRoom::Kind::waiting);
    CHECK(room->blocked.node == "nas");
    json l = f.ledger();
    CHECK(l["state"] == "running");
    CHECK(l["target_blocked"] == json{{"node", "nas"}, {"since", first_seen}, {"runs", 1}, {"reason", room->blocked.reason}});
    CHECK(f.events_of("target_blocked").size() == 1);
    CHECK(holds_transfer(f.nas.st.ignore_lines[f.def.route.id], f.job_id));  // a stop stops the bytes

    // Three runs within two hours: not undone (a loop of retries is not a day).
    f.clock.advance(std::chrono::hours(1));
    CHECK(f.run(floor_of(100)).outcome == RunOutcome::stopped);
    f.clock.advance(std::chrono::hours(1));
    RunResult r3 = f.run(floor_of(100));
    CHECK(r3.outcome == RunOutcome::stopped);
    CHECK(has_text(r3.stop_text, "(3 runs)"));
    CHECK(f.ledger()["target_blocked"]["since"] == first_seen);
    CHECK(f.events_of("target_blocked").size() == 1);  // recorded once, counted by the ledger
    CHECK(f.holder(f.aliases[0]) == f.job_id);

    // A day after it was first seen, the run that meets it again undoes and releases the job.
    f.clock.advance(std::chrono::hours(23));
    // The run lifted the hold for its sync step, so the target may be pulling the job: the undo
    // holds the transfer again before the target's staging is removed, so no pull brings it back.
    std::vector<bool> held_at_cleanup;
    TransferFixture::before(f.nas.ops, "cleanup", [&] { held_at_cleanup.push_back(holds_transfer(f.nas.st.ignore_lines[f.def.route.id], f.job_id)); });
    RunResult r4 = f.run(floor_of(100));
    REQUIRE(r4.outcome == RunOutcome::failed);
    CHECK(r4.error.is(ErrorCode::DISK_INSUFFICIENT));
    CHECK(has_text(r4.error.message, "job " + f.job_id + " released: 'nas' has not taken it since " + first_seen + " (4 runs)"));
    CHECK(has_text(r4.error.hint, "'archctl archive " + f.qb_id.substr(0, 12) + " --to NODE'"));
    CHECK(r4.ended == "cancelled");
    room = target_room_of(r4);
    REQUIRE(room);
    CHECK(room->kind == TargetRoom::Kind::released);
    l = f.ledger();
    CHECK(l["state"] == "cancelled");
    CHECK(l["failure"]["code"] == "DISK_INSUFFICIENT");
    CHECK(l["failure"]["released"]["runs"] == 4);
    CHECK(l["sessions"].back()["end_reason"] == "released");
    // Undone as a cancel is: its staging removed on both nodes, the hold lifted, the
    // reservation freed, and an event that says why.
    CHECK(f.seedbox.ops.count("cleanup") >= 1);
    CHECK(f.nas.ops.count("cleanup") >= 1);
    REQUIRE_FALSE(held_at_cleanup.empty());
    CHECK(held_at_cleanup.front());
    CHECK_FALSE(holds_transfer(f.nas.st.ignore_lines[f.def.route.id], f.job_id));
    CHECK(f.holder(f.aliases[0]).empty());
    auto released = f.events_of("released");
    REQUIRE(released.size() == 1);
    CHECK(released[0]["node"] == "nas");
    CHECK(released[0]["since"] == first_seen);
    CHECK(has_text(released[0].value("reason", ""), "fell below the floor"));
    CHECK(f.events_of("compensated").size() == 1);
    CHECK(f.events_of("failed").empty());

    // It is over: a rerun does nothing more.
    RunResult again = f.run(floor_of(100));
    CHECK(again.error.is(ErrorCode::JOB_FINISHED));
}

TEST_CASE("target room: the record goes once the target takes the job again") {
    TransferFixture f;
    std::uint64_t free = 50;
    auto arrives = f.nas.ops.handlers["receive_check"];
    target_without_room(f, [&free] { return free; });
    REQUIRE(f.run(floor_of(100)).outcome == RunOutcome::stopped);
    REQUIRE(f.ledger().contains("target_blocked"));

    free = 1u << 20;  // room again: the files arrive and the job lands
    f.nas.ops.handlers["receive_check"] = arrives;
    f.clock.advance(std::chrono::hours(30));
    RunResult r = f.run(floor_of(100));
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
    CHECK_FALSE(f.ledger().contains("target_blocked"));
    CHECK(f.events_of("target_unblocked").size() == 1);
    CHECK_FALSE(target_room_of(r));
}

TEST_CASE("target room: a run that moved bytes and stopped for another reason clears it; one that stopped for room again does not") {
    TransferFixture f;
    std::uint64_t free = 50;
    target_without_room(f, [&free] { return free; });
    REQUIRE(f.run(floor_of(100)).outcome == RunOutcome::stopped);
    // Room again, a file arrives, then the run's deadline: the target took bytes, so the count
    // starts over.
    free = 1u << 20;
    f.nas.ops.handlers["receive_check"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::ReceiveCheckRequest>();
        node::ReceiveCheckResult r;
        r.job_exists = r.manifest = true;
        const auto& first = request.files.front();
        r.files.push_back({node::payload_name(first.index, request.layout), node::Arrival::present, first.size, first.index, first.size, ""});
        r.bytes_present = first.size;
        r.files_present = 1;
        return json(r);
    };
    Budgets deadline = floor_of(100);
    deadline.max_duration = std::chrono::seconds(60);
    RunResult r = f.run(deadline);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::deadline);
    CHECK_FALSE(f.ledger().contains("target_blocked"));
    CHECK_FALSE(target_room_of(r));

    // Full again: a new record, counted from now; a few bytes before the same stop keep it.
    free = 50;
    RunResult full = f.run(floor_of(100));
    REQUIRE(full.outcome == RunOutcome::stopped);
    CHECK(f.ledger()["target_blocked"]["runs"] == 1);
    CHECK(f.ledger()["target_blocked"]["since"] == format_rfc3339(f.clock.now()));
}

TEST_CASE("target room: the target's Syncthing out of space is the target not taking the job") {
    TransferFixture f;
    std::uint64_t free = 1u << 20;  // above the floor, as archctl measures it
    target_without_room(f, [&free] { return free; });
    clients::syncthing::FolderStatus status;
    status.state = "error";
    status.error = "insufficient space in folder r1 (/tank/sync/r1): current 1.0 MB < required 6.3 MB";
    f.nas.st.folder_status[f.def.route.id] = status;
    RunResult r = f.run(floor_of(100));
    REQUIRE_MESSAGE(r.outcome == RunOutcome::stopped, r.error.message);
    CHECK(r.stop_reason == StopReason::waiting);
    CHECK(has_text(r.stop_text, "receiver out of disk space"));
    CHECK(has_text(r.stop_text, "'nas' has not taken it since"));
    auto room = target_room_of(r);
    REQUIRE(room);
    CHECK(room->kind == TargetRoom::Kind::waiting);
    CHECK(f.ledger()["target_blocked"]["runs"] == 1);

    // A paused folder is the user's choice, not the target refusing: no record.
    TransferFixture g;
    target_without_room(g, [&free] { return free; });
    clients::syncthing::Folder folder;
    folder.id = g.def.route.id;
    folder.path = g.def.route.target_path;
    folder.devices = {g.seedbox.st.system.my_id, g.nas.st.system.my_id};
    folder.ignore_perms = true;  // the valve archctl provisions
    folder.paused = true;
    g.nas.st.folder_map[g.def.route.id] = folder;
    RunResult paused = g.run();
    REQUIRE_MESSAGE(paused.outcome == RunOutcome::stopped, paused.error.message);
    CHECK(has_text(paused.stop_text, "folder paused"));
    CHECK_FALSE(g.ledger().contains("target_blocked"));
    CHECK_FALSE(target_room_of(paused));
}

TEST_CASE("target room: the bound is both runs and time") {
    TargetBlocked b{"nas", "2026-12-01T03:00:00Z", 3, "full"};
    SystemTime since{};
    REQUIRE(parse_rfc3339(b.since, since));
    CHECK_FALSE(release_due(b, since + std::chrono::hours(23)));
    CHECK(release_due(b, since + std::chrono::hours(24)));
    b.runs = 2;
    CHECK_FALSE(release_due(b, since + std::chrono::hours(240)));
    b.since = "not a time";
    b.runs = 9;
    CHECK_FALSE(release_due(b, since + std::chrono::hours(240)));
    CHECK(waiting_text({"nas", "2026-12-01T03:00:00Z", 1, "full"}) ==
          "'nas' has not taken it since 2026-12-01T03:00:00Z (1 run); a run that meets this again once 3 runs and 24 h have passed "
          "undoes and releases the job");
}

TEST_CASE("target room: --no-wait runs count a target that cannot take the job as well") {
    TransferFixture f;
    std::uint64_t free = 50;
    target_without_room(f, [&free] { return free; });
    Budgets b = floor_of(100);
    b.no_wait = true;
    RunResult r = f.run(b);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::disk);  // the floor is looked at before --no-wait ends the wait
    CHECK(f.ledger()["target_blocked"]["runs"] == 1);

    TransferFixture g;
    std::uint64_t room = 1u << 20;
    target_without_room(g, [&room] { return room; });
    clients::syncthing::FolderStatus status;
    status.state = "error";
    status.error = "insufficient space in folder r1";
    g.nas.st.folder_status[g.def.route.id] = status;
    Budgets no_wait;
    no_wait.no_wait = true;
    RunResult w = g.run(no_wait);
    REQUIRE(w.outcome == RunOutcome::stopped);
    CHECK(w.stop_reason == StopReason::waiting);
    CHECK(has_text(w.stop_text, "still waiting on Syncthing (--no-wait): waiting for Syncthing on 'nas': receiver out of disk space"));
    CHECK(has_text(w.stop_text, "'nas' has not taken it since"));
    REQUIRE(target_room_of(w));
    CHECK(g.ledger()["target_blocked"]["runs"] == 1);
}
