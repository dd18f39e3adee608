#include "lib/runs/tier_steps.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/jobs/core/outage.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/routes/routes.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::runs {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

void TierSteps::note(const JobOf& job, const std::string& outcome, const std::string& message) {
    m_run.steps.push_back({job.resource, job.what, job.id, outcome, message, job.node});
}

void TierSteps::fail(const Error& e) {
    ++m_run.failed;
    if (!m_run.first_error) m_run.first_error = e;
}

void TierSteps::stop(const std::string& text) { m_run.stop = text; }

bool TierSteps::can_start() {
    if (m_many.can_start()) return true;
    stop(m_many.summary().ended->text);
    return false;
}

Turn TierSteps::drive(const JobOf& job) {
    if (!can_start()) return Turn::ended;
    const JobRun& j = m_many.drive(job.id);
    const jobs::RunResult& r = j.result;
    switch (j.outcome) {
        case JobOutcome::done:
            note(job, "done");
            m_env.say(fmt::format("archctl: job {} done", job.id));
            return Turn::done;
        case JobOutcome::stopped:
            note(job, "stopped", r.stop_text);
            m_env.say(fmt::format("archctl: job {} is at {}; nothing is lost ({})", job.id, r.step, r.stop_text));
            stop(r.stop_text);
            if (job.what == "archive") m_had_turn.insert(job.resource);
            // Its target cannot take it: no other job of this run is sent there.
            if (j.target_room) m_full[j.target_room->blocked.node] = j.target_room->blocked.reason;
            return ends_run(j.stop) && !j.target_room ? Turn::ended : Turn::stopped;
        case JobOutcome::locked: {
            // Another archctl drives it (an overlapping cron run): it goes on there.
            const std::string text = jobs::report::driven_elsewhere(m_env.state, job.id);
            note(job, "stopped", text);
            m_env.say(fmt::format("archctl: {}; skipped here", text));
            stop(text);
            if (job.what == "archive") m_had_turn.insert(job.resource);
            return Turn::stopped;
        }
        case JobOutcome::failed: break;
    }
    if (j.target_room && j.target_room->kind == jobs::transfer::TargetRoom::Kind::released) {
        // Undone and released: not a failure of the run; the candidate goes to its next node.
        const jobs::TargetBlocked& b = j.target_room->blocked;
        note(job, "released", r.error.message);
        ++m_run.released;
        m_full[b.node] = b.reason;
        m_env.say(fmt::format("archctl: job {} undone and released: '{}' had not taken it since {} ({} runs): {}", job.id, b.node, b.since,
                              b.runs, b.reason));
        return Turn::released;
    }
    note(job, "failed", r.error.message);
    m_env.say(fmt::format("archctl: job {} failed: {}", job.id, r.error.message));
    fail(r.error);
    return Turn::failed;
}

// The rows of jobs::summarize_active say each job's operation and nodes (JobSummary::identity), in the
// order Driver::unfinished gives the jobs to continue.
Result<std::vector<TierSteps::Unfinished>> TierSteps::unfinished_jobs() {
    ARCHCTL_TRY_ASSIGN(auto ids, m_env.driver.unfinished());
    if (ids.empty()) return std::vector<Unfinished>{};
    ARCHCTL_TRY_ASSIGN(auto rows, jobs::summarize_active(state::JobStore(m_env.state)));
    std::vector<Unfinished> out;
    for (const auto& id : ids) {
        auto row = std::find_if(rows.begin(), rows.end(), [&](const jobs::JobSummary& r) { return r.id == id; });
        if (row == rows.end()) continue;
        const auto job = row->identity();
        const bool ours = job.source == m_policy.cache &&
                          (job.op == "evict" || (job.op == "archive" && has(m_policy.archive, job.target)));
        if (ours) out.push_back({id, job.op, job.resource, job.name, job.op == "archive" ? job.target : std::string()});
    }
    return out;
}

bool TierSteps::resume_unfinished() {
    auto unfinished = unfinished_jobs();
    if (!unfinished.ok()) {
        fail(unfinished.error());
        return true;
    }
    for (const auto& job : unfinished.value()) {
        ++m_run.resumed;
        m_env.say(fmt::format("archctl: tier {}: continuing job {} ({} {})", m_policy.name, job.id, job.op, job.name));
        Turn t = drive({job.id, job.resource, job.op, job.target});
        if (t == Turn::ended) return false;
        if (t == Turn::done && job.op == "evict") ++m_run.evicted;
        if (t == Turn::done && job.op == "archive") {
            ++m_run.archived;
            ++m_run.archived_to[job.target];
        }
    }
    return true;
}

// Every archive node left made the run wait for its route: the candidate waits with them.
Turn TierSteps::archive_waits(const TierRow& row) {
    std::vector<std::string> why;
    for (const auto& [node, text] : m_waiting) why.push_back(fmt::format("{}: {}", node, text));
    const std::string text = fmt::format("waiting: no archive node can take '{}' now ({})", row.torrent.id.substr(0, 12), fmt::join(why, "; "));
    note({"", row.torrent.id, "archive", ""}, "stopped", text);
    m_env.say("archctl: " + text);
    stop(text);
    return Turn::stopped;
}

