#include "lib/jobs/report/status.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/text.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/jobs/transfer/target_room.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs::report {
namespace {

// The resources status covers, each once, in the order first named; found by either hash (a
// hash map, not a scan: thousands of placement records make thousands of resources).
class Inventory {
public:
    void add(const torrent::Identity& id, const std::string& name) {
        for (const auto& alias : aliases(id)) {
            auto it = m_by_hash.find(alias);
            if (it == m_by_hash.end()) continue;
            ResourceStatus& r = m_resources[it->second];
            if (!r.identity.same_resource(id)) continue;
            if (auto joined = r.identity.join(id); joined.ok()) r.identity = joined.value();
            if (r.name.empty()) r.name = name;
            for (const auto& a : aliases(r.identity)) m_by_hash.try_emplace(a, it->second);
            return;
        }
        ResourceStatus r;
        r.identity = id;
        r.name = name;
        for (const auto& a : aliases(id)) m_by_hash.try_emplace(a, m_resources.size());
        m_resources.push_back(std::move(r));
    }
    std::vector<ResourceStatus> take() { return std::move(m_resources); }

private:
    static std::vector<std::string> aliases(const torrent::Identity& id) {
        std::vector<std::string> out;
        if (id.has_v1()) out.push_back(id.v1_hex());
        if (id.has_v2()) out.push_back(id.v2_hex());
        return out;
    }
    std::vector<ResourceStatus> m_resources;
    std::unordered_map<std::string, std::size_t> m_by_hash;
};

// Resources named by job records, oldest job first, each once.
void add_job_resources(Inventory& out, const std::vector<JobSummary>& all) {
    for (const auto& j : all) {
        auto id = torrent::Identity::from_json(j.definition.value("resource", nlohmann::json::object()));
        if (id.ok()) out.add(id.value(), j.definition.value("name", ""));
    }
}

// Resources archctl holds a placement record of (state/placements/<alias>/<node>.json, written
// at each commit and kept after `job clear`), each once. A commit writes the same record under
// every alias of the resource (a v1 alias is 40 hex, a v2 alias 64), so a hybrid's two aliases
// are paired by the qB id their records name.
void add_recorded_resources(Inventory& out, const state::StateDir& state) {
    auto aliases = list_dir(state.placements());
    if (!aliases.ok()) return;
    std::map<std::string, std::pair<std::string, std::string>> by_qb_id;  // qB id → (v1, v2)
    std::vector<std::string> order;
    for (const auto& alias : aliases.value()) {
        auto nodes = list_dir(state.placements() + "/" + alias);
        if (!nodes.ok() || nodes->empty() || (alias.size() != 40 && alias.size() != 64)) continue;
        std::string node = nodes->front().substr(0, nodes->front().rfind(".json"));
        auto rec = state::PlacementStore(state).get(alias, node);
        std::string qb_id = rec.ok() && rec.value() ? rec.value()->detail.value("qb_id", "") : "";
        if (qb_id.empty()) qb_id = alias;
        auto [it, added] = by_qb_id.try_emplace(qb_id);
        if (added) order.push_back(qb_id);
        (alias.size() == 40 ? it->second.first : it->second.second) = alias;
    }
    for (const auto& qb_id : order) {
        const auto& [v1, v2] = by_qb_id[qb_id];
        auto id = torrent::Identity::from_qb(v1, v2);
        if (id.ok()) out.add(id.value(), "");
    }
}

// The resource whose recorded placements (see add_recorded_resources) have an alias starting
// with `prefix`: a copy whose torrent is gone from every qBittorrent is still one `status RES`
// can show ("recorded but gone", as the overview says). nullopt when no record matches.
Result<std::optional<ResourceStatus>> recorded_resource(const state::StateDir& state, const std::string& res_in) {
    auto prefix = evidence::res_prefix(res_in);
    if (!prefix.ok()) return std::optional<ResourceStatus>();
    Inventory recorded;
    add_recorded_resources(recorded, state);
    std::vector<ResourceStatus> found;
    for (auto& r : recorded.take()) {
        const bool hit = (r.identity.has_v1() && r.identity.v1_hex().rfind(prefix.value(), 0) == 0) ||
                         (r.identity.has_v2() && r.identity.v2_hex().rfind(prefix.value(), 0) == 0);
        if (hit) found.push_back(std::move(r));
    }
    if (found.empty()) return std::optional<ResourceStatus>();
    if (found.size() > 1) {
        std::string list;
        for (const auto& r : found) list += fmt::format("\n  {}  (recorded placement)", r.identity.short_id());
        return Error(ErrorCode::AMBIGUOUS, fmt::format("'{}' matches {} resources:{}", clipped(res_in), found.size(), list),
                     "give more hex characters");
    }
    return std::optional<ResourceStatus>(std::move(found.front()));
}

// A resource known only from a placement record has the name its live placements report.
void name_from_placements(ResourceStatus& r) {
    for (const auto& p : r.placements)
        if (r.name.empty() && p.present) r.name = p.info.name;
}

}  // namespace

