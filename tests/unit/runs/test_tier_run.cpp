// runs::run_tier_policy: a tier policy's run over the recording fakes (tier_fixture.hpp) — the
// unfinished job first, then the candidates largest first until the goal holds, the fallback to
// the next archive node, and one rule for every stop (run_many.hpp).

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "lib/node/wire/ops.hpp"
#include "lib/runs/tier_run.hpp"
#include "lib/state/tier_store.hpp"
#include "tests/unit/runs/tier_fixture.hpp"

using namespace archctl;
using archctl::test::ScriptedJobs;
using archctl::test::TierFixture;
using Calls = std::vector<std::string>;

namespace {

bool text_has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Three candidates: largest first is aa (500), bb (400), cc (300).
void three_candidates(TierFixture& f) {
    f.candidate("cc", 300);
    f.candidate("aa", 500);
    f.candidate("bb", 400);
}

std::vector<std::string> outcomes(const runs::TierRun& run) {
    std::vector<std::string> out;
    for (const auto& s : run.steps) out.push_back(s.what + " " + s.resource + " " + s.outcome);
    return out;
}

}  // namespace

TEST_CASE("tier run: the unfinished job first, then candidates largest first until the goal holds") {
    TierFixture f;
    three_candidates(f);  // 100 free, the goal 1000: aa and bb reach it, cc is left alone
    runs::TierRun run = f.run_policy();

    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas", "evict-aa", "archive-bb-nas", "evict-bb"});
    CHECK(f.planner.calls == Calls{"archive aa nas", "evict aa", "archive bb nas", "evict bb"});
    CHECK(run.outcome == runs::TierOutcome::done);
    CHECK(run.resumed == 1);
    CHECK(run.archived == 3);  // the continued job and two candidates
    CHECK(run.evicted == 2);
    CHECK(run.measured);
    CHECK(run.free_before == 100);
    CHECK(run.free_after == 1000);  // read from the cache after each eviction
    CHECK(run.goal_met);
    CHECK_FALSE(run.stop);
    CHECK_FALSE(run.first_error);
    CHECK(f.ledger()["state"] == "done");
    CHECK(text_has(f.said_text(), "archctl: tier box: continuing job " + f.job_id + " (archive show)"));
    CHECK(text_has(f.said_text(), "archctl: tier box: job evict-aa  evict evict-aa from seedbox"));

    auto j = run.to_json();
    CHECK(j["outcome"] == "done");
    CHECK(j["want_free"] == 1000);
    CHECK(j["steps"].size() == 5);
    CHECK(j["steps"][1] == nlohmann::json{{"resource", "aa"}, {"what", "archive"}, {"job", "archive-aa-nas"}, {"outcome", "done"}, {"node", "nas"}});
    CHECK(j["archived_to"] == nlohmann::json{{"nas", 3}});
    CHECK(j["released"] == 0);
    CHECK_FALSE(j.contains("stop"));
}

TEST_CASE("tier run: an unproven eviction is made up by the next candidate; none left is TIER_GOAL_UNREACHABLE") {
    TierFixture f;
    three_candidates(f);
    f.planner.evict_answer = [](const std::string& res) -> Result<runs::JobOpening> {
        if (res == "aa") return ScriptedJobs::refused(Error(ErrorCode::NOT_COVERED, "cannot evict 'aa': 1 of 2 files\nmissing: x"));
        return ScriptedJobs::created("evict-" + res);
    };
    f.policy.keep_free = 800;  // bb and cc make it without aa
    runs::TierRun run = f.run_policy();
    CHECK(outcomes(run) == Calls{"archive " + f.qb_id + " done", "archive aa done", "evict aa blocked", "archive bb done", "evict bb done",
                                "archive cc done", "evict cc done"});
    CHECK(run.blocked == 1);
    CHECK(run.steps[2].message == "cannot evict 'aa': 1 of 2 files");
    CHECK(run.outcome == runs::TierOutcome::done);
    CHECK(run.free_after == 800);

    TierFixture g;
    three_candidates(g);
    g.planner.evict_answer = [](const std::string&) -> Result<runs::JobOpening> {
        return ScriptedJobs::refused(Error(ErrorCode::NOT_COVERED, "not proven"));
    };
    runs::TierRun blocked = g.run_policy();
    CHECK(blocked.outcome == runs::TierOutcome::failed);
    CHECK(blocked.blocked == 3);
    REQUIRE(blocked.first_error);
    CHECK(blocked.first_error->is(ErrorCode::TIER_GOAL_UNREACHABLE));
    CHECK(text_has(blocked.first_error->message, "3 candidate(s) blocked"));
    CHECK_FALSE(blocked.goal_met);
}

