// runs::make_tier_plan: which torrents a policy chooses, in its order, and what each needs, from one
// read of the torrent lists and the cache's free space.
#include <doctest/doctest.h>

#include "lib/runs/tier_plan.hpp"

using namespace archctl;
using clients::qbittorrent::TorrentInfo;

namespace {

constexpr std::int64_t k_now = 1'800'000'000;
constexpr std::int64_t k_day = 86400;

TorrentInfo listed_torrent(const std::string& id, const std::string& category, std::int64_t size, std::int64_t completed_days_ago) {
    TorrentInfo t;
    t.id = id;
    t.infohash_v1 = id;
    t.name = "T-" + id;
    t.category = category;
    t.size = size;
    t.total_size = size;
    t.progress = 1;
    t.amount_left = 0;
    t.completion_on = k_now - completed_days_ago * k_day;
    t.added_on = t.completion_on - k_day;
    t.last_activity = t.completion_on;
    return t;
}

config::TierPolicy policy() {
    config::TierPolicy p;
    p.name = "box";
    p.cache = "cache";
    p.archive = {"nas"};
    p.keep_free = 1000;
    config::TimeBound b;
    b.age_s = 14 * k_day;
    b.text = "14d";
    p.archive_when.completed_before = b;
    p.archive_when.exclude_categories = {"keep"};
    return p;
}

runs::TierInput input(const config::TierPolicy& p, std::uint64_t free) {
    runs::TierInput in;
    in.policy = &p;
    in.free = free;
    in.total = 10000;
    in.now = k_now;
    in.room.free["nas"] = 100'000;  // room for every candidate
    in.cache = {listed_torrent("aa", "tv", 300, 20), listed_torrent("bb", "tv", 500, 40), listed_torrent("cc", "film", 400, 30),
                listed_torrent("dd", "tv", 900, 2), listed_torrent("ee", "keep", 700, 100)};
    return in;
}

}  // namespace

TEST_CASE("tier plan: candidates oldest first until the goal holds; excluded and young ones are not evicted") {
    auto p = policy();
    runs::TierInput in = input(p, 200);  // needs 800 more free
    in.archives["nas"] = {listed_torrent("cc", "film", 400, 30)};
    runs::TierPlan plan = runs::make_tier_plan(in);
    REQUIRE(plan.rows.size() >= 3);
    // oldest completed first: bb (40 d), cc (30 d), aa (20 d)
    CHECK(plan.rows[0].torrent.id == "bb");
    CHECK(plan.rows[0].action == runs::TierAction::archive_evict);
    CHECK(plan.rows[1].torrent.id == "cc");
    CHECK(plan.rows[1].action == runs::TierAction::evict);  // already complete on nas
    CHECK(plan.rows[1].archived_on == "nas");
    // 200 + 500 + 400 = 1100 >= 1000: aa is not needed
    CHECK(plan.rows[2].torrent.id == "aa");
    CHECK(plan.rows[2].action == runs::TierAction::none);
    CHECK(plan.projected_free == 1100);
    bool saw_keep = false;
    for (const auto& r : plan.rows) {
        CHECK(r.torrent.id != "dd");  // completed 2 days ago: not a candidate
        if (r.torrent.id == "ee") {
            saw_keep = true;
            CHECK(r.action == runs::TierAction::skipped);
            CHECK(r.why.find("keep") != std::string::npos);
        }
    }
    CHECK(saw_keep);
    runs::TierTotals t = plan.totals();
    CHECK(t.archive == 1);
    CHECK(t.archive_bytes == 500);
    CHECK(t.evict == 2);
    CHECK(t.evict_bytes == 900);
    CHECK(t.skipped == 1);
    CHECK(t.blocked == 0);
    auto j = plan.to_json();
    CHECK(j["goal_met_after"] == true);
    CHECK(j["totals"]["evict"]["count"] == 2);
    CHECK(j["totals"]["archive"]["count"] == 1);
}

TEST_CASE("tier plan: the goal already holds, nothing acts; a downloading torrent is blocked") {
    auto p = policy();
    runs::TierInput in = input(p, 5000);
    in.cache[0].progress = 0.5;
    in.cache[0].amount_left = 150;
    runs::TierPlan plan = runs::make_tier_plan(in);
    for (const auto& r : plan.rows) {
        CHECK(r.action != runs::TierAction::evict);
        CHECK(r.action != runs::TierAction::archive_evict);
        if (r.torrent.id == "aa") {
            CHECK(r.action == runs::TierAction::blocked);
            CHECK(r.why == "still downloading");
        }
    }
    CHECK(plan.projected_free == 5000);
}

TEST_CASE("tier plan: evict always / never, largest first, and max_used") {
    auto p = policy();
    p.evict = config::TierEvict::always;
    p.order = config::TierOrder::largest;
    runs::TierPlan plan = runs::make_tier_plan(input(p, 5000));
    REQUIRE(plan.rows.size() >= 3);
    CHECK(plan.rows[0].torrent.id == "bb");  // 500
    CHECK(plan.rows[1].torrent.id == "cc");  // 400
    CHECK(plan.rows[2].torrent.id == "aa");  // 300
    for (std::size_t i = 0; i < 3; ++i) CHECK(plan.rows[i].action == runs::TierAction::archive_evict);

    p.evict = config::TierEvict::never;
    plan = runs::make_tier_plan(input(p, 0));
    for (std::size_t i = 0; i < 3; ++i) CHECK(plan.rows[i].action == runs::TierAction::archive);
    CHECK(plan.projected_free == 0);

    p.keep_free.reset();
    p.max_used = 0.8;
    runs::TierGoal g = runs::tier_goal(p, 1500, 10000);
    CHECK(g.want_free == 2000);
    CHECK_FALSE(g.met(1500));
    CHECK(g.met(2000));
}