JobActivity activity_of(const state::StateDir& state, const JobSummary& j) {
    JobActivity a;
    a.job_id = j.id;
    a.state = j.damaged ? "damaged" : to_string(j.ledger.state);
    a.step = j.ledger.step;
    if (auto lock = LockFile::read(state::JobStore(state).dir_of(j.id)); lock.ok() && (lock_holder_alive(lock.value()) || lock->host != host_name()))
        a.driver = lock.value();
    if (!j.damaged && j.definition.contains("delta_bytes")) {
        a.bytes_total = j.definition.value("delta_bytes", std::uint64_t{0});
        a.bytes_done = j.ledger.synced || j.ledger.state == JobState::done ? a.bytes_total : std::min(a.bytes_total, j.ledger.bytes_present);
        a.percent = a.bytes_total ? 100.0 * static_cast<double>(a.bytes_done) / static_cast<double>(a.bytes_total)
                                  : (j.ledger.synced ? 100.0 : 0.0);
    }
    auto cmd = [&](const char* what) { return fmt::format("archctl {} {}", what, j.id); };
    if (j.damaged) {
        a.why = "damaged: nothing can drive it";
        a.resolve = {cmd("job show"), cmd("job rm")};
    } else if (a.driver) {
        a.why = "running";
    } else if (j.ledger.state == JobState::failed) {
        a.why = j.needs_attention ? "failed after merging files: look at what it left" : "failed";
        a.resolve = {cmd("job show"), cmd("job rm")};
    } else if (j.ledger.state == JobState::compensating) {
        a.why = "undoing it is not finished";
        a.resolve = {cmd("resume")};
    } else if (j.ledger.state == JobState::cleanup_required) {
        a.why = "cleanup required";
        a.resolve = {cmd("resume"), cmd("job show")};
    } else if (j.ledger.state == JobState::running && j.ledger.target_blocked) {
        // Waiting for room on its target: the next run (cron's, or a resume) goes on with it, and
        // once the bound has passed undoes and releases it; nothing here needs a person.
        const TargetBlocked& b = *j.ledger.target_blocked;
        JobActivity::WaitingForRoom w{b.node, b.since, b.reason, b.runs, "", transfer::k_release_runs};
        SystemTime since{};
        if (parse_rfc3339(b.since, since)) w.release_from = format_rfc3339(since + transfer::k_release_after);
        const std::string when = w.release_from.empty() ? fmt::format("{} h after it was first seen", transfer::k_release_after.count())
                                                        : fmt::format("from {} on", w.release_from);
        a.why = fmt::format("waiting for room on '{}' since {} ({} run{} ended on it){}; the first run {}, once {} runs have ended on it "
                            "(the next one from cron, or '{}'), undoes and releases it (staging removed, reservation freed) so it can "
                            "go to another node",
                            b.node, b.since, b.runs, b.runs == 1 ? "" : "s", b.reason.empty() ? "" : ": " + b.reason, when,
                            transfer::k_release_runs, cmd("resume"));
        a.waiting = std::move(w);
    } else if (j.ledger.state == JobState::running) {
        a.why = "not running: stopped or interrupted";
        a.resolve = {cmd("resume"), cmd("job cancel")};
    }
    return a;
}

nlohmann::json JobActivity::to_json() const {
    nlohmann::json j = {{"job", job_id}, {"state", state}, {"step", step}, {"why", why}, {"resolve", resolve},
                        {"bytes_done", bytes_done}, {"bytes_total", bytes_total}};
    j["percent"] = percent ? nlohmann::json(*percent) : nlohmann::json(nullptr);
    j["driver"] = driver ? nlohmann::json{{"pid", driver->pid}, {"host", driver->host}, {"since", driver->started_at}}
                         : nlohmann::json(nullptr);
    if (waiting)
        j["waiting_for_room"] = {{"node", waiting->node},           {"since", waiting->since},
                                 {"runs", waiting->runs},           {"reason", waiting->reason},
                                 {"release_from", waiting->release_from.empty() ? nlohmann::json(nullptr) : nlohmann::json(waiting->release_from)},
                                 {"release_runs", waiting->release_runs}};
    return j;
}