TEST_CASE("tier run: an archive node that cannot take the job falls back to the next one") {
    TierFixture f;
    three_candidates(f);
    f.planner.archive_on["nas"] = [](const std::string& res) -> Result<runs::JobOpening> {
        if (res == "aa") return ScriptedJobs::refused(Error(ErrorCode::DISK_INSUFFICIENT, "nas has no room"));
        return Error(ErrorCode::NOT_FOUND, "nas: the torrent's files are gone");
    };
    runs::TierRun run = f.run_policy();
    CHECK(f.planner.calls == Calls{"archive aa nas", "archive aa nas2", "evict aa", "archive bb nas", "archive bb nas2", "evict bb"});
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas2", "evict-aa", "archive-bb-nas2", "evict-bb"});
    CHECK(run.outcome == runs::TierOutcome::done);
    CHECK(run.failed == 0);
    CHECK(text_has(f.said_text(), "job archive-aa-nas2  archive archive-aa-nas2 seedbox → nas2"));
}

TEST_CASE("tier run: no archive node takes a candidate: it fails, is not evicted, and the next one runs") {
    TierFixture f;
    three_candidates(f);
    auto full = [](const std::string& res) -> Result<runs::JobOpening> {
        if (res == "aa") return ScriptedJobs::refused(Error(ErrorCode::DISK_INSUFFICIENT, "no room"));
        return ScriptedJobs::created("archive-" + res);
    };
    f.planner.archive_on["nas"] = full;
    f.planner.archive_on["nas2"] = full;
    f.policy.keep_free = 800;
    runs::TierRun run = f.run_policy();
    CHECK(f.planner.calls == Calls{"archive aa nas", "archive aa nas2", "archive bb nas", "evict bb", "archive cc nas", "evict cc"});
    CHECK(run.outcome == runs::TierOutcome::failed);  // the goal holds, but a candidate failed
    CHECK(run.goal_met);
    CHECK(run.failed == 1);
    REQUIRE(run.first_error);
    CHECK(run.first_error->is(ErrorCode::DISK_INSUFFICIENT));
    CHECK(run.first_error->message == "cannot archive 'aa' (T-aa): no room");
}

TEST_CASE("tier run: a job waiting on an outage ends its own turn, and the run goes on (exit 10 at the end)") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-aa-nas"] = TierFixture::stopped(jobs::StopReason::waiting, "waiting: node 'nas' unreachable");
    f.policy.keep_free = 800;
    runs::TierRun run = f.run_policy();
    // aa waits and is not evicted without its copy; bb and cc reach the goal.
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas", "archive-bb-nas", "evict-bb", "archive-cc-nas", "evict-cc"});
    CHECK(outcomes(run)[1] == "archive aa stopped");
    CHECK(run.outcome == runs::TierOutcome::stopped);
    CHECK(run.goal_met);
    CHECK(run.stop == std::optional<std::string>("waiting: node 'nas' unreachable"));
    CHECK_FALSE(f.many->ended());
    CHECK(text_has(f.said_text(), "archctl: job archive-aa-nas is at sync; nothing is lost (waiting: node 'nas' unreachable)"));
}

TEST_CASE("tier run: the unfinished job waiting on the real driver does not hold up the candidates") {
    TierFixture f;
    three_candidates(f);
    f.seedbox.ops.fail_always("stage", Error(ErrorCode::NODE_UNREACHABLE, "node 'seedbox' is unreachable"));
    runs::TierRun run = f.run_policy();
    REQUIRE_FALSE(run.steps.empty());
    CHECK(run.steps[0].job == f.job_id);
    CHECK(run.steps[0].outcome == "stopped");
    CHECK(text_has(run.steps[0].message, "unreachable"));
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas", "evict-aa", "archive-bb-nas", "evict-bb"});
    CHECK(run.outcome == runs::TierOutcome::stopped);
    CHECK(run.archived == 2);
    CHECK(f.ledger()["state"] == "running");  // unfinished: the next run continues it
}

