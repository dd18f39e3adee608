#include <doctest/doctest.h>

#include "lib/select/filter.hpp"

using namespace archctl;
using namespace archctl::select;
using archctl::config::Criteria;
using archctl::config::TimeBound;
namespace qb = archctl::clients::qbittorrent;

namespace {

constexpr std::int64_t k_day = 86400;
constexpr std::int64_t k_now = 1'800'000'000;

// A complete, seeding torrent: finished 212 days ago, ratio 3.1, seeding 20 days, last active 3 days
// ago, 9 GiB, category tv, tags x and y.
qb::TorrentInfo seeding() {
    qb::TorrentInfo t;
    t.id = "aa00000000000000000000000000000000000001";
    t.name = "Show.S01";
    t.state = "stalledUP";
    t.progress = 1.0;
    t.amount_left = 0;
    t.size = std::int64_t{9} << 30;
    t.category = "tv";
    t.tags = {"x", "y"};
    t.added_on = k_now - 300 * k_day;
    t.completion_on = k_now - 212 * k_day;
    t.last_activity = k_now - 3 * k_day - 5;
    t.seeding_time = 20 * k_day + 100;
    t.ratio = 3.1;
    return t;
}

TimeBound age(std::int64_t seconds) {
    TimeBound b;
    b.age_s = seconds;
    return b;
}

}  // namespace

TEST_CASE("glob_match: fnmatch without FNM_PATHNAME, case-sensitive") {
    CHECK(glob_match("Show*", "Show.S01"));
    CHECK(glob_match("*", "a/b"));
    CHECK(glob_match("a*c", "a/b/c"));
    CHECK(glob_match("S?ow.[Ss]01", "Show.S01"));
    CHECK_FALSE(glob_match("show*", "Show.S01"));
    CHECK_FALSE(glob_match("Show", "Show.S01"));
}

TEST_CASE("format_age: whole days from one day, then hours, minutes, seconds") {
    CHECK(format_age(212 * k_day + 7) == "212 d");
    CHECK(format_age(k_day) == "1 d");
    CHECK(format_age(k_day - 1) == "23 h");
    CHECK(format_age(59) == "59 s");
    CHECK(format_age(3599) == "59 min");
    CHECK(format_age(-5) == "0 s");
}

TEST_CASE("empty criteria choose nothing; all chooses everything complete") {
    Criteria c;
    Verdict v = evaluate(c, seeding(), k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.rule.empty());
    CHECK(v.skipped.empty());
    c.exclude_categories = {"keep"};
    CHECK_FALSE(evaluate(c, seeding(), k_now).chosen);
    c.all = true;
    v = evaluate(c, seeding(), k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "all");
}

TEST_CASE("each condition holds or not, with its rule text") {
    const qb::TorrentInfo t = seeding();
    auto one = [&](auto set) {
        Criteria c;
        set(c);
        return evaluate(c, t, k_now);
    };
    struct Case {
        const char* what;
        Verdict yes, no;
        const char* rule;
    };
    std::vector<Case> cases = {
        {"category", one([](Criteria& c) { c.categories = {"movies", "tv"}; }),
         one([](Criteria& c) { c.categories = {"movies"}; }), "category tv"},
        {"tag", one([](Criteria& c) { c.tags = {"y", "z"}; }), one([](Criteria& c) { c.tags = {"z"}; }), "tag y"},
        {"name", one([](Criteria& c) { c.names = {"Movie*", "Show*"}; }), one([](Criteria& c) { c.names = {"show*"}; }),
         "name 'Show*'"},
        {"completed_before age", one([](Criteria& c) { c.completed_before = age(14 * k_day); }),
         one([](Criteria& c) { c.completed_before = age(213 * k_day); }), "completed 212 d ago"},
        {"min_ratio", one([](Criteria& c) { c.min_ratio = 3.1; }), one([](Criteria& c) { c.min_ratio = 3.2; }), "ratio 3.10"},
        {"min_seeding_time", one([](Criteria& c) { c.min_seeding_time_s = 20 * k_day; }),
         one([](Criteria& c) { c.min_seeding_time_s = 21 * k_day; }), "seeding 20 d"},
        {"inactive_for", one([](Criteria& c) { c.inactive_for_s = 3 * k_day; }),
         one([](Criteria& c) { c.inactive_for_s = 4 * k_day; }), "inactive 3 d"},
        {"larger_than", one([](Criteria& c) { c.larger_than = std::uint64_t{8} << 30; }),
         one([](Criteria& c) { c.larger_than = std::uint64_t{9} << 30; }), "size 9.0 GiB"},
    };
    for (const Case& k : cases) {
        CAPTURE(k.what);
        CHECK(k.yes.chosen);
        CHECK(k.yes.rule == k.rule);
        CHECK(k.yes.skipped.empty());
        CHECK_FALSE(k.no.chosen);
        CHECK(k.no.rule.empty());
        CHECK(k.no.skipped.empty());
    }
}

