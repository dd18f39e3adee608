// Every job step driven by jobs::Driver against the recording fakes (job_fixture.hpp): stale
// external state, a download attempt and a short recheck during verify, budget, deadline and
// Ctrl-C stops, evict's proof drift, what compensation keeps, and a ledger that cannot be
// written. No service, no node process, no sleeping (the ManualClock moves instead).

#include <doctest/doctest.h>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/fs.hpp"
#include "lib/base/signals.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::transfer;
using archctl::test::EvictFixture;
using archctl::test::JobFixture;
using archctl::test::TransferFixture;
using nlohmann::json;

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A FakeQb remove() of one torrent that keeps its data.
json removed_without_data(const std::string& id) { return json{{"ids", json::array({id})}, {"delete_data", false}}; }

const std::string k_a = "/tank/t/show/a.bin";
const std::string k_b = "/tank/t/show/b.bin";

// What every failure before the commit leaves: the job failed at `step`, compensated, nothing
// committed, the resource given back.
void check_compensated(const TransferFixture& f, const RunResult& r, const std::string& code, const std::string& step) {
    CHECK(r.outcome == RunOutcome::failed);
    CHECK(r.error.code == code);
    json l = f.ledger();
    CHECK(l["state"] == "failed");
    CHECK(l["committed"] == false);
    CHECK(l["failure"]["code"] == code);
    CHECK(l["failure"]["step"] == step);
    CHECK(l["sessions"].back()["end_reason"] == "error");
    CHECK(f.committed_generation() == 0);
    auto types = f.event_types();
    CHECK(has(types, "compensating"));
    CHECK(has(types, "compensated"));
    CHECK(has(types, "failed"));
    CHECK_FALSE(has(types, "committed"));
    // Compensation ends with the job's staging cleaned on both nodes; the target is never
    // started or made readable.
    CHECK(f.seedbox.ops.count("cleanup") == 1);
    CHECK(f.nas.ops.count("cleanup") == 1);
    CHECK(f.nas.ops.count("chmod_readable") == 0);
    CHECK(f.nas.qb.count("start") == 0);
    CHECK(f.holder(f.aliases[0]).empty());
    CHECK(f.holder(f.aliases[1]).empty());
}

}  // namespace

TEST_CASE("steps: the archive job runs stage → sync → merge → verify → cleanup to done against the fakes") {
    TransferFixture f;
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.code, ": ", r.error.message, "\n", f.log_text());
    CHECK(r.step == "done");
    json l = f.ledger();
    CHECK(l["state"] == "done");
    CHECK(l["committed"] == true);
    CHECK(l["generation"] == 1);
    CHECK(l["cleaned"] == true);
    CHECK(l["sessions"].size() == 1);
    CHECK(l["sessions"][0]["end_reason"] == "complete");
    CHECK(l["sessions"][0]["bytes_copied"] == 30);
    CHECK(l["sessions"][0]["bytes_synced"] == 30);
    CHECK(f.committed_generation() == 1);
    // One call of each step's operation, in order.
    CHECK(f.seedbox.ops.count("stage") == 1);
    // The sync step's scan of the staged job, and cleanup's of its deletion (both sides).
    CHECK(f.seedbox.st.count("scan") == 2);
    CHECK(f.nas.st.count("scan") == 1);
    CHECK(f.nas.ops.count("receive_check") == 2);  // a look at the staging area before the hold is lifted, one in the wait
    CHECK(f.nas.ops.count("merge") == 1);
    CHECK(f.nas.qb.count("add") == 1);
    CHECK(f.nas.qb.args_of("add")[0]["started"] == false);
    CHECK(f.nas.qb.args_of("add")[0]["tags"] == json::array({job_tag(f.job_id)}));
    CHECK(f.nas.qb.count("recheck") == 1);
    CHECK(f.nas.ops.count("chmod_readable") == 1);
    REQUIRE(f.nas.qb.count("delete_tags") == 1);
    CHECK(f.nas.qb.args_of("delete_tags")[0] == json{{"tags", json::array({job_tag(f.job_id)})}});
    CHECK(f.nas.qb.count("start") == 1);
    CHECK(f.seedbox.ops.count("cleanup") == 1);
    CHECK(f.nas.ops.count("cleanup") == 1);
    CHECK(f.nas.ops.count("unmerge") == 0);
    CHECK(f.nas.qb.count("remove") == 0);
    CHECK(f.holder(f.aliases[0]).empty());
    // Only the recheck's polls slept, on the manual clock.
    CHECK(f.clock.sleeps == 2);
    CHECK(f.event_types() == std::vector<std::string>{"created", "staged", "synced", "merged", "target_added", "committed",
                                                      "target_started", "cleaned", "done"});
}

TEST_CASE("steps: a source changed before stage, sync, merge or verify fails STALE_STATE and is compensated") {
    struct Row {
        const char* name;
        const char* step;  // the step the job failed at
        std::function<void(TransferFixture&)> arrange;
        std::size_t stages, merges, adds, unmerges;
    };
    const Row rows[] = {
        {"the source torrent removed before the run: fails before stage", "stage",
         [](TransferFixture& f) { f.seedbox.qb.torrent_list.clear(); }, 0, 0, 0, 0},
        {"the source selection changed while staging: fails before sync", "sync",
         [](TransferFixture& f) { JobFixture::before(f.seedbox.ops, "stage", [&f] { f.source_files()[1].priority = 0; }); }, 1, 0, 0, 0},
        {"the source torrent removed while syncing: fails before merge", "merge",
         [](TransferFixture& f) { JobFixture::before(f.nas.ops, "receive_check", [&f] { f.seedbox.qb.torrent_list.clear(); }); }, 1, 0, 0, 1},
        {"the source selection changed while merging: fails before verify", "verify",
         [](TransferFixture& f) { JobFixture::before(f.nas.ops, "merge", [&f] { f.source_files()[0].priority = 0; }); }, 1, 1, 0, 1},
        {"the source completion changed during the recheck: fails at the check right before the commit", "verify",
         [](TransferFixture& f) { f.after_add = [&f] { f.source_files()[0].progress = 0.5; }; }, 1, 1, 1, 1},
    };
    for (const auto& row : rows) {
        CAPTURE(row.name);
        TransferFixture f;
        row.arrange(f);
        RunResult r = f.run();
        check_compensated(f, r, "STALE_STATE", row.step);
        CHECK(contains(r.error.message, "changed since job " + f.job_id + " was created"));
        CHECK(contains(r.error.message, "source"));
        CHECK(f.seedbox.ops.count("stage") == row.stages);
        CHECK(f.nas.ops.count("merge") == row.merges);
        CHECK(f.nas.qb.count("add") == row.adds);
        // A merge that may have started is taken back (its own record says what it placed).
        CHECK(f.nas.ops.count("unmerge") == row.unmerges);
        // A torrent this job added is removed again (without its data); none is left behind.
        CHECK(f.nas.qb.count("remove") == row.adds);
        if (row.adds) CHECK(f.nas.qb.args_of("remove")[0] == removed_without_data(f.qb_id));
        CHECK(f.nas.qb.find(f.qb_id) == nullptr);
        // The source is never touched.
        CHECK(f.seedbox.qb.count("remove") == 0);
        CHECK(f.seedbox.qb.count("stop") == 0);
    }
}