TEST_CASE("tier run: a budget stop ends the whole run; no other job starts") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-aa-nas"] = TierFixture::stopped(jobs::StopReason::budget, "budget reached (30 B moved this run, limit 30 B)");
    runs::TierRun run = f.run_policy();
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas"});
    CHECK(f.planner.calls == Calls{"archive aa nas"});
    CHECK(run.outcome == runs::TierOutcome::stopped);
    CHECK(f.many->ended());
    CHECK(run.stop == std::optional<std::string>("budget reached (30 B moved this run, limit 30 B)"));
    CHECK_FALSE(run.goal_met);
}

TEST_CASE("tier run: a job another archctl drives is skipped here, and the run goes on") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-aa-nas"] = TierFixture::failed(Error(ErrorCode::LOCKED, "job archive-aa-nas is locked"));
    f.policy.keep_free = 800;
    runs::TierRun run = f.run_policy();
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas", "archive-bb-nas", "evict-bb", "archive-cc-nas", "evict-cc"});
    CHECK(run.outcome == runs::TierOutcome::stopped);
    CHECK(run.failed == 0);
    REQUIRE(run.stop);
    CHECK(text_has(*run.stop, "job archive-aa-nas is being driven by another archctl"));
    CHECK(text_has(f.said_text(), "; skipped here"));
}

TEST_CASE("tier run: a route that keeps a node waiting is not asked again; the next node takes the jobs") {
    TierFixture f;
    three_candidates(f);
    f.planner.archive_on["nas"] = [](const std::string&) -> Result<runs::JobOpening> {
        return Error(ErrorCode::ROUTE_WAITING, "route to nas: Syncthing unreachable");
    };
    runs::TierRun run = f.run_policy();
    CHECK(f.planner.calls == Calls{"archive aa nas", "archive aa nas2", "evict aa", "archive bb nas2", "evict bb"});
    CHECK(run.outcome == runs::TierOutcome::done);

    TierFixture g;  // no other node: each candidate waits, none fails
    three_candidates(g);
    g.policy.archive = {"nas"};
    g.planner.archive_on["nas"] = f.planner.archive_on["nas"];
    runs::TierRun waits = g.run_policy();
    CHECK(g.planner.calls == Calls{"archive aa nas"});
    CHECK(outcomes(waits) == Calls{"archive " + g.qb_id + " done", "archive aa stopped", "archive bb stopped", "archive cc stopped"});
    CHECK(waits.outcome == runs::TierOutcome::stopped);
    CHECK(waits.failed == 0);
    REQUIRE(waits.stop);
    CHECK(text_has(*waits.stop, "waiting: no archive node can take 'cc' now (nas: route to nas: Syncthing unreachable)"));
}

TEST_CASE("tier run: an outage while opening a job (the cache's or the target's qBittorrent gone mid-run) is a wait, never a failure") {
    // The cache's qBittorrent stops after the run read its list: every later job cannot resolve
    // its torrent, which is an outage (HTTP_UNREACHABLE), not "no node has it".
    TierFixture f;
    three_candidates(f);
    auto cache_gone = [](const std::string&) -> Result<runs::JobOpening> {
        return Error(ErrorCode::HTTP_UNREACHABLE, "cannot tell which node has 'aa': no node that answered has it, and seedbox: "
                                                  "cannot reach qBittorrent");
    };
    f.planner.archive_on["nas"] = cache_gone;
    f.planner.archive_on["nas2"] = cache_gone;
    runs::TierRun run = f.run_policy();
    // The run stops at the first: every later candidate would meet the same outage.
    CHECK(f.planner.calls == Calls{"archive aa nas"});
    CHECK(run.outcome == runs::TierOutcome::stopped);
    CHECK(run.failed == 0);
    CHECK_FALSE(run.first_error);
    REQUIRE(run.stop);
    CHECK(*run.stop == "waiting: cannot tell which node has 'aa': no node that answered has it, and seedbox: cannot reach qBittorrent");

    // An eviction that cannot open for the same reason waits too.
    TierFixture g;
    three_candidates(g);
    g.planner.evict_answer = [](const std::string&) -> Result<runs::JobOpening> {
        return Error(ErrorCode::HTTP_UNREACHABLE, "cannot reach qBittorrent on 'seedbox'");
    };
    runs::TierRun evicts = g.run_policy();
    CHECK(evicts.outcome == runs::TierOutcome::stopped);
    CHECK(evicts.failed == 0);
    REQUIRE(evicts.stop);
    CHECK(text_has(*evicts.stop, "waiting: cannot reach qBittorrent on 'seedbox'"));
}

