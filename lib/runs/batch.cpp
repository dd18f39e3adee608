#include "lib/runs/batch.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "lib/select/filter.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::runs {

const char* to_string(BatchOp op) {
    switch (op) {
        case BatchOp::archive: return "archive";
        case BatchOp::unarchive: return "unarchive";
        case BatchOp::evict: return "evict";
    }
    return "archive";
}

std::string to_string(Action action, BatchOp op) {
    switch (action) {
        case Action::new_job: return to_string(op);
        case Action::continue_job: return "continue";
        case Action::nothing_to_do: return "nothing_to_do";
        case Action::refused: return "refused";
        case Action::skipped: return "skipped";
        case Action::stopped: return "stopped";
    }
    return "refused";
}

const char* to_string(ItemOutcome outcome) {
    switch (outcome) {
        case ItemOutcome::not_run: return "not_run";
        case ItemOutcome::done: return "done";
        case ItemOutcome::stopped: return "stopped";
        case ItemOutcome::failed: return "failed";
        case ItemOutcome::nothing_to_do: return "nothing_to_do";
    }
    return "not_run";
}

BatchItem item_of(std::string res, std::string id, std::string name, std::string rule) {
    BatchItem it;
    it.res = std::move(res);
    it.id = std::move(id);
    it.short_id = it.id.empty() ? it.res : it.id.substr(0, 12);
    it.name = std::move(name);
    it.rule = std::move(rule);
    return it;
}

void prepare_item(ItemPlanner& planner, Clock& clock, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot,
                  BatchItem& it) {
    if (it.action == Action::skipped) return;
    it.action = Action::new_job;
    it.reason.clear();
    it.error.reset();
    it.existing_job.reset();
    it.transfer.reset();
    it.evict.reset();
    it.prepared_at = clock.steady();
    planner.prepare(it, source, mode, snapshot);
}

namespace {

// The node whose torrent list the filters read.
Result<std::string> source_node(jobs::Nodes& nodes, const BatchSpec& spec) {
    if (!spec.from.empty()) {
        auto node = nodes.get(spec.from);
        if (!node.ok()) return node.take_error();
        return spec.from;
    }
    config::Role role = spec.op == BatchOp::unarchive ? config::Role::archive : config::Role::cache;
    auto candidates = nodes.with_role(role);
    if (candidates.size() == 1) return candidates.front()->name();
    std::vector<std::string> names;
    for (auto* n : candidates) names.push_back(n->name());
    return Error(ErrorCode::USAGE,
                 candidates.empty() ? fmt::format("no {} node is configured to select from", config::to_string(role))
                                    : fmt::format("filters read one node's torrents, and there are several {} nodes ({})",
                                                  config::to_string(role), fmt::join(names, ", ")),
                 "pass --from NODE");
}

bool matches_prefix(const clients::qbittorrent::TorrentInfo& t, const std::string& res) {
    std::string lower = res;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    auto starts = [&](const std::string& h) { return !h.empty() && h.rfind(lower, 0) == 0; };
    return starts(t.id) || starts(t.infohash_v1) || starts(t.infohash_v2);
}

bool named(const std::vector<std::string>& res, const clients::qbittorrent::TorrentInfo& t) {
    return std::any_of(res.begin(), res.end(), [&](const auto& r) { return matches_prefix(t, r); });
}

bool fully_downloaded(const clients::qbittorrent::TorrentInfo& t) { return t.progress >= 1.0 && t.amount_left <= 0; }

// The criteria's conditions that name torrents (category, tag, name glob) hold for `t`, and no
// exclusion blocks it; true when the criteria set none of those conditions.
bool named_by(const config::Criteria& c, const clients::qbittorrent::TorrentInfo& t) {
    auto in = [](const std::vector<std::string>& list, const std::string& v) { return std::find(list.begin(), list.end(), v) != list.end(); };
    auto any_tag = [&](const std::vector<std::string>& list) {
        return std::any_of(t.tags.begin(), t.tags.end(), [&](const std::string& tag) { return in(list, tag); });
    };
    auto any_name = [&](const std::vector<std::string>& list) {
        return std::any_of(list.begin(), list.end(), [&](const std::string& glob) { return select::glob_match(glob, t.name); });
    };
    if (in(c.exclude_categories, t.category) || any_tag(c.exclude_tags) || any_name(c.exclude_names)) return false;
    std::vector<bool> holds;
    if (!c.categories.empty()) holds.push_back(in(c.categories, t.category));
    if (!c.tags.empty()) holds.push_back(any_tag(c.tags));
    if (!c.names.empty()) holds.push_back(any_name(c.names));
    if (holds.empty()) return true;
    return c.any ? std::find(holds.begin(), holds.end(), true) != holds.end()
                 : std::find(holds.begin(), holds.end(), false) == holds.end();
}

// The chosen resources, in the source's name order (several RES alone: as given).
Result<Planned> choose(jobs::evidence::Snapshot& snapshot, Clock& clock, const BatchSpec& spec) {
    Planned p;
    if (!spec.criteria) {
        for (const auto& res : spec.res) p.items.push_back(item_of(res, {}, {}, {}));
        p.source = spec.from;
        return p;
    }
    ARCHCTL_TRY_ASSIGN(p.source, source_node(snapshot.nodes(), spec));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * node, snapshot.nodes().get(p.source));
    const auto& listed = snapshot.torrents(*node);
    if (!listed.ok()) return listed.error();
    std::vector<const clients::qbittorrent::TorrentInfo*> torrents;
    for (const auto& t : listed.value()) torrents.push_back(&t);
    std::sort(torrents.begin(), torrents.end(), [](const auto* a, const auto* b) { return std::tie(a->name, a->id) < std::tie(b->name, b->id); });
    // Several RES with filters: the filters narrow the list.
    for (const auto& res : spec.res)
        if (std::none_of(torrents.begin(), torrents.end(), [&](const auto* t) { return matches_prefix(*t, res); })) {
            BatchItem it = item_of(res, {}, {}, {});
            it.action = Action::skipped;
            it.reason = fmt::format("not on '{}'", p.source);
            p.items.push_back(std::move(it));
        }
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(clock.now().time_since_epoch()).count();
    for (const auto* tp : torrents) {
        const auto& t = *tp;
        if (!spec.res.empty() && !named(spec.res, t)) continue;
        select::Verdict v = select::evaluate(*spec.criteria, t, now);
        if (!v.chosen) {
            std::string why = v.skipped;
            // A torrent still downloading fails the conditions on completion (completed, seeding,
            // ratio…) as much as the completion rule itself: it is passed over when the filters
            // that name torrents (category, tag, name, exclusions) would keep it.
            if (why.empty() && !fully_downloaded(t) && named_by(*spec.criteria, t)) why = "still downloading";
            if (why.empty()) continue;
            if (why == "still downloading") why = fmt::format("still downloading ({:.0f}%)", std::floor(std::clamp(t.progress, 0.0, 1.0) * 100.0));
            p.not_chosen.push_back({t.id, t.id.substr(0, 12), t.name, std::move(why)});
            continue;
        }
        p.items.push_back(item_of(t.id, t.id, t.name, v.rule));
    }
    return p;
}

}  // namespace

