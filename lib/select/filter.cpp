#include "lib/select/filter.hpp"

#include <algorithm>
#include <fnmatch.h>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "lib/base/units.hpp"

namespace archctl::select {
namespace {

namespace qb = clients::qbittorrent;

// One condition the criteria set: whether it holds for the torrent, and its rule text if so.
struct Condition {
    bool holds = false;
    std::string rule;
};

bool contains(const std::vector<std::string>& list, const std::string& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

// The first entry of `list` among the torrent's tags, if any.
std::optional<std::string> tag_in(const std::vector<std::string>& list, const qb::TorrentInfo& t) {
    for (const std::string& tag : t.tags)
        if (contains(list, tag)) return tag;
    return std::nullopt;
}

// The first pattern of `list` that matches the torrent's name, if any.
std::optional<std::string> name_in(const std::vector<std::string>& list, const qb::TorrentInfo& t) {
    for (const std::string& pattern : list)
        if (glob_match(pattern, t.name)) return pattern;
    return std::nullopt;
}

std::vector<Condition> conditions(const config::Criteria& c, const qb::TorrentInfo& t, std::int64_t now) {
    std::vector<Condition> out;
    if (!c.categories.empty()) out.push_back({contains(c.categories, t.category), "category " + t.category});
    if (!c.tags.empty()) {
        auto tag = tag_in(c.tags, t);
        out.push_back({tag.has_value(), "tag " + tag.value_or("")});
    }
    if (!c.names.empty()) {
        auto pattern = name_in(c.names, t);
        out.push_back({pattern.has_value(), fmt::format("name '{}'", pattern.value_or(""))});
    }
    if (c.completed_before) {
        bool holds = t.completion_on > 0 && t.completion_on <= c.completed_before->resolve(now);
        out.push_back({holds, fmt::format("completed {} ago", format_age(now - t.completion_on))});
    }
    if (c.min_ratio) out.push_back({t.ratio >= *c.min_ratio, fmt::format("ratio {:.2f}", t.ratio)});
    if (c.min_seeding_time_s)
        out.push_back({t.seeding_time >= *c.min_seeding_time_s, "seeding " + format_age(t.seeding_time)});
    if (c.inactive_for_s) {
        std::int64_t since = t.last_activity > 0 ? t.last_activity : t.added_on;
        bool holds = since > 0 && now - since >= *c.inactive_for_s;
        out.push_back({holds, "inactive " + format_age(now - since)});
    }
    if (c.larger_than) {
        bool holds = t.size > 0 && static_cast<std::uint64_t>(t.size) > *c.larger_than;
        out.push_back({holds, "size " + format_size(static_cast<std::uint64_t>(std::max<std::int64_t>(t.size, 0)))});
    }
    return out;
}

// The rule that chooses the torrent, or nullopt when the conditions do not hold.
std::optional<std::string> match(const config::Criteria& c, const std::vector<Condition>& conds) {
    if (conds.empty()) return c.all ? std::optional<std::string>("all") : std::nullopt;
    if (c.any) {
        for (const Condition& cond : conds)
            if (cond.holds) return cond.rule;
        return c.all ? std::optional<std::string>("all") : std::nullopt;
    }
    std::string rule;
    for (const Condition& cond : conds) {
        if (!cond.holds) return std::nullopt;
        rule += (rule.empty() ? "" : ", ") + cond.rule;
    }
    return rule;
}

// Why an exclusion blocks the torrent, or "" when none does.
std::string excluded(const config::Criteria& c, const qb::TorrentInfo& t) {
    if (contains(c.exclude_categories, t.category)) return "category " + t.category;
    if (auto tag = tag_in(c.exclude_tags, t)) return "tag " + *tag;
    if (auto pattern = name_in(c.exclude_names, t)) return fmt::format("name '{}'", *pattern);
    return {};
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& text) {
    return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string format_age(std::int64_t seconds) {
    seconds = std::max<std::int64_t>(seconds, 0);
    if (seconds >= 86400) return fmt::format("{} d", seconds / 86400);
    if (seconds >= 3600) return fmt::format("{} h", seconds / 3600);
    if (seconds >= 60) return fmt::format("{} min", seconds / 60);
    return fmt::format("{} s", seconds);
}

Verdict evaluate(const config::Criteria& c, const qb::TorrentInfo& t, std::int64_t now) {
    Verdict v;
    auto rule = match(c, conditions(c, t, now));
    if (!rule) return v;
    v.rule = *rule;
    v.skipped = excluded(c, t);
    if (v.skipped.empty() && (t.progress < 1.0 || t.amount_left > 0)) v.skipped = "still downloading";
    v.chosen = v.skipped.empty();
    return v;
}

}  // namespace archctl::select