TEST_CASE("tier run: an unreachable cache is a wait before anything is read; the summary's free space is read fresh all the same") {
    TierFixture f;
    three_candidates(f);
    f.seedbox.qb.fail_always("all_torrents", Error(ErrorCode::HTTP_UNREACHABLE, "qBittorrent of 'seedbox' is unreachable"));
    runs::TierRun run = f.run_policy();
    CHECK(run.outcome == runs::TierOutcome::stopped);
    REQUIRE(run.stop);
    CHECK(text_has(*run.stop, "waiting: qBittorrent of 'seedbox' is unreachable"));
    CHECK(f.planner.calls.empty());
    // The node measures its filesystem while its qBittorrent is down.
    CHECK(run.measured);
    CHECK(run.free_after == 100);
    CHECK(run.goal.text == "keep 1000 B free");
    CHECK_FALSE(run.goal_met);

    TierFixture g;  // the node cannot measure either: said without a free space
    three_candidates(g);
    g.seedbox.qb.fail_always("all_torrents", Error(ErrorCode::HTTP_UNREACHABLE, "qBittorrent of 'seedbox' is unreachable"));
    g.seedbox.ops.fail_always("info", Error(ErrorCode::NODE_UNREACHABLE, "node 'seedbox' is unreachable"));
    runs::TierRun unread = g.run_policy();
    CHECK(unread.outcome == runs::TierOutcome::stopped);
    CHECK_FALSE(unread.measured);
    CHECK_FALSE(unread.goal_met);
}

TEST_CASE("tier run: the run's summary is the policy's record in the state directory") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-bb-nas"] = TierFixture::failed(Error(ErrorCode::IO, "disk error on nas"));
    runs::TierRun run = f.run_policy();
    auto stored = state::TierStore(f.state).read("box");
    REQUIRE(stored.ok());
    REQUIRE(stored.value().has_value());
    CHECK(stored.value()->to_json() == run.record().to_json());
    CHECK(stored.value()->outcome == "failed");
    REQUIRE(stored.value()->error.has_value());
    CHECK(stored.value()->error->code == "IO");
    CHECK_FALSE(stored.value()->started.empty());
    CHECK_FALSE(stored.value()->ended.empty());
    auto j = run.to_json();
    CHECK_FALSE(j.contains("started"));
    CHECK(j["error"]["message"] == "disk error on nas");
}

TEST_CASE("tier run: a refused confirmation fails the policy before any candidate moves") {
    TierFixture f;
    three_candidates(f);
    jobs::JobIo io;
    io.clock = &f.clock;
    jobs::Driver driver(f.config, f.state, f.nodes, io);
    runs::ManyRun many(
        [&](const std::string& id, const jobs::Budgets& b) {
            f.driven.push_back(id);
            return id == f.job_id ? f.run(b) : jobs::RunResult{};
        },
        f.clock, {}, f.clock.steady());
    std::size_t asked_acting = 0, asked_evicts = 0;
    runs::TierEnv env{f.config, f.state, f.nodes, driver, f.planner, f.clock, [](const std::string&) {},
                      [&](const runs::TierAsk& ask) -> std::optional<Error> {
                          asked_acting = ask.acting;
                          asked_evicts = ask.evicts;
                          return Error(ErrorCode::CONFIRM_REQUIRED, "tier 'box' needs confirmation");
                      }};
    runs::TierRun run = runs::run_tier_policy(env, many, f.policy);
    CHECK(asked_acting == 2);
    CHECK(asked_evicts == 2);
    CHECK(run.outcome == runs::TierOutcome::failed);
    CHECK(f.planner.calls.empty());
    CHECK(f.driven == Calls{f.job_id});  // the unfinished job was confirmed when it was made
}

