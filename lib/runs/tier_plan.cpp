#include "lib/runs/tier_plan.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/jobs/transfer/target_room.hpp"
#include "lib/select/filter.hpp"

namespace archctl::runs {
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

TierRow row_of(const TorrentInfo& t, TierAction action, std::string rule, std::string why) {
    TierRow r;
    r.torrent = t;
    r.action = action;
    r.rule = std::move(rule);
    r.why = std::move(why);
    return r;
}

std::uint64_t bytes_of(const TorrentInfo& t) { return t.size > 0 ? static_cast<std::uint64_t>(t.size) : 0; }

// Sort key of the policy's order; ties by name, then id, so the plan is the same every time.
void sort_rows(std::vector<TierRow>& rows, config::TierOrder order) {
    auto by = [order](const TierRow& a, const TierRow& b) {
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

std::string to_string(TierAction a) {
    switch (a) {
        case TierAction::evict: return "evict";
        case TierAction::archive_evict: return "archive_evict";
        case TierAction::archive: return "archive";
        case TierAction::none: return "none";
        case TierAction::skipped: return "skipped";
        case TierAction::blocked: return "blocked";
    }
    return "none";
}

bool archives(TierAction a) { return a == TierAction::archive || a == TierAction::archive_evict; }

bool evicts(TierAction a) { return a == TierAction::evict || a == TierAction::archive_evict; }

std::uint64_t TierRow::bytes() const { return bytes_of(torrent); }

TierTotals TierPlan::totals() const {
    TierTotals t;
    for (const auto& r : rows) {
        if (archives(r.action)) ++t.archive, t.archive_bytes += r.bytes();
        if (evicts(r.action)) ++t.evict, t.evict_bytes += r.bytes();
        if (r.action == TierAction::blocked) ++t.blocked;
        if (r.action == TierAction::skipped) ++t.skipped;
    }
    return t;
}

TierGoal tier_goal(const config::TierPolicy& policy, std::uint64_t free, std::uint64_t total) {
    TierGoal g;
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

NodeChoice choose_archive_node(const std::vector<std::string>& order, const ArchiveRoom& room, std::uint64_t bytes,
                               const std::map<std::string, std::uint64_t>& planned) {
    NodeChoice c;
    for (const auto& node : order) {
        if (auto down = room.unreachable.find(node); down != room.unreachable.end()) {
            c.passed_over.push_back({node, down->second});
            continue;
        }
        auto free = room.free.find(node);
        if (free == room.free.end()) {
            c.passed_over.push_back({node, "unreachable: its free space was not read"});
            continue;
        }
        const std::uint64_t above = free->second > room.floor ? free->second - room.floor : 0;
        auto p = planned.find(node);
        const std::uint64_t before = p == planned.end() ? 0 : p->second;
        const std::uint64_t left = above > before ? above - before : 0;
        if (left < bytes) {
            c.passed_over.push_back(
                {node, fmt::format("no room: {} free, {} floor{}, needs {}", format_size(free->second), format_size(room.floor),
                                   before ? fmt::format(", {} planned there before it", format_size(before)) : std::string(),
                                   format_size(bytes))});
            continue;
        }
        c.node = node;
        return c;
    }
    return c;
}

std::string passed_over_text(const std::vector<PassedOver>& passed) {
    std::string out;
    for (const auto& p : passed) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", p.node, p.why);
    return out;
}

namespace {

// Where an unarchived candidate goes, as the run will send it: its unfinished job's node (a job
// whose target cannot take it waits there: blocked), else the first node with room for it; no
// node: blocked. True when it will be archived (the row may act).
bool place(TierRow& row, const TierInput& in, std::map<std::string, std::uint64_t>& planned, bool acts) {
    if (auto job = in.pending.find(row.torrent.id); job != in.pending.end()) {
        row.job = job->second.job;
        row.archive_to = job->second.node;
        if (!job->second.blocked) return true;
        row.why = fmt::format("job {} waits: {}", row.job, jobs::transfer::waiting_text(*job->second.blocked));
        return false;
    }
    NodeChoice c = choose_archive_node(in.policy->archive, in.room, bytes_of(row.torrent), planned);
    row.archive_to = c.node;
    row.passed_over = std::move(c.passed_over);
    if (c.node.empty()) {
        row.why = "no archive node can take it now (" + passed_over_text(row.passed_over) + ")";
        return false;
    }
    if (acts) planned[c.node] += bytes_of(row.torrent);
    return true;
}

}  // namespace

TierPlan make_tier_plan(const TierInput& in) {
    const config::TierPolicy& policy = *in.policy;
    TierPlan p;
    p.policy = policy.name;
    p.goal = tier_goal(policy, in.free, in.total);
    p.cache_torrents = in.cache.size();
    std::vector<TierRow> chosen, others;
    config::Criteria unexcluded = policy.archive_when;
    unexcluded.exclude_categories.clear();
    unexcluded.exclude_tags.clear();
    unexcluded.exclude_names.clear();
    for (const auto& t : in.cache) {
        select::Verdict v = select::evaluate(policy.archive_when, t, in.now);
        if (v.chosen) {
            chosen.push_back(row_of(t, TierAction::none, v.rule, {}));
            continue;
        }
        if (v.skipped.empty()) continue;
        // Shown only when the policy's conditions would choose it otherwise.
        TorrentInfo done = t;
        done.progress = 1;
        done.amount_left = 0;
        if (!complete(t) && select::evaluate(policy.archive_when, done, in.now).chosen) {
            others.push_back(row_of(t, TierAction::blocked, {}, "still downloading"));
        } else if (select::evaluate(unexcluded, done, in.now).chosen) {
            others.push_back(row_of(t, TierAction::skipped, {}, v.skipped));
        }
    }
    sort_rows(chosen, policy.order);
    std::uint64_t projected = in.free;
    std::map<std::string, std::uint64_t> planned;  // bytes the plan sends to each archive node
    for (auto& row : chosen) {
        row.archived_on = archived_on(row.torrent, in.archives, policy.archive);
        const bool archived = !row.archived_on.empty();
        const bool acts = policy.evict != config::TierEvict::to_goal || !p.goal.met(projected);
        // A row that cannot be archived now (no node takes it, its job waits) is blocked; the
        // next candidate makes up for it, as in the run.
        if (!archived && !place(row, in, planned, acts) && acts) {
            row.action = TierAction::blocked;
            continue;
        }
        switch (policy.evict) {
            case config::TierEvict::never:
                row.action = archived ? TierAction::none : TierAction::archive;
                if (archived) row.why = fmt::format("archived on {}", row.archived_on);
                break;
            case config::TierEvict::always:
                row.action = archived ? TierAction::evict : TierAction::archive_evict;
                projected += bytes_of(row.torrent);
                break;
            case config::TierEvict::to_goal:
                if (!acts) {
                    row.action = TierAction::none;
                    row.why = "goal holds without it";
                } else {
                    row.action = archived ? TierAction::evict : TierAction::archive_evict;
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

nlohmann::json TierPlan::to_json() const {
    nlohmann::json rows_j = nlohmann::json::array();
    for (const auto& r : rows) {
        nlohmann::json j = {{"resource", r.torrent.id},
                            {"short_id", r.torrent.id.substr(0, 12)},
                            {"name", r.torrent.name},
                            {"bytes", r.bytes()},
                            {"category", r.torrent.category},
                            {"action", to_string(r.action)}};
        if (!r.rule.empty()) j["rule"] = r.rule;
        if (!r.why.empty()) j["why"] = r.why;
        if (!r.archived_on.empty()) j["archived_on"] = r.archived_on;
        if (archives(r.action) || !r.job.empty()) j["archive_to"] = r.archive_to;
        if (!r.job.empty()) j["job"] = r.job;
        if (!r.passed_over.empty()) {
            j["passed_over"] = nlohmann::json::array();
            for (const auto& po : r.passed_over) j["passed_over"].push_back({{"node", po.node}, {"why", po.why}});
        }
        rows_j.push_back(std::move(j));
    }
    const TierTotals t = totals();
    return {{"policy", policy},
            {"goal", {{"text", goal.text}, {"want_free", goal.want_free}, {"free", goal.free_now}, {"total", goal.total}, {"met", goal.met(goal.free_now)}}},
            {"projected_free", projected_free},
            {"goal_met_after", goal.met(projected_free)},
            {"cache_torrents", cache_torrents},
            {"rows", rows_j},
            {"totals", {{"archive", {{"count", t.archive}, {"bytes", t.archive_bytes}}}, {"evict", {{"count", t.evict}, {"bytes", t.evict_bytes}}},
                        {"skipped", t.skipped}, {"blocked", t.blocked}}}};
}

}  // namespace archctl::runs
