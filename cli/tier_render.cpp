#include "cli/tier_render.hpp"

#include <fmt/format.h>

#include "cli/tier.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/transfer/target_room.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

namespace {

using runs::TierAction;

std::string clip(const std::string& name, std::size_t width) {
    if (name.size() <= width) return name;
    std::size_t cut = width - 1;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    return name.substr(0, cut) + "…";
}

// Where the row goes and why the nodes before it were passed over: "archive to archive2 (not
// archive1: no room: 1.0 MiB free, 4.0 MiB floor, needs 5.0 MiB)", or the job it continues.
std::string target_text(const runs::TierRow& r) {
    if (!r.job.empty()) return fmt::format("archive to {} (job {} goes on)", r.archive_to, r.job);
    std::string out = "archive to " + r.archive_to;
    if (!r.passed_over.empty()) out += " (not " + runs::passed_over_text(r.passed_over) + ")";
    return out;
}

std::string action_text(const runs::TierRow& r) {
    switch (r.action) {
        case TierAction::evict: return fmt::format("evict (archived on {}; proven live first)", r.archived_on);
        case TierAction::archive_evict: return target_text(r) + ", then evict";
        case TierAction::archive: return target_text(r);
        case TierAction::none: return "— " + r.why;
        case TierAction::skipped: return "skipped: " + r.why;
        case TierAction::blocked: return "blocked: " + r.why;
    }
    return "";
}

std::string rows_table(const runs::TierPlan& p) {
    if (p.rows.empty()) return "  (no torrent on the cache matches the policy's archive_when)";
    ui::Table t({ui::Align::right, ui::Align::left, ui::Align::left, ui::Align::right, ui::Align::left, ui::Align::left}, "  ");
    t.add_row({"#", "resource", "name", "size", "rule", "action"});
    constexpr std::size_t k_shown = 50;
    for (std::size_t n = 0; n < p.rows.size() && n < k_shown; ++n) {
        const runs::TierRow& r = p.rows[n];
        t.add_row({std::to_string(n + 1), r.torrent.id.substr(0, 12), clip(r.torrent.name, 36), format_size(r.bytes()),
                   r.rule.empty() ? "—" : r.rule, action_text(r)});
    }
    std::string out = t.render();
    if (p.rows.size() > k_shown) out += fmt::format("\n  … and {} more (see --json)", p.rows.size() - k_shown);
    return out;
}

}  // namespace

std::string render_tier_plan(const config::TierPolicy& policy, const runs::TierPlan& p, const runs::TierLive& live,
                             const config::Config& config) {
    const config::NodeConfig* cache = config.node(policy.cache);
    std::string out = fmt::format("tier {}   cache {} → archive {}      goal {} on {}\n", policy.name, policy.cache,
                                  fmt::join(policy.archive, ", "), p.goal.text, cache ? cache->qb_root : "?");
    out += fmt::format("  now   {} free ({} torrents)   after this plan   {} free — {}\n", format_size(p.goal.free_now),
                       p.cache_torrents, format_size(p.projected_free),
                       p.goal.met(p.goal.free_now) ? "goal already met"
                       : p.goal.met(p.projected_free) ? "goal met"
                                                      : "goal NOT met: not enough candidates");
    for (const auto& u : live.unreachable) out += fmt::format("  unreachable  {} (its copies are not counted)\n", u);
    // What each archive node can take now, as the run will judge it.
    for (const auto& node : policy.archive)
        if (auto free = live.room.free.find(node); free != live.room.free.end())
            out += fmt::format("  archive {}  {} free, floor {}\n", node, format_size(free->second), format_size(live.room.floor));
    out += "\n" + rows_table(p);
    const runs::TierTotals t = p.totals();
    out += fmt::format("\n\n  archive  {} torrent(s)   {}", t.archive, format_size(t.archive_bytes));
    out += fmt::format("\n  evict    {} torrent(s)   {}   freed once each archive copy is proven live", t.evict, format_size(t.evict_bytes));
    if (t.blocked) out += fmt::format("\n  blocked  {} torrent(s)   cannot move now (see each row)", t.blocked);
    if (t.skipped) out += fmt::format("\n  skipped  {} torrent(s)   excluded by the policy", t.skipped);
    return out;
}