TEST_CASE("tier run: a job whose archive node cannot take it ends its own turn; the others go to the next node") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-aa-nas"] = TierFixture::no_room("nas");
    runs::TierRun run = f.run_policy();
    // Not the end of the run (it was: a 'disk' stop ended every run there); nas is not asked again.
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas", "archive-bb-nas2", "evict-bb", "archive-cc-nas2", "evict-cc"});
    CHECK(f.planner.calls == Calls{"archive aa nas", "archive bb nas2", "evict bb", "archive cc nas2", "evict cc"});
    CHECK_FALSE(f.many->ended());
    CHECK(run.outcome == runs::TierOutcome::stopped);  // aa's job waits: more to do
    CHECK(run.failed == 0);
    CHECK(run.archived_to == std::map<std::string, std::size_t>{{"nas", 1}, {"nas2", 2}});
    REQUIRE(run.steps.size() >= 2);
    CHECK(run.steps[1].job == "archive-aa-nas");
    CHECK(run.steps[1].outcome == "stopped");
    CHECK(run.steps[1].node == "nas");
    CHECK(text_has(run.steps[1].message, "undoes and releases the job"));
    REQUIRE(run.stop);
    CHECK(text_has(*run.stop, "fell below the floor"));
}

TEST_CASE("tier run: a job released because its archive node could not take it: its candidate goes to the next node in the same run") {
    TierFixture f;
    three_candidates(f);
    f.results["archive-aa-nas"] = TierFixture::released("nas");
    runs::TierRun run = f.run_policy();
    CHECK(f.planner.calls == Calls{"archive aa nas", "archive aa nas2", "evict aa", "archive bb nas2", "evict bb"});
    CHECK(run.outcome == runs::TierOutcome::done);
    CHECK(run.goal_met);
    CHECK(run.failed == 0);
    CHECK_FALSE(run.first_error);
    CHECK(run.released == 1);
    CHECK(outcomes(run) == Calls{"archive " + f.qb_id + " done", "archive aa released", "archive aa done", "evict aa done",
                                "archive bb done", "evict bb done"});
    CHECK(text_has(f.said_text(), "job archive-aa-nas undone and released: 'nas' had not taken it since"));
}

TEST_CASE("tier run: the continued job waits for room on its node; its candidate is not driven again; past the bound it moves on") {
    TierFixture f;
    three_candidates(f);
    // The fixture's own job (archive seedbox → nas, on the real driver) is the largest candidate.
    f.seedbox.qb.find(f.qb_id)->info.size = f.seedbox.qb.find(f.qb_id)->info.total_size = 600;
    f.seedbox.qb.find(f.qb_id)->info.progress = 1;
    f.sizes[f.qb_id] = 600;
    f.policy.evict = config::TierEvict::never;
    f.config.min_free = 100;
    f.nas_free = 50;
    f.nas.ops.handlers["receive_check"] = [](const nlohmann::json&) -> Result<nlohmann::json> {
        node::ReceiveCheckResult r;
        r.job_exists = true;
        return nlohmann::json(r);
    };
    jobs::Budgets budgets;
    budgets.min_free = 100;

    runs::TierRun first = f.run_policy(budgets);
    CHECK(f.driven == Calls{f.job_id, "archive-aa-nas2", "archive-bb-nas2", "archive-cc-nas2"});
    for (const auto& call : f.planner.calls) CHECK(call.find(f.qb_id) == std::string::npos);  // not once more as a candidate
    CHECK(first.outcome == runs::TierOutcome::stopped);
    CHECK(f.ledger()["target_blocked"]["runs"] == 1);

    f.clock.advance(std::chrono::hours(12));
    (void)f.run_policy(budgets);
    f.clock.advance(std::chrono::hours(12));
    f.planner.calls.clear();
    runs::TierRun third = f.run_policy(budgets);
    CHECK(f.ledger()["state"] == "cancelled");
    CHECK(third.released == 1);
    CHECK(third.failed == 0);
    CHECK(third.outcome == runs::TierOutcome::done);
    REQUIRE_FALSE(f.planner.calls.empty());
    CHECK(f.planner.calls.front() == "archive " + f.qb_id + " nas2");  // nas has no room above its floor
    CHECK(third.archived_to.at("nas2") == 4);
}