TEST_CASE("steps: a download attempt during the verify recheck fails DOWNLOAD_ATTEMPT; the added torrent is removed") {
    TransferFixture f;
    f.recheck = {{"checkingDL", 0.3}, {"downloading", 0.3}};
    RunResult r = f.run();
    check_compensated(f, r, "DOWNLOAD_ATTEMPT", "verify");
    CHECK(contains(r.error.message, "tried to download"));
    CHECK(f.nas.qb.count("recheck") == 1);
    // The torrent this job added (its tag proves it) is removed without its data, then the
    // files merge placed.
    REQUIRE(f.nas.qb.count("remove") == 1);
    CHECK(f.nas.qb.args_of("remove")[0] == removed_without_data(f.qb_id));
    CHECK(f.nas.qb.find(f.qb_id) == nullptr);
    CHECK(has(f.event_types(), "target_removed"));
    CHECK(f.ledger()["target_added"] == false);
    REQUIRE(f.nas.ops.count("unmerge") == 1);
    auto unmerged = f.events_of("unmerged");
    REQUIRE(unmerged.size() == 1);
    CHECK(unmerged[0]["removed"] == json::array({k_a, k_b}));
    CHECK(f.ledger()["kept"] == json::array());
}

TEST_CASE("steps: a recheck below 100% fails VERIFY_FAILED naming the file; nothing is committed") {
    TransferFixture f;
    f.rechecked_files[1].progress = 0.5;
    f.recheck = {{"checkingUP", 0.4}, {"pausedDL", 0.83}};
    RunResult r = f.run();
    check_compensated(f, r, "VERIFY_FAILED", "verify");
    CHECK(contains(r.error.message, "did not verify 1 file(s): 1 show/b.bin (50.0%)"));
    CHECK_FALSE(contains(r.error.message, "show/a.bin"));
    CHECK(r.error.hint == "nothing was committed; the target was restored");
    CHECK(f.ledger()["generation"] == 0);
    CHECK(f.nas.qb.count("remove") == 1);
    CHECK(f.nas.qb.find(f.qb_id) == nullptr);
}

TEST_CASE("steps: verify selects the union explicitly and reads it back; a file qBittorrent keeps unselected is named with its reason") {
    SUBCASE("a file qBittorrent left at 0 on add (its 'Excluded file names') is selected and verified") {
        TransferFixture f;
        f.rechecked_files[1].priority = 0;
        RunResult r = f.run();
        CHECK(r.outcome == RunOutcome::done);
        auto calls = f.nas.qb.args_of("set_file_priority");
        REQUIRE(!calls.empty());
        CHECK(calls[0]["indices"] == json::array({0, 1}));
        CHECK(calls[0]["priority"] == 1);
    }
    SUBCASE("refused, with the matching pattern of its preferences") {
        TransferFixture f;
        f.rechecked_files[1].priority = 0;
        f.nas.qb.refuse_select = {1};
        f.nas.qb.prefs = {{"excluded_file_names_enabled", true}, {"excluded_file_names", "*.iso\n*.BIN"}};
        RunResult r = f.run();
        check_compensated(f, r, "VERIFY_FAILED", "verify");
        CHECK(r.error.message == "qBittorrent on 'nas' keeps file 1 'show/b.bin' unselected: it matches its 'Excluded file names' pattern '*.BIN'");
        CHECK(contains(r.error.hint, "Excluded file names"));
        CHECK(f.nas.qb.count("recheck") == 0);
    }
    SUBCASE("refused without a reason in its preferences") {
        TransferFixture f;
        f.rechecked_files[1].priority = 0;
        f.nas.qb.refuse_select = {1};
        f.nas.qb.prefs = {{"excluded_file_names_enabled", false}, {"excluded_file_names", "*.bin"}};
        RunResult r = f.run();
        check_compensated(f, r, "VERIFY_FAILED", "verify");
        CHECK(r.error.message == "qBittorrent on 'nas' keeps file 1 'show/b.bin' unselected (priority 0) after archctl selected it");
    }
}

namespace {

constexpr const char* k_stall_id = "5a11ed0000000000000000000000000000000000";

// A stopped torrent of 1 GiB on a FakeQb.
fakes::FakeQb stall_qb(const std::string& state = "pausedDL", double progress = 0) {
    fakes::FakeQb qb;
    clients::qbittorrent::TorrentInfo info;
    info.id = k_stall_id;
    info.state = state;
    info.progress = progress;
    info.size = info.total_size = std::int64_t{1} << 30;
    qb.put(info, {fakes::qb_file(0, "show/a.bin", info.size, 1.0)});
    return qb;
}

// The names of `qb`'s calls of `names`, in order.
std::vector<std::string> calls_named(const fakes::FakeQb& qb, const std::set<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& c : qb.calls)
        if (names.contains(c.name)) out.push_back(c.name);
    return out;
}

}  // namespace

TEST_CASE("verify recheck: a check still running when the recheck is asked for is stopped first (a recheck during a check sticks at 0%)") {
    // A run stopped right after it asked for the recheck leaves qBittorrent checking; the rerun's
    // recheck must not land on that check.
    fakes::FakeQb qb = stall_qb("checkingDL", 0.3);
    qb.script_recheck(k_stall_id, {{"checkingDL", 0.2}, {"checkingDL", 0.7}, {"pausedUP", 1.0}});
    fakes::ManualClock clock;
    auto files = recheck_and_wait(clock, qb, k_stall_id);
    REQUIRE_MESSAGE(files.ok(), files.error().message);
    CHECK(calls_named(qb, {"stop", "recheck"}) == std::vector<std::string>{"stop", "recheck"});
}

TEST_CASE("verify recheck: a stalled check is stopped and asked for again; the second one verifies") {
    fakes::FakeQb qb = stall_qb();
    qb.script_rechecks(k_stall_id, {{{"checkingDL", 0}}, {{"checkingDL", 0.4}, {"pausedUP", 1.0}}});
    fakes::ManualClock clock;
    auto begun = clock.steady();
    auto files = recheck_and_wait(clock, qb, k_stall_id);
    REQUIRE_MESSAGE(files.ok(), files.error().message);
    CHECK(calls_named(qb, {"stop", "recheck"}) == std::vector<std::string>{"recheck", "stop", "recheck"});
    // Stopped after the stall limit of a 1 GiB torrent, not after 30 minutes.
    CHECK(clock.steady() - begun >= recheck_stall_limit(std::int64_t{1} << 30));
    CHECK(clock.steady() - begun < 2 * recheck_stall_limit(std::int64_t{1} << 30));
    MESSAGE("reads of the torrent in ", std::chrono::duration_cast<std::chrono::seconds>(clock.steady() - begun).count(), " s: ", qb.count("torrents"));
}

TEST_CASE("verify recheck: a check queued behind another torrent's moving check is waited for, not redone") {
    fakes::FakeQb qb = stall_qb();
    // The other torrent's check moves at each look (qBittorrent checks one torrent at a time; the
    // one waiting shows checking at 0%).
    clients::qbittorrent::TorrentInfo other;
    other.id = "0the40000000000000000000000000000000000";
    other.state = "pausedUP";
    other.progress = 1;
    qb.put(other);
    std::vector<fakes::QbState> moving;
    for (int i = 1; i <= 40; ++i) moving.push_back({"checkingUP", i / 41.0});
    moving.push_back({"pausedUP", 1.0});
    qb.script_recheck(other.id, moving);
    REQUIRE(qb.recheck({other.id}).ok());
    std::vector<fakes::QbState> ours(400, {"checkingDL", 0});
    ours.push_back({"checkingDL", 0.5});
    ours.push_back({"pausedUP", 1.0});
    qb.script_recheck(k_stall_id, ours);
    fakes::ManualClock clock;
    auto begun = clock.steady();
    auto files = recheck_and_wait(clock, qb, k_stall_id);
    REQUIRE_MESSAGE(files.ok(), files.error().message);
    CHECK(qb.count("recheck") == 2);  // the other's, and ours once
    CHECK(qb.count("stop") == 0);
    CHECK(clock.steady() - begun > 2 * recheck_stall_limit(std::int64_t{1} << 30));
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(clock.steady() - begun).count();
    MESSAGE("queued for ", waited, " s: ", qb.count("torrents"), " reads of the torrent, ", qb.count("all_torrents"), " of the list");
    // A long wait reads the torrent less than once a second on average (not 5 times).
    CHECK(qb.count("torrents") < static_cast<std::size_t>(waited));
}

