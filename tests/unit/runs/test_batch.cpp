// The batch (lib/runs/batch.hpp): choosing from the source's torrents, the run order, the
// 60-second re-plan rule on a ManualClock, and how each item's run ends. Each resource's plan is
// scripted (ScriptedPlanner); its job is a real archive job driven over the recording fakes
// (many_jobs.hpp).

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "lib/base/lock_file.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/runs/batch.hpp"
#include "lib/state/job_store.hpp"
#include "tests/unit/runs/many_jobs.hpp"

using namespace archctl;
using archctl::runs::Action;
using archctl::runs::BatchStep;
using archctl::runs::ItemOutcome;
using archctl::test::ManyJobs;

namespace {

// Plans each resource from `plans` (its action and digest as of now) and creates the job of
// ManyJobs named there; records what it was asked.
class ScriptedPlanner final : public runs::ItemPlanner {
public:
    struct Plan {
        Action action = Action::new_job;
        std::string digest = "d1";
        std::string job;                  // the ManyJobs name create() returns (or continues)
    };
    std::map<std::string, Plan> plans;    // by RES
    std::vector<std::string> prepared, created;

    void prepare(runs::BatchItem& it, const std::string&, runs::PlanMode, jobs::transfer::PlanSnapshot&) override {
        prepared.push_back(it.res);
        const Plan& p = plans.at(it.res);
        it.id = it.res;
        it.short_id = it.res;
        it.name = "show " + it.res;
        it.action = p.action;
        it.digest = p.digest;
        it.files = 2;
        it.bytes = 30;
        if (p.action == Action::continue_job) it.existing_job = p.job;
        if (p.action == Action::nothing_to_do) it.reason = "'nas' already holds it";
        if (p.action == Action::refused) {
            it.error = Error(ErrorCode::USAGE, "refused by the script");
            it.reason = it.error->message;
        }
    }
    Result<std::string> create(const runs::BatchItem& it) override {
        created.push_back(it.res);
        return plans.at(it.res).job;
    }

    [[nodiscard]] std::size_t times_prepared(const std::string& res) const {
        return static_cast<std::size_t>(std::count(prepared.begin(), prepared.end(), res));
    }
};

struct Batch {
    explicit Batch(std::size_t count) : jobs(count) {}

    runs::Planned plan(const std::vector<std::string>& res) {
        spec.res = res;
        auto p = runs::plan_batch(jobs.job(jobs.names[0]).nodes, jobs.clock, spec, planner, runs::PlanMode::for_run);
        REQUIRE(p.ok());
        return std::move(p.value());
    }

    runs::BatchRun run(runs::Planned& planned, bool yes = false) {
        runs::BatchRunOptions options;
        options.started = jobs.clock.steady();
        options.yes = yes;
        return runs::run_batch(planned, {planner, jobs.runner(), jobs.clock, jobs.job(jobs.names[0]).nodes}, options, [&](const runs::BatchEvent& e) {
            steps.push_back(e.step);
            said.push_back(e.item.res);
        });
    }

    ManyJobs jobs;
    runs::BatchSpec spec;
    ScriptedPlanner planner;
    std::vector<BatchStep> steps;
    std::vector<std::string> said;  // the item of each event
};

}  // namespace

TEST_CASE("batch: unfinished jobs run first, then the new ones in order; each item says how it ended") {
    Batch b(2);
    b.planner.plans = {{"aaaa", {Action::new_job, "d1", "first"}},
                       {"bbbb", {Action::continue_job, "d2", "second"}},
                       {"cccc", {Action::nothing_to_do, "d3", ""}},
                       {"dddd", {Action::refused, "d4", ""}}};
    runs::Planned planned = b.plan({"aaaa", "bbbb", "cccc", "dddd"});
    runs::Totals t = runs::totals_of(planned.items);
    CHECK(t.new_jobs == 1);
    CHECK(t.continued == 1);
    CHECK(t.nothing == 1);
    CHECK(t.refused == 1);
    CHECK(t.bytes == 30);

    runs::BatchRun r = b.run(planned);
    CHECK(b.jobs.driven == std::vector<std::string>{"second", "first"});
    CHECK(b.steps == std::vector<BatchStep>{BatchStep::continuing, BatchStep::ran, BatchStep::created, BatchStep::ran});
    CHECK(planned.items[0].outcome == ItemOutcome::done);
    CHECK(planned.items[1].outcome == ItemOutcome::done);
    CHECK(planned.items[2].outcome == ItemOutcome::nothing_to_do);
    CHECK(planned.items[3].outcome == ItemOutcome::failed);
    REQUIRE(planned.items[0].result.has_value());
    CHECK(planned.items[0].result->job_id == b.jobs.job("first").job_id);
    runs::Tally tally = runs::tally(planned.items);
    CHECK(tally.failures == 1);
    CHECK(tally.first_failed == &planned.items[3]);
    CHECK(tally.unfinished == 0);
    CHECK(r.stop_text.empty());
    // The strings --json has always said.
    CHECK(runs::to_string(Action::new_job, runs::BatchOp::evict) == "evict");
    CHECK(runs::to_string(Action::continue_job, runs::BatchOp::archive) == "continue");
    CHECK(std::string(runs::to_string(ItemOutcome::not_run)) == "not_run");
}

