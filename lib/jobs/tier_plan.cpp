#include "lib/jobs/tier_plan.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/select/filter.hpp"

namespace archctl::tier {
namespace {

using clients::qbittorrent::TorrentInfo;

bool same_resource(const TorrentInfo& a, const TorrentInfo& b) {
    auto eq = [](const std::string& x, const std::string& y) { return !x.empty() && x == y; };
    return eq(a.id, b.id) || eq(a.infohash_v1, b.infohash_v1) || eq(a.infohash_v2, b.infohash_v2);
}

bool complete(const TorrentInfo& t) {
    using clients::qbittorrent::RunState;
    return t.progress >= 1.0 && t.amount_left == 0 && t.run_state != RunState::error && t.run_state != RunState::missing_files;
}

Row row_of(const TorrentInfo& t, Action action, std::string rule, std::string why) {
    Row r;
    r.torrent = t;
    r.action = action;
    r.rule = std::move(rule);
    r.why = std::move(why);
    return r;
}

std::uint64_t bytes_of(const TorrentInfo& t) { return t.size > 0 ? static_cast<std::uint64_t>(t.size) : 0; }

// Sort key of the policy's order; ties by name, then id, so the plan is the same every time.
void sort_rows(std::vector<Row>& rows, config::TierOrder order) {
    auto by = [order](const Row& a, const Row& b) {
        const TorrentInfo& x = a.torrent;
        const TorrentInfo& y = b.torrent;
        switch (order) {
            case config::TierOrder::oldest: {
                // Never completed (0) sorts last.
                auto key = [](const TorrentInfo& t) { return t.completion_on > 0 ? t.completion_on : INT64_MAX; };
                if (key(x) != key(y)) return key(x) < key(y);
                break;
            }
            case config::TierOrder::largest:
                if (x.size != y.size) return x.size > y.size;
                break;
            case config::TierOrder::least_active: {
                auto key = [](const TorrentInfo& t) { return t.last_activity > 0 ? t.last_activity : t.added_on; };
                if (key(x) != key(y)) return key(x) < key(y);
                break;
            }
        }
        return std::tie(x.name, x.id) < std::tie(y.name, y.id);
    };
    std::stable_sort(rows.begin(), rows.end(), by);
}

}  // namespace

std::string to_string(Action a) {
    switch (a) {
        case Action::evict: return "evict";
        case Action::archive_evict: return "archive_evict";
        case Action::archive: return "archive";
        case Action::none: return "none";
        case Action::skipped: return "skipped";
        case Action::blocked: return "blocked";
    }
    return "none";
}

std::string Goal::describe() const { return text; }

Goal goal_of(const config::TierPolicy& policy, std::uint64_t free, std::uint64_t total) {
    Goal g;
    g.free_now = free;
    g.total = total;
    if (policy.keep_free) {
        g.want_free = *policy.keep_free;
        g.text = fmt::format("keep {} free", format_size(g.want_free));
    } else if (policy.max_used) {
        double used_max = std::floor(*policy.max_used * static_cast<double>(total));
        g.want_free = total - std::min<std::uint64_t>(total, static_cast<std::uint64_t>(used_max));
        g.text = fmt::format("at most {:.0f}% used (keep {} free of {})", *policy.max_used * 100, format_size(g.want_free), format_size(total));
    }
    return g;
}

std::string archived_on(const TorrentInfo& t, const std::map<std::string, std::vector<TorrentInfo>>& archives,
                        const std::vector<std::string>& order) {
    for (const auto& node : order) {
        auto it = archives.find(node);
        if (it == archives.end()) continue;
        for (const auto& a : it->second)
            if (same_resource(t, a) && complete(a) && a.size >= t.size) return node;
    }
    return {};
}

Plan make_plan(const Input& in) {
    const config::TierPolicy& policy = *in.policy;
    Plan p;
    p.policy = policy.name;
    p.goal = goal_of(policy, in.free, in.total);
    p.cache_torrents = in.cache.size();
    std::vector<Row> chosen, others;
    config::Criteria unexcluded = policy.archive_when;
    unexcluded.exclude_categories.clear();
    unexcluded.exclude_tags.clear();
    unexcluded.exclude_names.clear();
    for (const auto& t : in.cache) {
        select::Verdict v = select::evaluate(policy.archive_when, t, in.now);
        if (v.chosen) {
            chosen.push_back(row_of(t, Action::none, v.rule, {}));
            continue;
        }
        if (v.skipped.empty()) continue;
        // Shown only when the policy's conditions would choose it otherwise.
        TorrentInfo done = t;
        done.progress = 1;
        done.amount_left = 0;
        if (!complete(t) && select::evaluate(policy.archive_when, done, in.now).chosen) {
            others.push_back(row_of(t, Action::blocked, {}, "still downloading"));
        } else if (select::evaluate(unexcluded, done, in.now).chosen) {
            others.push_back(row_of(t, Action::skipped, {}, v.skipped));
        }
    }
    sort_rows(chosen, policy.order);
    std::uint64_t projected = in.free;
    for (auto& row : chosen) {
        row.archived_on = archived_on(row.torrent, in.archives, policy.archive);
        row.archive_to = policy.archive.empty() ? std::string() : policy.archive.front();
        bool archived = !row.archived_on.empty();
        switch (policy.evict) {
            case config::TierEvict::never:
                row.action = archived ? Action::none : Action::archive;
                if (archived) row.why = fmt::format("archived on {}", row.archived_on);
                break;
            case config::TierEvict::always:
                row.action = archived ? Action::evict : Action::archive_evict;
                projected += bytes_of(row.torrent);
                break;
            case config::TierEvict::to_goal:
                if (p.goal.met(projected)) {
                    row.action = Action::none;
                    row.why = "goal holds without it";
                } else {
                    row.action = archived ? Action::evict : Action::archive_evict;
                    projected += bytes_of(row.torrent);
                }
                break;
        }
    }
    p.projected_free = projected;
    p.rows = std::move(chosen);
    sort_rows(others, config::TierOrder::oldest);
    for (auto& r : others) p.rows.push_back(std::move(r));
    return p;
}

nlohmann::json Plan::to_json() const {
    nlohmann::json rows_j = nlohmann::json::array();
    std::uint64_t archive_n = 0, archive_bytes = 0, evict_n = 0, evict_bytes = 0, skipped = 0, blocked = 0;
    for (const auto& r : rows) {
        nlohmann::json j = {{"resource", r.torrent.id},
                            {"short_id", r.torrent.id.substr(0, 12)},
                            {"name", r.torrent.name},
                            {"bytes", bytes_of(r.torrent)},
                            {"category", r.torrent.category},
                            {"action", to_string(r.action)}};
        if (!r.rule.empty()) j["rule"] = r.rule;
        if (!r.why.empty()) j["why"] = r.why;
        if (!r.archived_on.empty()) j["archived_on"] = r.archived_on;
        if (r.action == Action::archive || r.action == Action::archive_evict) {
            j["archive_to"] = r.archive_to;
            ++archive_n;
            archive_bytes += bytes_of(r.torrent);
        }
        if (r.action == Action::evict || r.action == Action::archive_evict) {
            ++evict_n;
            evict_bytes += bytes_of(r.torrent);
        }
        if (r.action == Action::skipped) ++skipped;
        if (r.action == Action::blocked) ++blocked;
        rows_j.push_back(std::move(j));
    }
    return {{"policy", policy},
            {"goal", {{"text", goal.text}, {"want_free", goal.want_free}, {"free", goal.free_now}, {"total", goal.total}, {"met", goal.met(goal.free_now)}}},
            {"projected_free", projected_free},
            {"goal_met_after", goal.met(projected_free)},
            {"cache_torrents", cache_torrents},
            {"rows", rows_j},
            {"totals", {{"archive", {{"count", archive_n}, {"bytes", archive_bytes}}}, {"evict", {{"count", evict_n}, {"bytes", evict_bytes}}},
                        {"skipped", skipped}, {"blocked", blocked}}}};
}

}  // namespace archctl::tier