TEST_CASE("verify recheck: a check stalled twice is an error naming the torrent and what to do") {
    fakes::FakeQb qb = stall_qb();
    qb.script_recheck(k_stall_id, {{"checkingDL", 0}});
    fakes::ManualClock clock;
    auto files = recheck_and_wait(clock, qb, k_stall_id);
    REQUIRE_FALSE(files.ok());
    CHECK(is_recheck_stall(files.error()));
    CHECK(contains(files.error().message, "'5a11ed000000'"));
    CHECK(contains(files.error().message, "made no progress"));
    CHECK(contains(files.error().hint, "archctl resume"));
    CHECK(qb.count("recheck") == 2);
    CHECK_FALSE(is_recheck_stall(Error(ErrorCode::QB_TIMEOUT, "the recheck of 'x' did not finish")));
}

TEST_CASE("verify recheck: the stall limit grows with the torrent's size; polls back off to one every 2 s") {
    CHECK(recheck_stall_limit(0) == std::chrono::seconds(30));
    CHECK(recheck_stall_limit(std::int64_t{1} << 30) == std::chrono::seconds(40));
    CHECK(recheck_stall_limit(std::int64_t{1} << 40) == std::chrono::minutes(10));
    CHECK(recheck_poll_interval(std::chrono::milliseconds(0)) == std::chrono::milliseconds(50));
    CHECK(recheck_poll_interval(std::chrono::seconds(3)) == std::chrono::milliseconds(200));
    CHECK(recheck_poll_interval(std::chrono::seconds(10)) == std::chrono::milliseconds(500));
    CHECK(recheck_poll_interval(std::chrono::seconds(30)) == std::chrono::seconds(1));
    CHECK(recheck_poll_interval(std::chrono::minutes(5)) == std::chrono::seconds(2));
}

TEST_CASE("steps: a verify recheck that stalls twice stops the run 'waiting' naming the target; the resume verifies") {
    TransferFixture f;
    f.recheck = {{"checkingDL", 0}};
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::stopped, r.error.code, ": ", r.error.message);
    CHECK(r.stop_reason == StopReason::waiting);  // exit 10 at the command
    CHECK(r.step == "verify");
    CHECK(contains(r.stop_text, "on 'nas'"));
    CHECK(contains(r.stop_text, f.qb_id.substr(0, 12)));
    CHECK(contains(r.stop_text, "archctl resume"));
    CHECK(f.nas.qb.count("recheck") == 2);
    // Nothing undone: the job waits to be resumed.
    CHECK(f.nas.qb.count("remove") == 0);
    CHECK(f.nas.ops.count("unmerge") == 0);
    CHECK(f.ledger()["committed"] == false);
    // Polled with back-off, not 5 times a second.
    MESSAGE("reads of the target torrent over ", std::chrono::duration_cast<std::chrono::seconds>(f.clock.slept).count(), " s: ",
            f.nas.qb.count("torrents"));

    // qBittorrent checks again: the resume stops the stuck check, rechecks and commits.
    f.nas.qb.script_recheck(f.qb_id, {{"checkingUP", 0.5}, {"pausedUP", 1.0}});
    RunResult again = f.run();
    REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.code, ": ", again.error.message);
    CHECK(f.ledger()["committed"] == true);
    CHECK(f.nas.qb.count("recheck") == 3);
}

TEST_CASE("steps: --max-bytes stops cleanly at the step it reached; a rerun continues from there") {
    SUBCASE("the budget runs out inside stage") {
        TransferFixture f;
        Budgets budgets;
        budgets.max_bytes = 20;
        RunResult r = f.run(budgets);
        // `stopped` is exit 10 at the command (cli/transfer_common.cpp).
        REQUIRE(r.outcome == RunOutcome::stopped);
        CHECK(r.stop_reason == StopReason::budget);
        CHECK(contains(r.stop_text, "budget reached"));
        CHECK(r.step == "stage");
        REQUIRE(f.seedbox.ops.count("stage") == 1);
        CHECK(f.seedbox.ops.args_of("stage")[0]["budget_bytes"] == 20);
        CHECK(f.nas.ops.count("receive_check") == 0);
        json l = f.ledger();
        CHECK(l["state"] == "running");
        CHECK(l["step"] == "stage");
        CHECK(l["staged"] == false);
        REQUIRE(l["sessions"].size() == 1);
        CHECK(l["sessions"][0]["end_reason"] == "budget");
        CHECK(l["sessions"][0]["bytes_copied"] == 20);
        auto stopped = f.events_of("stopped");
        REQUIRE(stopped.size() == 1);
        CHECK(stopped[0]["reason"] == "budget");
        CHECK(stopped[0]["step"] == "stage");
        CHECK(f.holder(f.aliases[0]) == f.job_id);  // still the job's

        RunResult again = f.run();
        REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.message);
        REQUIRE(f.seedbox.ops.count("stage") == 2);
        CHECK_FALSE(f.seedbox.ops.args_of("stage")[1].contains("budget_bytes"));
        l = f.ledger();
        CHECK(l["state"] == "done");
        REQUIRE(l["sessions"].size() == 2);
        CHECK(l["sessions"][1]["end_reason"] == "complete");
    }
    SUBCASE("the budget is reached by a complete stage: the job stops before sync") {
        TransferFixture f;
        Budgets budgets;
        budgets.max_bytes = 30;
        RunResult r = f.run(budgets);
        REQUIRE(r.outcome == RunOutcome::stopped);
        CHECK(r.stop_reason == StopReason::budget);
        CHECK(r.step == "sync");
        json l = f.ledger();
        CHECK(l["step"] == "sync");
        CHECK(l["staged"] == true);
        CHECK(l["sessions"][0]["end_reason"] == "budget");
        CHECK(f.seedbox.st.count("scan") == 0);
        CHECK(f.nas.ops.count("receive_check") == 0);

        // The budget is per run: the rerun continues at sync, whose 30 bytes reach it again.
        RunResult again = f.run(budgets);
        REQUIRE(again.outcome == RunOutcome::stopped);
        CHECK(again.stop_reason == StopReason::budget);
        CHECK(again.step == "merge");
        CHECK(f.seedbox.ops.count("stage") == 1);  // not staged again
        // One look: the job was staged by the run before, so the index is read first and the
        // walk that counts what the target holds before the budget's hold is set confirms it.
        CHECK(f.nas.ops.count("receive_check") == 1);
        CHECK(f.seedbox.st.count("scan") == 0);  // nothing waits: the source is not asked to scan
        CHECK(f.nas.ops.count("merge") == 0);
        l = f.ledger();
        CHECK(l["step"] == "merge");
        CHECK(l["synced"] == true);
        REQUIRE(l["sessions"].size() == 2);
        CHECK(l["sessions"][1]["bytes_copied"] == 0);
        CHECK(l["sessions"][1]["bytes_synced"] == 30);

        RunResult last = f.run(budgets);
        REQUIRE_MESSAGE(last.outcome == RunOutcome::done, last.error.message);
        CHECK(f.seedbox.ops.count("stage") == 1);
        CHECK(f.nas.ops.count("receive_check") == 1);
        CHECK(f.nas.ops.count("merge") == 1);
        CHECK(f.ledger()["state"] == "done");
    }
}