// No archive node can take the candidate: each was passed over by the plan (no room above its
// floor, unreachable) or by this run (it could not take a job), or refused it. Without a refusal
// it is blocked, not a failure: the goal says whether the run failed (goal_unreachable).
Turn TierSteps::no_node_takes(const TierRow& row, std::optional<Error> last) {
    if (!last && !m_waiting.empty()) return archive_waits(row);
    if (last) {
        Error e = std::move(*last);
        e.message = fmt::format("cannot archive '{}' ({}): {}", row.torrent.id.substr(0, 12), row.torrent.name, e.message);
        note({"", row.torrent.id, "archive", ""}, "failed", e.message);
        m_env.say("archctl: " + e.message);
        fail(e);
        return Turn::failed;
    }
    std::vector<PassedOver> passed = row.passed_over;
    for (const auto& node : m_policy.archive)
        if (auto full = m_full.find(node); full != m_full.end() && !passed_over(row, node))
            passed.push_back({node, "could not take a job of this run: " + full->second});
    const std::string why = passed.empty() ? std::string("no archive node in the policy") : passed_over_text(passed);
    ++m_run.no_room;
    if (m_run.no_room_why.empty()) m_run.no_room_why = why;
    note({"", row.torrent.id, "archive", ""}, "blocked", "no archive node can take it now: " + why);
    m_env.say(fmt::format("archctl: tier {}: not archiving {} ({}): no archive node can take it now: {}", m_policy.name,
                          row.torrent.id.substr(0, 12), row.torrent.name, why));
    return Turn::refused;
}

bool TierSteps::passed_over(const TierRow& row, const std::string& node) const {
    return std::any_of(row.passed_over.begin(), row.passed_over.end(), [&](const PassedOver& p) { return p.node == node; });
}

Turn TierSteps::archive(const TierRow& row) {
    // Its job had its turn in this run (continued first) and did not finish: it goes on next run.
    if (m_had_turn.count(row.torrent.id)) return Turn::stopped;
    std::optional<Error> last;
    // The plan's node first (for a candidate with an unfinished job, that job's node), then the
    // policy's others in order.
    std::vector<std::string> nodes;
    if (!row.archive_to.empty()) nodes.push_back(row.archive_to);
    for (const auto& node : m_policy.archive)
        if (node != row.archive_to) nodes.push_back(node);
    for (const auto& node : nodes) {
        if (m_waiting.count(node) || m_full.count(node) || passed_over(row, node)) continue;
        auto opened = m_env.jobs.open_archive(row.torrent.id, m_policy.cache, node, m_many.next_budgets().no_wait);
        if (!opened.ok()) {
            Error e = opened.take_error();
            if (e.is(ErrorCode::ROUTE_WAITING)) {
                m_waiting[node] = e.message;  // another archive node may take it
                continue;
            }
            // Ctrl-C or the deadline while the route was made; or a service the job needs is out
            // (the cache's qBittorrent, the node's): an outage is a wait, and the next run goes on.
            if (routes::is_clean_stop(e) || jobs::is_outage(e)) {
                const std::string text = routes::is_clean_stop(e) ? e.message : "waiting: " + e.message;
                note({"", row.torrent.id, "archive", node}, "stopped", text);
                m_env.say("archctl: " + text);
                stop(text);
                return Turn::ended;
            }
            last = std::move(e);
            continue;  // another archive node may take it
        }
        const JobOpening& o = opened.value();
        switch (o.kind) {
            case JobOpening::Kind::refused: last = o.refusal; continue;
            case JobOpening::Kind::nothing_to_do:
                note({"", row.torrent.id, "archive", node}, "done", fmt::format("'{}' already holds it", node));
                return Turn::done;
            case JobOpening::Kind::created:
                m_env.say(fmt::format("archctl: tier {}: job {}  archive {} {} → {}", m_policy.name, o.job_id, o.short_id, m_policy.cache, node));
                break;
            case JobOpening::Kind::existing: break;
        }
        Turn t = drive({o.job_id, row.torrent.id, "archive", node});
        if (t == Turn::released) continue;  // that node could not take it: the next one may
        if (t == Turn::done) {
            ++m_run.archived;
            ++m_run.archived_to[node];
        }
        return t;
    }
    return no_node_takes(row, std::move(last));
}

Turn TierSteps::evict(const TierRow& row) {
    auto opened = m_env.jobs.open_evict(row.torrent.id, m_policy.cache);
    if (!opened.ok() && jobs::is_outage(opened.error())) {  // a wait, not a failure
        const std::string text = "waiting: " + opened.error().message;
        note({"", row.torrent.id, "evict", ""}, "stopped", text);
        m_env.say("archctl: " + text);
        stop(text);
        return Turn::ended;
    }
    if (!opened.ok()) {
        note({"", row.torrent.id, "evict", ""}, "failed", opened.error().message);
        fail(opened.error());
        return Turn::failed;
    }
    const JobOpening& o = opened.value();
    switch (o.kind) {
        case JobOpening::Kind::nothing_to_do: return Turn::done;
        case JobOpening::Kind::refused: {
            const std::string why = first_line(o.refusal.message);
            ++m_run.blocked;
            note({"", row.torrent.id, "evict", ""}, "blocked", why);
            m_env.say(fmt::format("archctl: tier {}: not evicting {} ({}): its archive copies are not proven: {}", m_policy.name, o.short_id,
                                  o.name, why));
            return Turn::refused;
        }
        case JobOpening::Kind::created:
            m_env.say(fmt::format("archctl: tier {}: job {}  evict {} from {}", m_policy.name, o.job_id, o.short_id, m_policy.cache));
            break;
        case JobOpening::Kind::existing: break;
    }
    Turn t = drive({o.job_id, row.torrent.id, "evict", ""});
    if (t == Turn::done) ++m_run.evicted;
    return t;
}

}  // namespace archctl::runs