TEST_CASE("tier run: no archive node can take the candidates: nothing is opened, and the run fails naming the nodes and the fix") {
    TierFixture f;
    three_candidates(f);
    f.config.min_free = 100;
    f.nas_free = 50;
    f.nas2_free = 120;
    runs::TierRun run = f.run_policy();
    CHECK(f.planner.calls.empty());
    CHECK(run.outcome == runs::TierOutcome::failed);
    CHECK(run.no_room == 3);
    REQUIRE(run.first_error);
    CHECK(run.first_error->is(ErrorCode::TIER_GOAL_UNREACHABLE));
    CHECK(text_has(run.first_error->message, "3 candidate(s) have no archive node that can take them (nas: no room: 50 B free, 100 B floor, "
                                             "needs 500 B; nas2: no room: 120 B free, 100 B floor, needs 500 B)"));
    CHECK(text_has(run.first_error->hint, "free space on an archive node of the policy"));
}

TEST_CASE("tier run: the goal holds only when the free space read after the run meets it, whatever evict says") {
    SUBCASE("evict = always, a goal nothing reaches, no candidate: not held, TIER_GOAL_UNREACHABLE") {
        TierFixture f;
        f.policy.evict = config::TierEvict::always;
        f.policy.keep_free = 1ull << 50;
        runs::TierRun run = f.run_policy();
        CHECK(run.archived == 1);  // the continued job
        CHECK(run.evicted == 0);
        CHECK_FALSE(run.goal_met);
        CHECK(run.outcome == runs::TierOutcome::failed);
        REQUIRE(run.first_error);
        CHECK(run.first_error->is(ErrorCode::TIER_GOAL_UNREACHABLE));
        CHECK(text_has(run.first_error->message, "no candidate is left"));
    }
    SUBCASE("evict = always, every candidate evicted and still short: not held") {
        TierFixture f;
        three_candidates(f);
        f.policy.evict = config::TierEvict::always;
        f.policy.keep_free = 5000;
        runs::TierRun run = f.run_policy();
        CHECK(run.evicted == 3);
        CHECK(run.free_after == 1300);
        CHECK_FALSE(run.goal_met);
        CHECK(run.outcome == runs::TierOutcome::failed);
    }
    SUBCASE("evict = always, the goal met: held") {
        TierFixture f;
        three_candidates(f);
        f.policy.evict = config::TierEvict::always;
        runs::TierRun run = f.run_policy();
        CHECK(run.evicted == 3);
        CHECK(run.goal_met);
        CHECK(run.outcome == runs::TierOutcome::done);
    }
    SUBCASE("evict = never: the candidates archived, the goal said and not claimed") {
        TierFixture f;
        three_candidates(f);
        f.policy.evict = config::TierEvict::never;
        runs::TierRun run = f.run_policy();
        CHECK(run.archived == 4);
        CHECK(run.evicted == 0);
        CHECK_FALSE(run.goal_met);
        CHECK(run.outcome == runs::TierOutcome::done);
        CHECK_FALSE(run.first_error);
    }
}

TEST_CASE("tier run: evict = never with candidates no archive node can take fails naming the nodes, not silently done") {
    TierFixture f;
    three_candidates(f);
    f.policy.evict = config::TierEvict::never;
    f.config.min_free = 100;
    f.nas_free = 50;
    f.nas2_free = 50;
    runs::TierRun run = f.run_policy();
    CHECK(run.outcome == runs::TierOutcome::failed);
    REQUIRE(run.first_error);
    CHECK(run.first_error->is(ErrorCode::DISK_INSUFFICIENT));
    CHECK(text_has(run.first_error->message, "tier box: 3 candidate(s) have no archive node that can take them (nas: no room: 50 B free"));
    CHECK(text_has(run.first_error->hint, "free space on an archive node of the policy"));
}