TEST_CASE("steps: a merge stopped at the free-space floor is a clean 'disk' stop; a rerun with room merges") {
    TransferFixture f;
    auto complete = f.nas.ops.handlers["merge"];
    // The target's filesystem is short of room: the node stops before the floor.
    f.nas.ops.handlers["merge"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::MergeRequest>();
        node::MergeResult r;
        r.stopped = node::Stop::disk;
        r.record_path = request.save_path + "/.archctl-merge.json";
        r.free_bytes = 3u << 20;
        r.need_bytes = 6u << 20;
        r.stopped_at = request.save_path + "/" + request.files[0].path;
        return json(r);
    };
    Budgets budgets;
    budgets.min_free = 8u << 20;
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::disk);
    CHECK(contains(r.stop_text, "free-space floor on 'nas': 3.0 MiB free, 6.0 MiB still to copy"));
    CHECK(contains(r.stop_text, "floor 8.0 MiB"));
    CHECK(r.step == "merge");
    REQUIRE(f.nas.ops.count("merge") == 1);
    CHECK(f.nas.ops.args_of("merge")[0]["min_free"] == 8u << 20);
    json l = f.ledger();
    CHECK(l["state"] == "running");
    CHECK(l["merged"] == false);
    CHECK(l["sessions"][0]["end_reason"] == "disk");
    CHECK(f.nas.qb.count("add") == 0);

    f.nas.ops.handlers["merge"] = complete;
    RunResult again = f.run(budgets);
    REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.message);
    CHECK(f.nas.ops.count("merge") == 2);
    CHECK(f.nas.ops.count("receive_check") == 2);  // not synced again
}

TEST_CASE("steps: a lost ledger after merge began is rebuilt at merge from the target's merge record") {
    TransferFixture f;
    Budgets budgets;
    budgets.max_bytes = 30;
    REQUIRE(f.run(budgets).outcome == RunOutcome::stopped);  // staged: stops before sync
    REQUIRE(f.run(budgets).step == "merge");                  // synced: stops before merge
    std::filesystem::remove(f.job_dir() + "/ledger.json");
    // The target's record says merge began (placed files have left the route folder): the
    // job must not wait for them to arrive again.
    f.nas.ops.handlers["merge_record"] = [](const json& args) -> Result<json> {
        auto request = args.get<node::MergeRecordRequest>();
        return json(node::MergeRecordResult{node::MergeRecord::present, request.save_path + "/.archctl-merge.json", {0, 1}, {0}});
    };
    f.nas.ops.handlers["receive_check"] = [](const json&) -> Result<json> {
        return Error("TEST", "sync ran again after the merge began");
    };
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
    CHECK(contains(f.log_text(), "rebuilding it from evidence"));
    auto rebuilt = f.events_of("ledger_rebuilt");
    REQUIRE(rebuilt.size() == 1);
    CHECK(rebuilt[0]["step"] == "merge");
    CHECK(rebuilt[0]["merge_record"] == "present");
    CHECK(rebuilt[0]["placed"] == 1);
    CHECK(f.nas.ops.count("merge") == 1);
    CHECK(f.ledger()["state"] == "done");
}

TEST_CASE("steps: a ledger whose step archctl does not know is rebuilt from evidence, never taken as done") {
    TransferFixture f;
    Budgets budgets;
    budgets.max_bytes = 30;
    REQUIRE(f.run(budgets).outcome == RunOutcome::stopped);  // staged: stops before sync
    json stored = f.ledger();
    REQUIRE(stored["step"] == "sync");
    stored["step"] = "syncing";  // a name no step has (a hand edit, or a newer archctl's step)
    std::ofstream(f.job_dir() + "/ledger.json") << stored.dump();
    f.nas.ops.handlers["merge_record"] = [](const json&) -> Result<json> { return json(node::MergeRecordResult{}); };
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
    CHECK(contains(f.log_text(), "is unreadable; rebuilding it from evidence"));
    REQUIRE(f.events_of("ledger_rebuilt").size() == 1);
    CHECK(f.nas.ops.count("merge") == 1);  // the steps after the rebuilt one ran
    CHECK(f.nas.qb.count("add") == 1);
    CHECK(f.ledger()["state"] == "done");
}

TEST_CASE("steps: --max-minutes stops cleanly once the manual clock passes the deadline") {
    TransferFixture f;
    JobFixture::before(f.seedbox.ops, "stage", [&f] { f.clock.advance(std::chrono::seconds(61)); });
    Budgets budgets;
    budgets.max_duration = std::chrono::seconds(60);
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::deadline);
    CHECK(contains(r.stop_text, "deadline reached"));
    CHECK(r.step == "sync");
    json l = f.ledger();
    CHECK(l["state"] == "running");
    CHECK(l["step"] == "sync");
    CHECK(l["staged"] == true);
    CHECK(l["sessions"][0]["end_reason"] == "deadline");
    CHECK(f.seedbox.st.count("scan") == 0);
    CHECK(f.nas.ops.count("receive_check") == 0);
    CHECK(f.clock.sleeps == 0);
    CHECK(f.events_of("stopped").at(0)["reason"] == "deadline");
}

TEST_CASE("steps: Ctrl-C during stage stops cleanly before sync (in a child process: the stop flag is process-wide)") {
    // request_stop() cannot be undone in this process, so the run that sees it is a forked child;
    // the parent reads what it reported and the state directory it left.
    TransferFixture f;
    // A real SIGINT, as a Ctrl-C delivers it (the handlers are installed in the child alone).
    JobFixture::before(f.seedbox.ops, "stage", [] {
        install_interrupt_handlers();
        std::raise(SIGINT);
    });
    json out = test::in_child([&] {
        RunResult r = f.run();
        return json{{"result", r.to_json()},
                    {"stop_reason", to_string(r.stop_reason)},
                    {"stop_text", r.stop_text},
                    {"stages", f.seedbox.ops.count("stage")},
                    {"scans", f.seedbox.st.count("scan")},
                    {"receive_checks", f.nas.ops.count("receive_check")}};
    });
    CHECK_FALSE(stop_requested());  // this process never saw it
    CHECK(out["result"]["outcome"] == "stopped");
    CHECK(out["stop_reason"] == "interrupt");
    CHECK(out["stop_text"] == "interrupted (Ctrl-C)");
    CHECK(out["result"]["step"] == "sync");
    CHECK(out["stages"] == 1);
    CHECK(out["scans"] == 0);
    CHECK(out["receive_checks"] == 0);
    json l = f.ledger();
    CHECK(l["state"] == "running");
    CHECK(l["step"] == "sync");
    CHECK(l["staged"] == true);
    CHECK(l["sessions"][0]["end_reason"] == "interrupt");
    CHECK(f.events_of("stopped").at(0)["reason"] == "interrupt");

    // The rerun (no stop requested here) continues from sync.
    RunResult again = f.run();
    REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.message);
    CHECK(f.seedbox.ops.count("stage") == 0);  // this process's fake: the child staged
    CHECK(f.nas.ops.count("receive_check") == 1);  // staged by the run before: index first, one walk
}

TEST_CASE("steps: the evict job runs hold → remove → unlink → partfile → release to done against the fakes") {
    EvictFixture e;
    RunResult r = e.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.code, ": ", r.error.message, "\n", e.log_text());
    CHECK(r.detail["files_removed"] == 2);
    CHECK(r.detail["bytes_freed"] == 30);
    CHECK(r.detail["partfile"] == "absent");
    REQUIRE(e.seedbox.qb.count("remove") == 1);
    CHECK(e.seedbox.qb.args_of("remove")[0] == removed_without_data(e.qb_id));
    REQUIRE(e.seedbox.ops.count("unlink_owned") == 1);
    CHECK(e.unlinked == std::set<std::string>{"/srv/cache/t/show/a.bin", "/srv/cache/t/show/b.bin"});
    CHECK(e.nas.qb.count("add_tags") == 1);
    CHECK(e.nas.qb.count("remove_tags") == 1);
    CHECK(e.nas.qb.count("remove") == 0);  // the archive placement is never touched
    CHECK(e.events_of("revalidated").size() == 2);  // before the removal and before the unlink
    CHECK(e.ledger()["state"] == "done");
    CHECK(e.holder(e.aliases[0]).empty());
}