TEST_CASE("tier plan: each candidate goes to the first archive node with room above its floor; the nodes passed over say why") {
    auto p = policy();
    p.archive = {"nas", "nas2"};
    p.keep_free = 1300;
    runs::TierInput in = input(p, 200);
    in.room.floor = 100;
    in.room.free = {{"nas", 700}, {"nas2", 100'000}};  // nas: room for 600 above its floor
    runs::TierPlan plan = runs::make_tier_plan(in);
    REQUIRE(plan.rows.size() >= 3);
    // bb (500) fits on nas; cc (400) after it does not (100 left there); aa (300) neither.
    CHECK(plan.rows[0].torrent.id == "bb");
    CHECK(plan.rows[0].archive_to == "nas");
    CHECK(plan.rows[0].passed_over.empty());
    CHECK(plan.rows[1].torrent.id == "cc");
    CHECK(plan.rows[1].archive_to == "nas2");
    REQUIRE(plan.rows[1].passed_over.size() == 1);
    CHECK(plan.rows[1].passed_over[0].node == "nas");
    CHECK(plan.rows[1].passed_over[0].why == "no room: 700 B free, 100 B floor, 500 B planned there before it, needs 400 B");
    CHECK(plan.rows[2].archive_to == "nas2");
    auto j = plan.to_json();
    CHECK(j["rows"][1]["archive_to"] == "nas2");
    CHECK(j["rows"][1]["passed_over"] == nlohmann::json::array({{{"node", "nas"}, {"why", plan.rows[1].passed_over[0].why}}}));
    CHECK_FALSE(j["rows"][0].contains("passed_over"));

    // Before the fix the plan named the policy's first node whatever its room: a full nas.
    in.room.free["nas"] = 0;
    plan = runs::make_tier_plan(in);
    CHECK(plan.rows[0].archive_to == "nas2");
    CHECK(plan.rows[0].passed_over[0].why == "no room: 0 B free, 100 B floor, needs 500 B");
}

TEST_CASE("tier plan: an unreachable node is passed over; no node with room blocks the candidate and the next one makes up for it") {
    auto p = policy();
    p.archive = {"nas", "nas2"};
    runs::TierInput in = input(p, 200);  // the goal wants 800 more
    in.room.free = {{"nas2", 450}};
    in.room.unreachable = {{"nas", "unreachable: qBittorrent of 'nas' is unreachable"}};
    runs::TierPlan plan = runs::make_tier_plan(in);
    REQUIRE(plan.rows.size() >= 3);
    CHECK(plan.rows[0].torrent.id == "bb");  // 500: nowhere
    CHECK(plan.rows[0].action == runs::TierAction::blocked);
    CHECK(plan.rows[0].archive_to.empty());
    CHECK(plan.rows[0].why ==
          "no archive node can take it now (nas: unreachable: qBittorrent of 'nas' is unreachable; nas2: no room: 450 B free, 0 B floor, "
          "needs 500 B)");
    CHECK(plan.rows[1].torrent.id == "cc");  // 400 fits on nas2
    CHECK(plan.rows[1].action == runs::TierAction::archive_evict);
    CHECK(plan.rows[1].archive_to == "nas2");
    CHECK(plan.rows[1].passed_over[0].node == "nas");
    CHECK(plan.rows[2].torrent.id == "aa");  // 300: 50 left on nas2
    CHECK(plan.rows[2].action == runs::TierAction::blocked);
    CHECK(plan.projected_free == 600);
    CHECK_FALSE(plan.goal.met(plan.projected_free));
    CHECK(plan.totals().blocked == 2);
}

TEST_CASE("tier plan: a candidate with an unfinished archive job goes on with it; one whose target cannot take it waits") {
    auto p = policy();
    p.archive = {"nas", "nas2"};
    runs::TierInput in = input(p, 200);
    in.room.free = {{"nas", 100'000}, {"nas2", 100'000}};
    in.pending["bb"] = {"J-bb", "nas2", std::nullopt};
    in.pending["cc"] = {"J-cc", "nas", jobs::TargetBlocked{"nas", "2026-12-01T03:00:00Z", 2, "full"}};
    runs::TierPlan plan = runs::make_tier_plan(in);
    REQUIRE(plan.rows.size() >= 3);
    CHECK(plan.rows[0].torrent.id == "bb");
    CHECK(plan.rows[0].action == runs::TierAction::archive_evict);
    CHECK(plan.rows[0].archive_to == "nas2");
    CHECK(plan.rows[0].job == "J-bb");
    CHECK(plan.rows[1].torrent.id == "cc");
    CHECK(plan.rows[1].action == runs::TierAction::blocked);
    CHECK(plan.rows[1].why ==
          "job J-cc waits: 'nas' has not taken it since 2026-12-01T03:00:00Z (2 runs); a run that meets this again once 3 runs and 24 h "
          "have passed undoes and releases the job");
    CHECK(plan.rows[2].torrent.id == "aa");  // makes up for cc
    CHECK(plan.rows[2].action == runs::TierAction::archive_evict);
    CHECK(plan.rows[2].archive_to == "nas");
    auto j = plan.to_json();
    CHECK(j["rows"][0]["job"] == "J-bb");
    CHECK(j["rows"][1]["job"] == "J-cc");
}