Result<Planned> plan_batch(jobs::Nodes& nodes, Clock& clock, const BatchSpec& spec, ItemPlanner& planner, PlanMode mode) {
    jobs::transfer::PlanSnapshot snapshot(nodes);
    ARCHCTL_TRY_ASSIGN(Planned p, choose(snapshot.live, clock, spec));
    std::set<std::string> seen;
    for (auto& it : p.items) {
        prepare_item(planner, clock, p.source, mode, snapshot, it);
        // The same resource named twice (a prefix and its full hash): one job.
        if (!it.id.empty() && !seen.insert(it.id).second) {
            it.action = Action::nothing_to_do;
            it.reason = "named twice: one job does it";
            it.transfer.reset();
            it.evict.reset();
            it.existing_job.reset();
        }
    }
    return p;
}

Totals totals_of(const std::vector<BatchItem>& items) {
    Totals t;
    t.resources = items.size();
    for (const auto& it : items) {
        switch (it.action) {
            case Action::new_job:
                ++t.new_jobs;
                t.files += it.files;
                t.bytes += it.bytes;
                break;
            case Action::continue_job: ++t.continued; break;
            case Action::nothing_to_do: ++t.nothing; break;
            case Action::skipped: ++t.skipped; break;
            case Action::refused:
            case Action::stopped: ++t.refused; break;
        }
    }
    return t;
}

std::string batch_digest(const std::vector<BatchItem>& items, BatchOp op) {
    std::string facts = to_string(op);
    for (const auto& it : items)
        if (it.action == Action::new_job) facts += fmt::format("\n{} {}", it.id, it.digest);
    return torrent::sha256_hex(facts);
}

Tally tally(const std::vector<BatchItem>& items) {
    Tally t;
    for (const auto& it : items) {
        if (it.outcome == ItemOutcome::failed) {
            ++t.failures;
            if (!t.first_failed) t.first_failed = &it;
        }
        if (it.outcome == ItemOutcome::stopped || it.outcome == ItemOutcome::not_run) ++t.unfinished;
    }
    return t;
}

}  // namespace archctl::runs