TEST_CASE("steps: evict proof drift at the remove step fails PROOF_DRIFT and deletes nothing") {
    struct Row {
        const char* name;
        std::function<void(EvictFixture&)> arrange;
        const char* says;
    };
    const Row rows[] = {
        {"the archive torrent is gone", [](EvictFixture& e) { e.nas.qb.torrent_list.clear(); }, "'nas' no longer has the archive placement"},
        {"an archive file's stamp changed", [](EvictFixture& e) { e.archive_disk["show/b.bin"].mtime_ns = 8; },
         "file 1 'show/b.bin' on 'nas'"},
        {"an archive file was replaced", [](EvictFixture& e) { e.archive_disk["show/a.bin"].ino = 999; }, "file 0 'show/a.bin' on 'nas'"},
    };
    for (const auto& row : rows) {
        CAPTURE(row.name);
        EvictFixture e;
        row.arrange(e);
        RunResult r = e.run();
        REQUIRE(r.outcome == RunOutcome::failed);
        CHECK(r.error.code == "PROOF_DRIFT");
        CHECK(contains(r.error.message, "no longer holds"));
        CHECK(contains(r.error.message, row.says));
        CHECK(contains(r.error.hint, "nothing was deleted"));
        // Nothing deleted: the cache torrent stays in qBittorrent, no unlink was asked for.
        CHECK(e.seedbox.qb.count("remove") == 0);
        CHECK(e.seedbox.qb.find(e.qb_id) != nullptr);
        CHECK(e.seedbox.ops.count("unlink_owned") == 0);
        CHECK(e.unlinked.empty());
        json l = e.ledger();
        CHECK(l["state"] == "failed");
        CHECK(l["step"] == "remove");
        CHECK(l["removed"] == false);
        CHECK(l["files_removed"] == 0);
        CHECK(l["failure"]["code"] == "PROOF_DRIFT");
        // The holds are dropped and the resource given back.
        CHECK(e.nas.qb.count("remove_tags") == 1);
        CHECK(e.holder(e.aliases[0]).empty());
    }
}

TEST_CASE("steps: evict proof drift between two unlink batches is CLEANUP_REQUIRED listing what is gone") {
    EvictFixture e;
    e.test.unlink_batch = 1;
    // The archive copy of b.bin is replaced right after the first batch unlinked a.bin.
    auto inner = e.seedbox.ops.handlers["unlink_owned"];
    e.seedbox.ops.handlers["unlink_owned"] = [&e, inner](const json& args) -> Result<json> {
        auto answer = inner(args);
        e.archive_disk["show/b.bin"].ino = 999;
        return answer;
    };
    RunResult r = e.run();
    REQUIRE(r.outcome == RunOutcome::failed);
    CHECK(r.error.code == "CLEANUP_REQUIRED");
    CHECK(contains(r.error.message, "removed the cache torrent, but finishing the eviction failed"));
    CHECK(contains(r.error.message, "no longer holds"));
    CHECK(contains(r.error.message, "show/b.bin"));
    CHECK(contains(r.error.message, "1 of its 2 file(s) are no longer on the cache's disk"));
    CHECK(contains(r.error.hint, "--verify-archive"));
    // One batch ran (a.bin); the second was refused before its unlink.
    REQUIRE(e.seedbox.ops.count("unlink_owned") == 1);
    CHECK(e.seedbox.ops.args_of("unlink_owned")[0]["paths"].size() == 1);
    CHECK(e.unlinked == std::set<std::string>{"/srv/cache/t/show/a.bin"});
    CHECK(e.seedbox.qb.count("remove") == 1);
    json l = e.ledger();
    CHECK(l["state"] == "cleanup_required");
    CHECK(l["step"] == "unlink");
    CHECK(l["removed"] == true);
    CHECK(l["files_removed"] == 1);
    CHECK(l["failure"]["code"] == "PROOF_DRIFT");
    CHECK(l["failure"]["gone"] == json::array({"/srv/cache/t/show/a.bin"}));
    auto failed = e.events_of("failed");
    REQUIRE(failed.size() == 1);
    CHECK(failed[0]["gone"] == json::array({"/srv/cache/t/show/a.bin"}));
    // The job still holds the resource until it is finished.
    CHECK(e.holder(e.aliases[0]) == e.job_id);
}

TEST_CASE("steps: compensation after merge keeps a merged file another torrent on the target references") {
    TransferFixture f;
    // Another torrent on nas uses show/a.bin in the same save path.
    clients::qbittorrent::TorrentInfo other;
    other.id = "cccccccccccccccccccccccccccccccccccccccc";
    other.name = "other";
    other.save_path = "/tank/t";
    other.state = "stalledUP";
    other.progress = 1;
    clients::qbittorrent::TorrentFile shared;
    shared.index = 0;
    shared.name = "show/a.bin";
    shared.size = 10;
    shared.progress = 1;
    shared.priority = 1;
    f.nas.qb.put(other, {shared});
    // A failure after merge: the recheck does not verify b.bin.
    f.rechecked_files[1].progress = 0.5;
    f.recheck = {{"checkingUP", 0.4}, {"pausedDL", 0.83}};
    RunResult r = f.run();
    check_compensated(f, r, "VERIFY_FAILED", "verify");
    // Unmerge was told, from a snapshot read right before it, that a.bin is referenced.
    REQUIRE(f.unmerge_referenced().size() == 1);
    CHECK(f.unmerge_referenced()[0] == std::vector<std::string>{k_a});
    auto unmerged = f.events_of("unmerged");
    REQUIRE(unmerged.size() == 1);
    CHECK(unmerged[0]["removed"] == json::array({k_b}));
    CHECK(unmerged[0]["kept"].size() == 1);
    CHECK(unmerged[0]["kept"][0]["path"] == k_a);
    json kept = f.ledger()["kept"];
    REQUIRE(kept.size() == 1);
    CHECK(kept[0] == json{{"node", "nas"}, {"path", k_a}, {"reason", "referenced by another torrent"}, {"code", "referenced"},
                          {"step", "unmerge"}});
    CHECK(contains(f.log_text(), "compensation kept 1 file used by another torrent"));
    // Only this job's torrent was removed; the other one stays.
    REQUIRE(f.nas.qb.count("remove") == 1);
    CHECK(f.nas.qb.args_of("remove")[0] == removed_without_data(f.qb_id));
    CHECK(f.nas.qb.find(other.id) != nullptr);
}

TEST_CASE("steps: a ledger that cannot be written stops the run with an error naming it") {
    // The state directory is writable (tests may run as root, who ignores permissions), so the
    // write is made to fail another way: a directory where ledger.json goes, created while stage
    // runs, so the ledger write at the end of stage cannot rename into place.
    TransferFixture f;
    JobFixture::before(f.seedbox.ops, "stage", [&f] { std::filesystem::create_directories(f.job_dir() + "/ledger.json/x"); });
    RunResult r = f.run();
    REQUIRE(r.outcome == RunOutcome::failed);
    CHECK(r.error.code == "IO");
    CHECK(contains(r.error.message, "ledger.json"));
    CHECK(contains(r.error.message, "cannot rename into place"));
    // No step after it ran; compensation did (its own ledger write failing too, said on the log).
    CHECK(f.seedbox.ops.count("stage") == 1);
    CHECK(f.nas.ops.count("receive_check") == 0);  // the sync step never ran
    CHECK(has(f.event_types(), "compensating"));
    auto failed = f.events_of("failed");
    REQUIRE(failed.size() == 1);
    CHECK(failed[0]["code"] == "IO");
    CHECK(f.seedbox.ops.count("cleanup") == 1);
    CHECK(contains(f.log_text(), "was not recorded"));
    CHECK(f.holder(f.aliases[0]).empty());
}