TEST_CASE("batch: the same resource named twice is one job") {
    Batch b(1);
    b.planner.plans = {{"aaaa", {Action::new_job, "d1", "first"}}};
    runs::Planned planned = b.plan({"aaaa", "aaaa"});
    REQUIRE(planned.items.size() == 2);
    CHECK(planned.items[0].action == Action::new_job);
    CHECK(planned.items[1].action == Action::nothing_to_do);
    CHECK(planned.items[1].reason == "named twice: one job does it");
}

TEST_CASE("batch: a plan older than 60 s is made again before its job is created; one that changed runs only with yes") {
    Batch b(2);
    b.planner.plans = {{"aaaa", {Action::new_job, "d1", "first"}}, {"bbbb", {Action::new_job, "d2", "second"}}};
    runs::Planned planned = b.plan({"aaaa", "bbbb"});

    SUBCASE("the first job took under 60 s: the second is created from the confirmed plan") {
        b.jobs.after = [&](const std::string&) { b.jobs.clock.advance(std::chrono::seconds(59)); };
        b.planner.plans["bbbb"].digest = "changed";  // would show at a re-plan; none is made
        (void)b.run(planned);
        CHECK(b.planner.times_prepared("bbbb") == 1);
        CHECK(b.jobs.driven == std::vector<std::string>{"first", "second"});
        CHECK(planned.items[1].outcome == ItemOutcome::done);
    }
    SUBCASE("the first job took over 60 s and the plan is the same: it is re-planned and runs") {
        b.jobs.after = [&](const std::string&) { b.jobs.clock.advance(std::chrono::seconds(61)); };
        (void)b.run(planned);
        CHECK(b.planner.times_prepared("aaaa") == 1);
        CHECK(b.planner.times_prepared("bbbb") == 2);
        CHECK(b.jobs.driven == std::vector<std::string>{"first", "second"});
        CHECK(planned.items[1].outcome == ItemOutcome::done);
    }
    SUBCASE("the plan changed and yes was not given: refused, nothing created") {
        b.jobs.after = [&](const std::string&) {
            b.jobs.clock.advance(std::chrono::seconds(61));
            b.planner.plans["bbbb"].digest = "changed";
        };
        (void)b.run(planned);
        CHECK(b.planner.created == std::vector<std::string>{"aaaa"});
        CHECK(b.jobs.driven == std::vector<std::string>{"first"});
        const runs::BatchItem& it = planned.items[1];
        CHECK(it.outcome == ItemOutcome::failed);
        CHECK(it.action == Action::refused);
        REQUIRE(it.error.has_value());
        CHECK(it.error->code == "TOKEN_MISMATCH");
        CHECK(b.steps.back() == BatchStep::changed);
        CHECK(runs::tally(planned.items).failures == 1);
    }
    SUBCASE("the plan changed and yes was given: it runs on the new plan") {
        b.jobs.after = [&](const std::string&) {
            b.jobs.clock.advance(std::chrono::seconds(61));
            b.planner.plans["bbbb"].digest = "changed";
        };
        (void)b.run(planned, true);
        CHECK(b.jobs.driven == std::vector<std::string>{"first", "second"});
        CHECK(planned.items[1].digest == "changed");
        CHECK(planned.items[1].outcome == ItemOutcome::done);
    }
    SUBCASE("the re-plan finds nothing left to do: settled without a job") {
        b.jobs.after = [&](const std::string&) {
            b.jobs.clock.advance(std::chrono::seconds(61));
            b.planner.plans["bbbb"].action = Action::nothing_to_do;
        };
        (void)b.run(planned);
        CHECK(b.jobs.driven == std::vector<std::string>{"first"});
        CHECK(planned.items[1].outcome == ItemOutcome::nothing_to_do);
        CHECK(b.steps.back() == BatchStep::settled);
    }
}