std::string tier_run_line(const runs::TierRun& run) {
    const char* outcome = run.outcome == runs::TierOutcome::stopped ? "; stopped, more to do"
                          : run.outcome == runs::TierOutcome::failed ? ""
                          : run.goal_met                             ? "; goal holds"
                                                                     : "; goal not met (this policy never evicts)";
    // What moved where, and what could not move and why.
    std::string moved = fmt::format("{} archived", run.archived);
    if (!run.archived_to.empty()) {
        std::vector<std::string> to;
        for (const auto& [node, n] : run.archived_to) to.push_back(fmt::format("{} to {}", n, node));
        moved += fmt::format(" ({})", fmt::join(to, ", "));
    }
    moved += fmt::format(", {} evicted", run.evicted);
    if (run.released) moved += fmt::format(", {} job(s) undone and released (their archive node could not take them)", run.released);
    if (run.no_room) moved += fmt::format(", {} with no archive node that can take them", run.no_room);
    if (!run.measured)
        return fmt::format("archctl: tier {}: {}; the cache's free space could not be read{}", run.policy, moved, outcome);
    return fmt::format("archctl: tier {}: {}, {} free (goal {}){}", run.policy, moved, format_size(run.free_after), run.goal.text, outcome);
}

std::string tier_status_line(const runs::TierPlan& plan) {
    const runs::TierTotals t = plan.totals();
    return fmt::format("   goal {}   now {} free{}   left: {} to archive, {} to evict", plan.goal.text, format_size(plan.goal.free_now),
                       plan.goal.met(plan.goal.free_now) ? " (met)" : "", t.archive, t.evict);
}

std::string tier_last_run_line(const state::TierRecord& r) {
    return fmt::format("\n      last run {}: {}, {} archived, {} evicted{}", r.ended.empty() ? "?" : r.ended, r.outcome.empty() ? "?" : r.outcome,
                       r.archived, r.evicted, r.error ? " — " + r.error->message : "");
}

namespace {

// The policy's archive jobs that wait because their target cannot take them: one line each,
// with the bound after which the job is undone and released; `out` gets [{job, node, since,
// runs, reason}].
std::string waiting_lines(const runs::TierLive& live, nlohmann::json& out) {
    out = nlohmann::json::array();
    std::string text;
    for (const auto& [resource, job] : live.pending) {
        if (!job.blocked) continue;
        nlohmann::json w = job.blocked->to_json();
        w["job"] = job.job;
        w["resource"] = resource;
        out.push_back(std::move(w));
        text += fmt::format("\n      waiting: job {} ({}): {}: {}", job.job, resource.substr(0, 12), jobs::transfer::waiting_text(*job.blocked),
                            job.blocked->reason);
    }
    return text;
}

}  // namespace

std::string render_policies(const config::Config& config, const state::StateDir* state, session::NodeSessions& nodes,
                            nlohmann::json& out) {
    out = nlohmann::json::array();
    if (config.tiers.empty()) return {};
    std::string text = "policies\n";
    for (const auto& [name, policy] : config.tiers) {
        nlohmann::json j = {{"policy", name}, {"cache", policy.cache}, {"archive", policy.archive}};
        std::string line = fmt::format("  {}  {} → {}", name, policy.cache, fmt::join(policy.archive, ", "));
        auto live = runs::read_tier_live(nodes, policy, config.min_free, state);
        if (live.ok()) {
            runs::TierPlan plan = runs::plan_tier(policy, live.value(), real_clock());
            const runs::TierTotals t = plan.totals();
            j["goal"] = plan.goal.text;
            j["want_free"] = plan.goal.want_free;
            j["free"] = plan.goal.free_now;
            j["goal_met"] = plan.goal.met(plan.goal.free_now);
            j["candidates_left"] = {{"archive", t.archive}, {"evict", t.evict}};
            line += tier_status_line(plan);
            line += waiting_lines(live.value(), j["waiting_for_room"]);
        } else {
            j["error"] = live.error().message;
            line += "   (" + live.error().message + ")";
        }
        if (state) {
            auto last = state::TierStore(*state).read(name);
            if (!last.ok()) line += "\n      last run unreadable: " + last.error().message;
            else if (!last.value()) line += "\n      never run";
            else {
                j["last_run"] = last.value()->to_json();
                line += tier_last_run_line(*last.value());
            }
        }
        text += line + "\n";
        out.push_back(std::move(j));
    }
    return text;
}

}  // namespace archctl::cli