TEST_CASE("steps: an unreachable service during a step is waited out; the step is retried from the stored ledger") {
    TransferFixture f;
    // Syncthing on the target refuses twice while the job waits for its files, qBittorrent once
    // during the recheck.
    f.nas.st.fail_next("file", Error("HTTP_UNREACHABLE", "cannot reach Syncthing on 'nas': connection refused"));
    f.before(f.nas.ops, "merge", [&] { f.nas.qb.fail_next("recheck", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'nas'")); });
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.code, ": ", r.error.message, "\n", f.log_text());
    CHECK(f.ledger()["state"] == "done");
    CHECK(contains(f.log_text(), "waiting: cannot reach Syncthing on 'nas'"));
    CHECK(contains(f.log_text(), "reachable again"));
    // The recheck was asked for again after the outage, and verified.
    CHECK(f.nas.qb.count("recheck") == 2);
    CHECK(f.committed_generation() == 1);
    CHECK_FALSE(has(f.event_types(), "compensating"));
}

TEST_CASE("steps: an outage longer than the wait stops the run with reason 'waiting'; the job stays unfinished and a rerun finishes it") {
    TransferFixture f;
    f.before(f.nas.ops, "merge", [&] { f.nas.qb.fail_always("add", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'nas'")); });
    Budgets b;
    b.outage_wait = std::chrono::seconds(20);
    auto started = f.clock.steady();
    RunResult r = f.run(b);
    REQUIRE_MESSAGE(r.outcome == RunOutcome::stopped, r.error.code, ": ", r.error.message);
    CHECK(r.stop_reason == StopReason::waiting);
    CHECK(contains(r.stop_text, "still unreachable after"));
    CHECK(f.clock.steady() - started >= std::chrono::seconds(20));
    CHECK(f.clock.steady() - started < std::chrono::seconds(40));
    json l = f.ledger();
    CHECK(l["state"] == "running");
    CHECK(l["step"] == "verify");
    CHECK(l["sessions"].back()["end_reason"] == "waiting");
    CHECK_FALSE(has(f.event_types(), "failed"));
    f.nas.qb.heal("add");
    RunResult again = f.run(b);
    REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.code, ": ", again.error.message, "\n", f.log_text());
}

TEST_CASE("steps: a failure whose compensation meets an outage leaves the job compensating; a rerun finishes it as failed") {
    TransferFixture f;
    JobFixture::before(f.nas.ops, "merge", [&f] { f.source_files()[0].priority = 0; });
    f.nas.ops.fail_always("unmerge", Error("NODE_UNREACHABLE", "node 'nas' closed the connection during 'unmerge'"));
    Budgets b;
    b.outage_wait = std::chrono::seconds(5);
    RunResult r = f.run(b);
    REQUIRE(r.outcome == RunOutcome::failed);
    CHECK(r.error.code == "STALE_STATE");
    CHECK(contains(r.error.hint, "'archctl resume " + f.job_id + "' finishes it"));
    json l = f.ledger();
    CHECK(l["state"] == "compensating");
    CHECK(l["compensation_ends"] == "failed");
    CHECK(contains(l["failure"]["compensation"].get<std::string>(), "closed the connection"));
    // Still holding the resource: nothing else may start on it while undoing is unfinished.
    CHECK(f.holder(f.aliases[0]) == f.job_id);
    CHECK(f.nas.ops.count("unmerge") > 1);  // retried while the outage window lasted
    auto unfinished = Driver(f.config, f.state, f.nodes, {}).unfinished();
    REQUIRE(unfinished.ok());
    CHECK(unfinished.value() == std::vector<std::string>{f.job_id});

    // Still down at the next run: a clean stop with the job still compensating.
    RunResult waiting = f.run(b);
    CHECK(waiting.outcome == RunOutcome::stopped);
    CHECK(waiting.stop_reason == StopReason::waiting);
    CHECK(f.ledger()["state"] == "compensating");

    f.nas.ops.heal("unmerge");
    RunResult finished = f.run(b);
    REQUIRE_MESSAGE(finished.outcome == RunOutcome::done, finished.error.code, ": ", finished.error.message);
    CHECK(finished.compensated);
    CHECK(finished.ended == "failed");
    CHECK(f.ledger()["state"] == "failed");
    CHECK(f.ledger()["failure"]["code"] == "STALE_STATE");
    CHECK(has(f.event_types(), "compensated"));
    CHECK(f.holder(f.aliases[0]).empty());
}

namespace {

// nas's receive check: the job's files never arrive (Syncthing does not deliver).
void never_arrives(TransferFixture& f) {
    f.nas.ops.handlers["receive_check"] = [](const json&) -> Result<json> {
        node::ReceiveCheckResult r;
        r.job_exists = true;
        return json(r);
    };
}

// The route folder as nas's Syncthing has it configured.
clients::syncthing::Folder route_folder(const TransferFixture& f) {
    clients::syncthing::Folder folder;
    folder.id = f.def.route.id;
    folder.path = f.def.route.target_path;
    folder.devices = {f.seedbox.st.system.my_id, f.nas.st.system.my_id};
    folder.ignore_perms = true;  // the valve archctl provisions (lib/routes/valve.hpp)
    return folder;
}

}  // namespace

TEST_CASE("steps: a stop holds the rest of the job on the target's Syncthing; the next run lifts it") {
    TransferFixture f;
    f.nas.st.folder_map[f.def.route.id] = route_folder(f);
    f.nas.st.ignore_lines[f.def.route.id] = {"*.partial", "!keep"};
    Budgets budgets;
    budgets.max_bytes = 20;
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::budget);
    // The job's directory is ignored above the user's own lines, and the folder was restarted
    // (paused and resumed) so that a pull already running stops.
    auto lines = f.nas.st.ignore_lines[f.def.route.id];
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].rfind("// archctl hold " + f.job_id + ": budget", 0) == 0);
    CHECK(lines[1] == "/" + f.job_id);
    CHECK(lines[2] == "*.partial");
    CHECK(lines[3] == "!keep");
    CHECK(holds_transfer(lines, f.job_id));
    auto patches = f.nas.st.args_of("patch_folder");
    REQUIRE(patches.size() == 2);
    CHECK(patches[0]["changes"] == json{{"paused", true}});
    CHECK(patches[1]["changes"] == json{{"paused", false}});
    CHECK_FALSE(f.nas.st.folder_map[f.def.route.id].paused);
    REQUIRE(f.events_of("transfer_held").size() == 1);
    CHECK(f.events_of("transfer_held")[0]["reason"] == "budget");

    RunResult again = f.run();
    REQUIRE_MESSAGE(again.outcome == RunOutcome::done, again.error.message, "\n", f.log_text());
    CHECK(f.nas.st.ignore_lines[f.def.route.id] == std::vector<std::string>{"*.partial", "!keep"});
    CHECK(f.events_of("transfer_released").size() == 1);
    CHECK(f.nas.st.count("patch_folder") == 2);  // the release needs no restart
}

TEST_CASE("steps: a hold is not written twice, and a folder the user paused is left paused") {
    TransferFixture f;
    auto folder = route_folder(f);
    folder.paused = true;
    f.nas.st.folder_map[f.def.route.id] = folder;
    Budgets budgets;
    budgets.max_bytes = 20;
    REQUIRE(f.run(budgets).outcome == RunOutcome::stopped);
    CHECK(f.nas.st.count("patch_folder") == 0);
    CHECK(f.nas.st.folder_map[f.def.route.id].paused);
    CHECK(f.nas.st.ignore_lines[f.def.route.id].size() == 2);
}

TEST_CASE("steps: --no-wait ends waiting without a hold: Syncthing carries the job between runs") {
    TransferFixture f;
    never_arrives(f);
    f.nas.st.folder_map[f.def.route.id] = route_folder(f);
    Budgets budgets;
    budgets.no_wait = true;
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::waiting);
    CHECK(contains(r.stop_text, "--no-wait"));
    CHECK(f.nas.st.count("set_ignores") == 0);
    CHECK(f.nas.st.count("patch_folder") == 0);
}