TEST_CASE("completed_before: a date bound, and never-completed torrents") {
    qb::TorrentInfo t = seeding();
    Criteria c;
    TimeBound date;
    date.epoch = t.completion_on;
    c.completed_before = date;
    CHECK(evaluate(c, t, k_now).chosen);
    c.completed_before->epoch = t.completion_on - 1;
    CHECK_FALSE(evaluate(c, t, k_now).chosen);
    c.completed_before = age(0);
    t.completion_on = 0;
    CHECK_FALSE(evaluate(c, t, k_now).chosen);
}

TEST_CASE("inactive_for: never active counts from when it was added; hours under a day") {
    qb::TorrentInfo t = seeding();
    t.last_activity = 0;
    Criteria c;
    c.inactive_for_s = 299 * k_day;
    Verdict v = evaluate(c, t, k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "inactive 300 d");
    t.added_on = 0;
    CHECK_FALSE(evaluate(c, t, k_now).chosen);
    t = seeding();
    t.last_activity = k_now - 5 * 3600 - 10;
    c.inactive_for_s = 3600;
    v = evaluate(c, t, k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "inactive 5 h");
}

TEST_CASE("all conditions must hold unless any is set; any names the first that holds") {
    const qb::TorrentInfo t = seeding();
    Criteria c;
    c.categories = {"tv"};
    c.completed_before = age(14 * k_day);
    c.min_ratio = 2.0;
    Verdict v = evaluate(c, t, k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "category tv, completed 212 d ago, ratio 3.10");

    c.min_ratio = 5.0;
    CHECK_FALSE(evaluate(c, t, k_now).chosen);
    c.any = true;
    v = evaluate(c, t, k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "category tv");
    c.categories = {"movies"};
    v = evaluate(c, t, k_now);
    CHECK(v.chosen);
    CHECK(v.rule == "completed 212 d ago");
    c.completed_before = age(300 * k_day);
    CHECK_FALSE(evaluate(c, t, k_now).chosen);

    // --all narrows nothing: with other conditions and any=false they decide
    Criteria all;
    all.all = true;
    all.tags = {"z"};
    CHECK_FALSE(evaluate(all, t, k_now).chosen);
    all.tags = {"x"};
    CHECK(evaluate(all, t, k_now).rule == "tag x");
}

TEST_CASE("exclusions win over conditions and say why") {
    const qb::TorrentInfo t = seeding();
    Criteria c;
    c.all = true;
    c.exclude_categories = {"keep", "tv"};
    Verdict v = evaluate(c, t, k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.skipped == "category tv");
    CHECK(v.rule == "all");

    c.exclude_categories = {"keep"};
    c.exclude_tags = {"pinned", "y"};
    v = evaluate(c, t, k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.skipped == "tag y");

    c.exclude_tags.clear();
    c.exclude_names = {"*S01"};
    v = evaluate(c, t, k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.skipped == "name '*S01'");

    c.exclude_names = {"*S02"};
    CHECK(evaluate(c, t, k_now).chosen);

    // An exclusion on a torrent the conditions do not choose is not news.
    Criteria narrow;
    narrow.categories = {"movies"};
    narrow.exclude_tags = {"x"};
    v = evaluate(narrow, t, k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.skipped.empty());
}

TEST_CASE("a torrent still downloading is never chosen") {
    Criteria c;
    c.all = true;
    qb::TorrentInfo t = seeding();
    t.progress = 0.5;
    t.amount_left = 100;
    Verdict v = evaluate(c, t, k_now);
    CHECK_FALSE(v.chosen);
    CHECK(v.skipped == "still downloading");
    t.progress = 1.0;
    t.amount_left = 1;
    CHECK(evaluate(c, t, k_now).skipped == "still downloading");
    t.amount_left = 0;
    t.progress = 0.999;
    CHECK(evaluate(c, t, k_now).skipped == "still downloading");
    // an exclusion is named first
    c.exclude_categories = {"tv"};
    CHECK(evaluate(c, t, k_now).skipped == "category tv");
}