std::string driven_elsewhere(const state::StateDir& state, const std::string& job_id) {
    auto lock = LockFile::read(state::JobStore(state).dir_of(job_id));
    std::string who;
    if (lock.ok())
        who = lock->host == host_name() ? fmt::format(" (pid {})", lock->pid) : fmt::format(" (pid {} on {})", lock->pid, lock->host);
    return fmt::format("job {} is being driven by another archctl{}", job_id, who);
}

FreeAtRoots free_at_qb_roots(Nodes& sessions) {
    FreeAtRoots out;
    for (NodeHandle* node : sessions.all()) {
        auto space = node->space(node->config().qb_root);
        if (space.ok()) out.free[node->name()] = space->free;
        else out.errors[node->name()] = space.error().message;
    }
    return out;
}

Overview read_overview(const config::Config& config, const state::StateDir* state, const std::string& state_error, Nodes& sessions) {
    Overview o;
    o.probes = session::probe_nodes(sessions);
    FreeAtRoots free = free_at_qb_roots(sessions);
    o.free = std::move(free.free);
    o.free_errors = std::move(free.errors);
    if (!state) {
        o.routes_error = "state directory unreadable";
        o.jobs_error = "state directory unreadable: " + state_error;
        return o;
    }
    o.state_readable = true;
    routes::Env env{config, *state, {}, sessions};
    auto listing = routes::list_routes(env);
    if (listing.ok()) o.routes = std::move(listing.value());
    else o.routes_error = listing.error().message;
    auto jobs = summarize_recent(state::JobStore(*state), 20);
    if (!jobs.ok()) {
        o.jobs_error = jobs.error().message;
    } else {
        o.jobs = std::move(jobs.value());
    }
    Inventory known;
    add_job_resources(known, o.jobs);
    add_recorded_resources(known, *state);
    o.resources = resource_status(sessions, *state, known.take(), config.count_shared_copies);
    for (auto& r : o.resources) name_from_placements(r);
    return o;
}

Result<Focus> read_focus(const state::StateDir& state, Nodes& sessions, const std::string& target, bool count_shared) {
    Focus f;
    ARCHCTL_TRY_ASSIGN(f.jobs, summarize_matching(state::JobStore(state), target));
    // A job id or a prefix only one job has; a prefix of several is refused like git refuses it.
    const bool job_like = target.size() >= 8 && std::any_of(f.jobs.begin(), f.jobs.end(), [&](const auto& j) {
        return j.id.rfind(target, 0) == 0;
    });
    if (job_like) {
        ARCHCTL_TRY_ASSIGN(const JobSummary* job, find_job(f.jobs, target));
        auto id = torrent::Identity::from_json(job->definition.value("resource", nlohmann::json::object()));
        if (!id.ok()) return Error(ErrorCode::CORRUPT, fmt::format("job '{}' names no readable resource: {}", job->id, id.error().message));
        f.resource.identity = id.value();
        f.resource.name = job->definition.value("name", "");
        f.job_id = job->id;
    } else {
        auto res = evidence::resolve(sessions, target, evidence::Lists::session);  // resource_status reads the same lists
        std::optional<ResourceStatus> recorded;
        if (!res.ok() && res.error().is(ErrorCode::NOT_FOUND)) {
            // No qBittorrent has it now: a copy archctl recorded may have vanished.
            ARCHCTL_TRY_ASSIGN(recorded, recorded_resource(state, target));
        }
        if (!res.ok() && !recorded) {
            Error e = res.take_error();
            if (e.is(ErrorCode::BAD_VALUE) || e.is(ErrorCode::NOT_FOUND))
                e.hint = "give a resource (a hash or at least 8 hex of one) or a job id from 'archctl job list'";
            return e;
        }
        f.resource.identity = recorded ? recorded->identity : res->identity;
        f.resource.name = recorded ? recorded->name : res->name;
        f.qb_id = f.resource.identity.qb_id();
    }
    f.resource = resource_status(sessions, state, {f.resource}, count_shared).front();
    name_from_placements(f.resource);
    return f;
}

}  // namespace archctl::jobs::report