TEST_CASE("steps: a hold that cannot be written is a warning; the stop stays a stop") {
    TransferFixture f;
    f.nas.st.fail_always("ignores", Error(ErrorCode::HTTP_UNREACHABLE, "cannot reach Syncthing on 'nas'"));
    Budgets budgets;
    budgets.max_bytes = 20;
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::budget);
    CHECK(contains(f.log_text(), "cannot hold the transfer of job " + f.job_id + " on 'nas'"));
    CHECK(f.events_of("transfer_held").empty());
}

TEST_CASE("steps: sync says why nothing moves and stops with 'waiting' once a known cause held for the stall limit") {
    TransferFixture f;
    never_arrives(f);
    auto folder = route_folder(f);
    folder.paused = true;
    f.nas.st.folder_map[f.def.route.id] = folder;
    RunResult r = f.run();
    REQUIRE_MESSAGE(r.outcome == RunOutcome::stopped, r.error.message);
    CHECK(r.stop_reason == StopReason::waiting);
    CHECK(r.step == "sync");
    CHECK(contains(r.stop_text, "waiting for Syncthing on 'nas': folder paused"));
    CHECK(contains(r.stop_text, "nothing moved for 30s"));
    // Said once on the log when it began, not at every probe.
    auto text = f.log_text();
    auto first = text.find("waiting for Syncthing on 'nas': folder paused");
    REQUIRE(first != std::string::npos);
    CHECK(text.find("waiting for Syncthing on 'nas': folder paused", first + 1) == std::string::npos);
    CHECK(f.ledger()["state"] == "running");
    CHECK(f.ledger()["sessions"][0]["end_reason"] == "waiting");
    // The run that waits also holds (a paused folder the user chose is left as it is).
    CHECK(holds_transfer(f.nas.st.ignore_lines[f.def.route.id], f.job_id));
}

TEST_CASE("steps: sync without a known cause waits on (no 'waiting' stop), bounded by the budgets") {
    TransferFixture f;
    never_arrives(f);
    f.nas.st.folder_map[f.def.route.id] = route_folder(f);
    Budgets budgets;
    budgets.max_duration = std::chrono::seconds(90);
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::deadline);
}

namespace {

// A job of `files` small payload files whose target receives them over time: `rate` files per
// second of the fixture's clock under their final names (the manifest, READY and the torrent
// first), each committed to the target's index `commit_lag` later. nas's receive_check and its
// Syncthing's index answer from that timeline.
struct ArrivingJob {
    ArrivingJob(TransferFixture& fx, std::uint32_t files, int rate, std::chrono::milliseconds commit_lag)
        : f(fx), def(fx.def), start(fx.clock.steady()), per_second(rate), lag(commit_lag) {
        def.files.clear();
        for (std::uint32_t i = 0; i < files; ++i) def.files.push_back({i, "show/" + std::to_string(i) + ".bin", 100});
        def.delta_bytes = 100 * files;
        def.file_count = files;
        names = {node::k_manifest_name, node::k_ready_name, node::aux_path(node::k_torrent_aux)};
        for (const auto& file : def.files) names.push_back(node::payload_name(file.index, def.payload_layout));
        for (const auto& n : names) {
            clients::syncthing::FileRecord rec;
            rec.global.name = rec.local.name = def.id + "/" + n;
            rec.global.version = {"SEEDBOX:1"};  // the source's index is there; the target has nothing yet
            f.nas.st.file_records[{def.route.id, rec.global.name}] = rec;
        }
        f.nas.ops.handlers["receive_check"] = [this](const json& args) { return check(args.get<node::ReceiveCheckRequest>()); };
    }

    // How many of `names` (in order) are on the target `delay` after their arrival.
    std::size_t arrived(std::chrono::milliseconds delay) const {
        auto since = std::chrono::duration_cast<std::chrono::milliseconds>(f.clock.steady() - start) - delay;
        if (since.count() < 0) return 0;
        return std::min(names.size(), static_cast<std::size_t>(3 + since.count() * per_second / 1000));
    }

    // The target's index commits what arrived `lag` ago.
    void commit() {
        for (std::size_t k = 0; k < arrived(lag); ++k)
            f.nas.st.file_records[{def.route.id, def.id + "/" + names[k]}].local.version = {"SEEDBOX:1"};
    }

    Result<json> check(const node::ReceiveCheckRequest& request) {
        ++walks;
        const std::size_t there = arrived(std::chrono::milliseconds(0));
        commit();
        std::set<std::string> indexed;
        if (request.indexed) indexed.insert(request.indexed->begin(), request.indexed->end());
        node::ReceiveCheckResult r;
        r.job_exists = r.manifest = true;
        r.index_evidence = request.indexed.has_value() || request.indexed_all;
        r.complete = true;
        for (std::size_t k = 0; k < names.size(); ++k) {
            node::ReceivedFile file{names[k], node::Arrival::absent, 0, std::nullopt, std::nullopt, ""};
            if (k >= 3) {
                file.index = static_cast<std::uint32_t>(k - 3);
                file.size = 100;
            }
            if (k < there) {
                file.have_bytes = file.size.value_or(0);
                const bool listed = request.indexed_all || !request.indexed || indexed.count(names[k]);
                file.state = listed ? node::Arrival::present : node::Arrival::in_transit;
                if (!listed) file.detail = "not yet in the target index";
            }
            r.complete = r.complete && file.state == node::Arrival::present;
            if (file.index) {
                r.bytes_present += file.have_bytes;
                r.bytes_total += 100;
                ++r.files_total;
                r.files_present += file.state == node::Arrival::present ? 1u : 0u;
            }
            const bool done = file.state == node::Arrival::present;
            if (!done || !request.unfinished_only) r.files.push_back(file);
        }
        return json(r);
    }

    // Run the sync step alone on this job (not staged by this run: a resume's sync).
    StepResult sync() {
        JobIo io;
        io.log = [this](const std::string& line) { f.log.push_back(line); };
        io.clock = &f.clock;
        state::JobStore store(f.state);
        RunEnv env{f.config, f.state, f.nodes, store, io, Budgets{}};
        JobRun run(env, def);
        return step_sync(run);
    }

    // The target Syncthing's index reads (db/file, db/browse, db/need).
    std::size_t index_reads() const { return f.nas.st.count("file") + f.nas.st.count("browse") + f.nas.st.count("need"); }

    TransferFixture& f;
    JobDefinition def;
    SteadyTime start;
    int per_second;
    std::chrono::milliseconds lag;
    std::vector<std::string> names;
    int walks = 0;
};

}  // namespace

TEST_CASE("steps: sync of 2,000 files reads the target's index a few times, never per file per poll") {
    TransferFixture f;
    // 500 files a second, each committed 2 s after it appears: about 6 s of waiting.
    ArrivingJob job(f, 2000, 500, std::chrono::seconds(2));
    StepResult r = job.sync();
    REQUIRE_MESSAGE(r.kind == StepResult::next, r.reason, ": ", r.text, r.error.message);
    MESSAGE("walks ", job.walks, ", db/file ", f.nas.st.count("file"), ", db/browse ", f.nas.st.count("browse"), ", db/need ",
            f.nas.st.count("need"), ", all requests ", f.nas.st.calls.size());
    CHECK(job.walks > 20);  // it did wait while the files arrived
    // The index is read only once every file is there, whole, once per look; never per file.
    CHECK(f.nas.st.count("file") <= 16);  // the last stragglers, one by one
    CHECK(f.nas.st.count("browse") == f.nas.st.count("need"));
    CHECK(job.index_reads() < 2 * static_cast<std::size_t>(job.walks));
    CHECK(f.nas.st.calls.size() < 1000);  // fewer than the files
    auto browses = f.nas.st.args_of("browse");
    REQUIRE_FALSE(browses.empty());
    CHECK(browses[0]["prefix"] == f.job_id);
}