TEST_CASE("batch: a job that waits is stopped and the batch goes on; one driven elsewhere is stopped too") {
    Batch b(3);
    b.planner.plans = {{"aaaa", {Action::new_job, "d1", "first"}},
                       {"bbbb", {Action::new_job, "d2", "second"}},
                       {"cccc", {Action::new_job, "d3", "third"}}};
    b.jobs.job("first").nas.qb.fail_always("add", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'nas'"));
    std::vector<std::string> notices;
    auto held = LockFile::acquire(state::JobStore(b.jobs.job("second").state).dir_of(b.jobs.job("second").job_id), "another run", notices);
    REQUIRE(held.ok());
    runs::Planned planned = b.plan({"aaaa", "bbbb", "cccc"});
    runs::BatchRun r = b.run(planned);

    CHECK(b.jobs.driven == std::vector<std::string>{"first", "second", "third"});
    CHECK(planned.items[0].outcome == ItemOutcome::stopped);
    CHECK(planned.items[1].outcome == ItemOutcome::stopped);
    CHECK(planned.items[2].outcome == ItemOutcome::done);
    // The run's reason is the last stop: the job another archctl drives.
    CHECK(r.stop_text == planned.items[1].result->error.message);
    CHECK_FALSE(r.summary.ended);
    runs::Tally t = runs::tally(planned.items);
    CHECK(t.unfinished == 2);
    CHECK(t.failures == 0);
}

TEST_CASE("batch: filters choose from the source's torrents in name order; a RES not there is skipped") {
    Batch b(1);
    test::TransferFixture& f = b.jobs.job("first");
    clients::qbittorrent::TorrentInfo other;
    other.id = std::string(40, 'b');
    other.name = "another";
    other.state = "stalledUP";
    other.progress = 1;
    f.seedbox.qb.put(other);
    config::Criteria all;
    all.all = true;
    b.spec.criteria = all;
    b.spec.from = "seedbox";
    b.planner.plans = {{other.id, {Action::new_job, "d1", "first"}}, {f.qb_id, {Action::new_job, "d2", "first"}}};
    SUBCASE("every torrent") {
        runs::Planned planned = b.plan({});
        CHECK(planned.source == "seedbox");
        REQUIRE(planned.items.size() == 2);
        CHECK(planned.items[0].res == other.id);  // "another" before "show"
        CHECK(planned.items[1].res == f.qb_id);
        CHECK(planned.items[0].rule == "all");
    }
    SUBCASE("RES with a filter: the filter narrows them; one not on the source is skipped") {
        runs::Planned planned = b.plan({f.qb_id.substr(0, 12), "cccccccccccc"});
        REQUIRE(planned.items.size() == 2);
        CHECK(planned.items[0].res == "cccccccccccc");
        CHECK(planned.items[0].action == Action::skipped);
        CHECK(planned.items[0].reason == "not on 'seedbox'");
        CHECK(planned.items[1].res == f.qb_id);
        CHECK(b.planner.times_prepared("cccccccccccc") == 0);
    }
}

// "not chosen" lists every torrent the filters passed over, each with its reason, the ones still
// downloading included (a torrent not complete fails "completed before" as much as the
// completion rule: it is listed when its category, tag and name do not rule it out).
TEST_CASE("batch: every torrent passed over is listed with its reason, still-downloading ones with their percent") {
    Batch b(1);
    test::TransferFixture& f = b.jobs.job("first");
    auto torrent = [&](char c, const std::string& name, const std::string& category, double progress) {
        clients::qbittorrent::TorrentInfo t;
        t.id = std::string(40, c);
        t.name = name;
        t.category = category;
        t.state = progress < 1 ? "downloading" : "stalledUP";
        t.progress = progress;
        t.amount_left = progress < 1 ? 100 : 0;
        t.completion_on = progress < 1 ? -1 : 1000;
        f.seedbox.qb.put(t);
        return t.id;
    };
    const std::string done_tv = torrent('b', "a-done", "tv", 1.0);
    const std::string downloading_tv = torrent('c', "b-downloading", "tv", 0.634);
    torrent('d', "c-downloading-film", "film", 0.2);
    const std::string kept = torrent('e', "d-kept", "keep", 1.0);
    b.spec.from = "seedbox";
    b.planner.plans = {{done_tv, {Action::new_job, "d1", "first"}}, {f.qb_id, {Action::new_job, "d2", "first"}}};

    SUBCASE("--category tv: the downloading tv torrent is passed over, the film is not a candidate") {
        config::Criteria tv;
        tv.categories = {"tv"};
        b.spec.criteria = tv;
        runs::Planned planned = b.plan({});
        REQUIRE(planned.items.size() == 1);
        CHECK(planned.items[0].res == done_tv);
        REQUIRE(planned.not_chosen.size() == 1);
        CHECK(planned.not_chosen[0].id == downloading_tv);
        CHECK(planned.not_chosen[0].name == "b-downloading");
        CHECK(planned.not_chosen[0].reason == "still downloading (63%)");
    }
    SUBCASE("--completed-before with an exclusion: both downloading torrents, and the excluded one, each with its reason") {
        config::Criteria old;
        config::TimeBound bound;
        bound.age_s = 10;
        old.completed_before = bound;
        old.exclude_categories = {"keep"};
        b.spec.criteria = old;
        b.planner.plans[f.qb_id] = {Action::new_job, "d2", "first"};
        runs::Planned planned = b.plan({});
        std::map<std::string, std::string> why;
        for (const auto& p : planned.not_chosen) why[p.name] = p.reason;
        CHECK(why == std::map<std::string, std::string>{{"b-downloading", "still downloading (63%)"},
                                                        {"c-downloading-film", "still downloading (20%)"},
                                                        {"d-kept", "category keep"}});
        (void)kept;
    }
}

TEST_CASE("batch: a job whose target stayed unable to take it past its bound is undone; the batch goes on with the others") {
    Batch b(2);
    b.planner.plans = {{"aaaa", {Action::continue_job, "d1", "first"}}, {"bbbb", {Action::new_job, "d2", "second"}}};
    test::TransferFixture& full = b.jobs.job("first");
    // Its target has 50 bytes free under a 100-byte floor, and has not taken it for a day and two runs.
    full.nas.ops.handlers["receive_check"] = [](const nlohmann::json&) -> Result<nlohmann::json> {
        node::ReceiveCheckResult r;
        r.job_exists = true;
        return nlohmann::json(r);
    };
    full.nas.ops.handlers["info"] = [](const nlohmann::json& args) -> Result<nlohmann::json> {
        node::InfoResult info;
        for (const auto& dir : args.get<node::InfoRequest>().probe_dirs) {
            node::DirectoryInfo d;
            d.root.path = dir;
            d.free_bytes = 50;
            info.probes.push_back(d);
        }
        return nlohmann::json(info);
    };
    jobs::transfer::Ledger ledger;
    ledger.target_blocked = jobs::TargetBlocked{"nas", format_rfc3339(b.jobs.clock.now() - std::chrono::hours(25)), 2, "full"};
    REQUIRE(state::JobStore(full.state).write_ledger(full.job_id, ledger.to_json()).ok());
    runs::Planned planned = b.plan({"aaaa", "bbbb"});
    runs::BatchRunOptions options;
    options.started = b.jobs.clock.steady();
    options.budgets.min_free = 100;
    runs::BatchRun r = runs::run_batch(planned, {b.planner, b.jobs.runner(), b.jobs.clock, full.nodes}, options, {});

    CHECK(b.jobs.driven == std::vector<std::string>{"first", "second"});
    CHECK(planned.items[0].outcome == ItemOutcome::failed);
    REQUIRE(planned.items[0].result.has_value());
    CHECK(planned.items[0].result->error.code == "DISK_INSUFFICIENT");
    CHECK(planned.items[0].result->error.message.find("released") != std::string::npos);
    CHECK(b.jobs.state_of("first") == "cancelled");
    CHECK(full.holder(full.aliases[0]).empty());
    CHECK(planned.items[1].outcome == ItemOutcome::done);
    CHECK_FALSE(r.summary.ended);
    CHECK(runs::tally(planned.items).failures == 1);
}