TEST_CASE("steps: a sync step whose 2,000 files are all there and indexed confirms them in one look") {
    TransferFixture f;
    ArrivingJob job(f, 2000, 1000000, std::chrono::seconds(0));
    f.clock.advance(std::chrono::seconds(5));
    job.commit();
    StepResult r = job.sync();
    REQUIRE_MESSAGE(r.kind == StepResult::next, r.reason, ": ", r.text, r.error.message);
    // A job an earlier run staged: one read of the index, then one walk given it, which lists
    // nothing (every file is there) and is told "every name indexed" in one flag.
    CHECK(job.walks == 1);
    CHECK(f.nas.st.count("browse") == 1);
    CHECK(f.nas.st.count("need") == 1);
    CHECK(f.nas.st.count("file") == 0);
    CHECK(f.clock.slept == std::chrono::milliseconds(0));
    CHECK(f.seedbox.st.count("scan") == 0);
    const json walk = f.nas.ops.args_of("receive_check").at(0);
    CHECK(walk["indexed_all"] == true);
    CHECK_FALSE(walk.contains("indexed"));
    CHECK(walk["unfinished_only"] == true);
}

TEST_CASE("steps: the floor counts what Syncthing will still write into the target") {
    TransferFixture f;
    never_arrives(f);
    f.nas.ops.handlers["info"] = [](const json&) -> Result<json> {
        node::InfoResult info;
        node::DirectoryInfo root;
        root.root.path = "/tank/sync";
        root.free_bytes = 120;
        info.roots.push_back(root);
        return json(info);
    };
    Budgets budgets;
    budgets.min_free = 100;  // 120 free, but 30 bytes of the job still to arrive
    RunResult r = f.run(budgets);
    REQUIRE(r.outcome == RunOutcome::stopped);
    CHECK(r.stop_reason == StopReason::disk);
    CHECK(contains(r.stop_text, "would fall below the floor"));
    CHECK(contains(r.stop_text, "30 B of the job still to arrive"));
}

TEST_CASE("steps: blockage_of names one cause, by precedence") {
    SyncFacts base;
    base.source = "seedbox";
    base.target = "nas";
    base.job_id = "J1";
    base.peer_connected = true;
    auto with = [&](auto change) {
        SyncFacts f = base;
        change(f);
        return blockage_of(f);
    };
    CHECK(blockage_of(base).cause.empty());
    auto paused = with([](SyncFacts& f) { f.target_paused = true; f.peer_connected = false; });
    CHECK(paused.node == "nas");
    CHECK(paused.cause == "folder paused");
    auto source_paused = with([](SyncFacts& f) { f.remote_state = "paused"; });
    CHECK(source_paused.node == "seedbox");
    CHECK(source_paused.cause == "folder paused");
    CHECK(with([](SyncFacts& f) { f.target_error = "folder marker missing"; }).cause == "folder error: folder marker missing");
    CHECK(with([](SyncFacts& f) { f.peer_connected = false; }).cause == "device 'seedbox' not connected");
    auto space = with([](SyncFacts& f) {
        f.pull_errors = {{"other/x", "permission denied"}, {"J1/p/0", "insufficient space in folder r1 (/srv): 1.0 MiB < 2.0 MiB"}};
    });
    CHECK(contains(space.cause, "receiver out of disk space ('J1/p/0': insufficient space"));
    CHECK(contains(space.cause, "(and 1 more)"));
    CHECK(contains(with([](SyncFacts& f) { f.pull_errors = {{"J1/p/1", "writing: no space left on device"}}; }).cause,
                   "receiver out of disk space"));
    CHECK(with([](SyncFacts& f) { f.pull_errors = {{"J1/p/1", "permission denied"}}; }).cause ==
          "pull error on 'J1/p/1': permission denied");
}

// Syncthing's error texts carry their own line breaks ("…device\n"): the cause is one line, so a
// message built around it never puts ") (and 1 more)" on a line of its own.
TEST_CASE("steps: blockage_of folds Syncthing's multi-line error texts to one line") {
    SyncFacts f;
    f.source = "seedbox";
    f.target = "nas";
    f.job_id = "J1";
    f.pull_errors = {{"J1/p/0", "writing: no space left on device\n"}, {"J1/p/1", "other\r\nline"}};
    Blockage b = blockage_of(f);
    CHECK(b.cause == "receiver out of disk space ('J1/p/0': writing: no space left on device) (and 1 more)");
    f.pull_errors = {{"J1/p/1", "permission denied\n  on open\n"}};
    CHECK(blockage_of(f).cause == "pull error on 'J1/p/1': permission denied; on open");
    f.pull_errors.clear();
    f.target_error = "folder path missing\n";
    CHECK(blockage_of(f).cause == "folder error: folder path missing");
}

// The exported torrent kept in the job's directory at creation is the run's: one export per job.
TEST_CASE("steps: the run uses the job directory's copy of the exported torrent; a missing, damaged or foreign one is exported again once") {
    TransferFixture f;
    const std::string kept = f.job_dir() + "/" + k_job_metainfo;
    const std::string good = f.seedbox.qb.find(f.qb_id)->metainfo;
    const std::string other = "d4:infod6:lengthi5e4:name5:other12:piece lengthi16384e6:pieces20:" + std::string(20, 'y') + "ee";
    SUBCASE("an intact copy: no export") {
        REQUIRE(write_file_atomic(kept, good).ok());
        RunResult r = f.run();
        REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
        CHECK(f.seedbox.qb.count("export_torrent") == 0);
        CHECK(f.nas.qb.args_of("add")[0]["bytes"] == good.size());
    }
    SUBCASE("no copy (a job from before copies were kept): one export, kept, nothing said") {
        RunResult r = f.run();
        REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
        CHECK(f.seedbox.qb.count("export_torrent") == 1);
        CHECK(read_file(kept).value() == good);
        CHECK_FALSE(contains(f.log_text(), "exporting the torrent"));
    }
    SUBCASE("a damaged copy: one export, kept again, said once") {
        REQUIRE(write_file_atomic(kept, "d4:info").ok());
        RunResult r = f.run();
        REQUIRE_MESSAGE(r.outcome == RunOutcome::done, r.error.message);
        CHECK(f.seedbox.qb.count("export_torrent") == 1);
        CHECK(read_file(kept).value() == good);
        CHECK(contains(f.log_text(), "is unreadable"));
        CHECK(contains(f.log_text(), "exporting the torrent from 'seedbox' again"));
    }
    SUBCASE("another torrent's copy: exported again") {
        REQUIRE(write_file_atomic(kept, other).ok());
        RunResult r = f.run();
        CHECK(f.seedbox.qb.count("export_torrent") == 1);
        CHECK(read_file(kept).value() == good);
        CHECK(r.outcome == RunOutcome::done);
        CHECK(contains(f.log_text(), "is another torrent"));
    }
    SUBCASE("the source now exports another torrent under the id: STALE_STATE, nothing kept") {
        f.seedbox.qb.find(f.qb_id)->metainfo = other;
        RunResult r = f.run();
        CHECK(r.outcome == RunOutcome::failed);
        CHECK(r.error.code == "STALE_STATE");
        CHECK(f.nas.qb.count("add") == 0);
        CHECK_FALSE(read_file(kept).ok());
    }
}
