#include "lib/routes/routes.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/lock_file.hpp"
#include "lib/routes/attempt.hpp"
#include "lib/routes/naming.hpp"
#include "lib/routes/session.hpp"

namespace archctl::routes {
namespace {

using nlohmann::json;

constexpr std::size_t k_suffix_chars = 6;

Result<LockFile> lock_routes(Session& s, const std::string& purpose) {
    ARCHCTL_TRY_STATUS(make_dirs(s.store().dir()));
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(s.store().dir(), purpose, notices);
    for (const auto& n : notices) s.say(n);
    return lock;
}

Status check_pair(Session& s, const std::string& cache, const std::string& archive) {
    for (const auto& [name, role] : {std::pair{cache, config::Role::cache}, std::pair{archive, config::Role::archive}}) {
        const config::NodeConfig* n = s.node(name);
        if (!n) return Error(ErrorCode::NODE_UNKNOWN, fmt::format("unknown node '{}'", name), "see 'archctl config' for the configured nodes");
        if (n->role != role)
            return Error(ErrorCode::ROUTE_BAD_PAIR, fmt::format("node '{}' is a {} node, expected {}", name, config::to_string(n->role),
                                                       config::to_string(role)),
                         "a route joins one cache node (first) and one archive node (second)");
    }
    return ok_status();
}

std::int64_t age_seconds(const std::string& rfc3339) {
    SystemTime t;
    if (rfc3339.empty() || !parse_rfc3339(rfc3339, t)) return -1;
    return std::chrono::duration_cast<std::chrono::seconds>(system_now() - t).count();
}

bool fresh(const Env& env, const RouteRecord& r) {
    const auto age = age_seconds(r.verified_at);
    return age >= 0 && age <= env.config.route_check_max_age_s;
}

Health live_health(Session& s, const std::string& id, const std::string& cache, const std::string& archive,
                   const std::string& cache_path, const std::string& archive_path, const std::string& cache_device,
                   const std::string& archive_device) {
    auto c = s.link(cache);
    auto a = s.link(archive);
    if (!c.ok() || !a.ok()) return Health{false, {"node not configured"}, std::nullopt};
    auto ct = (*c)->ops();
    auto at = (*a)->ops();
    SideFacts cf = probe_side((*c)->st(), ct.ok() ? ct.value() : nullptr, cache, id, cache_path, archive_device);
    SideFacts af = probe_side((*a)->st(), at.ok() ? at.value() : nullptr, archive, id, archive_path, cache_device);
    if (!ct.ok()) cf.marker_error = ct.error().message;
    if (!at.ok()) af.marker_error = at.error().message;
    return judge_health(cf, af);
}

RouteRecord record_for_discovered(const DiscoveredRoute& d) {
    RouteRecord r;
    r.id = d.id;
    r.cache = d.cache;
    r.archive = d.archive;
    r.cache_path = d.cache_path;
    r.archive_path = d.archive_path;
    r.cache_device = d.cache_device;
    r.archive_device = d.archive_device;
    r.origin = "discovered";
    r.state = RouteState::provisioning;
    return r;
}

Route route_of(const RouteRecord& r, EnsureAction action) {
    return Route{r.id, r.cache, r.archive, r.cache_path, r.archive_path, r.verified_at, action};
}

std::optional<RouteRecord> find_record(const std::vector<RouteRecord>& records, const std::string& id) {
    for (const auto& r : records)
        if (r.id == id) return r;
    return std::nullopt;
}

// Verify an existing (discovered) route, or return it when it is fresh and healthy.
Result<Route> ensure_existing(Session& s, const std::vector<DiscoveredRoute>& found, const std::vector<RouteRecord>& records,
                              const EnsureOptions& options) {
    // Prefer the most recently verified route of the pair.
    const DiscoveredRoute* best = &found.front();
    std::string best_verified;
    for (const auto& d : found) {
        auto r = find_record(records, d.id);
        if (r && r->verified_at > best_verified) {
            best = &d;
            best_verified = r->verified_at;
        }
    }
    RouteRecord record = find_record(records, best->id).value_or(record_for_discovered(*best));
    record.cache_path = best->cache_path;
    record.archive_path = best->archive_path;
    record.cache_device = best->cache_device;
    record.archive_device = best->archive_device;
    if (record.state == RouteState::ready && fresh(s.env(), record)) {
        Health h = live_health(s, record.id, record.cache, record.archive, record.cache_path, record.archive_path,
                               record.cache_device, record.archive_device);
        if (h.healthy) return route_of(record, EnsureAction::already_ready);
        s.say(fmt::format("route {}: health in doubt ({}); checking again", record.id, h.summary()));
    }
    Attempt attempt(s, record, s.deadlines(options));
    ARCHCTL_TRY_STATUS(attempt.verify());
    return route_of(record, EnsureAction::verified);
}

Result<Route> ensure_pair(Session& s, const std::string& cache, const std::string& archive, const EnsureOptions& options) {
    std::vector<NodeSnapshot> snapshots;
    Discovery discovery = s.discover(snapshots, {cache, archive});
    std::vector<RouteRecord> records = s.records();
    auto found = discovery.between(cache, archive);
    if (!found.empty()) return ensure_existing(s, found, records, options);

    // An unfinished attempt for this pair continues under its route ID (newest first).
    std::optional<RouteRecord> pending;
    for (const auto& r : records) {
        if (r.cache != cache || r.archive != archive || r.state == RouteState::ready) continue;
        if (!pending || r.updated_at > pending->updated_at) pending = r;
    }
    RouteRecord record;
    if (pending) {
        record = *pending;
        s.say(fmt::format("route {}: continuing the attempt (was {}, step '{}')", record.id, to_string(record.state), record.step));
    } else {
        record.id = make_route_id(cache, archive, state::random_hex(k_suffix_chars));
        record.cache = cache;
        record.archive = archive;
        record.cache_path = route_folder_path(s.node(cache)->sync_root, record.id);
        record.archive_path = route_folder_path(s.node(archive)->sync_root, record.id);
        record.state = RouteState::provisioning;
        record.step = "start";
        record.step_started_at = now_text();
        s.say(fmt::format("route {}: provisioning {} <-> {}", record.id, cache, archive));
        ARCHCTL_TRY_STATUS(s.store().save(record, "record.created"));
    }
    Attempt attempt(s, record, s.deadlines(options));
    ARCHCTL_TRY_STATUS(attempt.provision());
    return route_of(record, EnsureAction::provisioned);
}

Result<MeshReport> mesh_locked(Session& s, const EnsureOptions& options) {
    MeshReport report;
    std::vector<NodeSnapshot> snapshots;
    Discovery discovery = s.discover(snapshots);
    std::map<std::string, const NodeSnapshot*> by_name;
    for (const auto& snap : snapshots) by_name[snap.node] = &snap;
    for (const auto& [cache, cn] : s.env().config.nodes) {
        if (cn.role != config::Role::cache) continue;
        for (const auto& [archive, an] : s.env().config.nodes) {
            if (an.role != config::Role::archive) continue;
            const NodeSnapshot* c = by_name[cache];
            const NodeSnapshot* a = by_name[archive];
            if (!c || !c->reachable || !a || !a->reachable) {
                const NodeSnapshot* down = (!c || !c->reachable) ? c : a;
                report.skipped.push_back(fmt::format("{}/{}: '{}' offline: {}", cache, archive,
                                                     down ? down->node : cache, down ? down->error : "unknown"));
                continue;
            }
            if (!discovery.between(cache, archive).empty()) {
                report.present.emplace_back(cache, archive);
                continue;
            }
            auto route = ensure_pair(s, cache, archive, options);
            if (route.ok()) {
                report.ensured.push_back(std::move(route).value());
            } else if (is_clean_stop(route.error())) {
                return route.take_error();
            } else {
                report.failed.push_back(route.take_error());
            }
        }
    }
    return report;
}

}  // namespace

std::string to_string(EnsureAction action) {
    switch (action) {
        case EnsureAction::already_ready: return "already_ready";
        case EnsureAction::verified: return "verified";
        case EnsureAction::provisioned: return "provisioned";
    }
    return "unknown";
}

bool is_clean_stop(const Error& error) {
    return error.is(ErrorCode::ROUTE_INTERRUPTED) || error.is(ErrorCode::ROUTE_DEADLINE) || error.is(ErrorCode::ROUTE_WAITING);
}

Result<Route> ensure_route(Env& env, const std::string& cache, const std::string& archive, const EnsureOptions& options) {
    Session s(env);
    ARCHCTL_TRY_STATUS(check_pair(s, cache, archive));
    ARCHCTL_TRY_ASSIGN(LockFile lock, lock_routes(s, fmt::format("route ensure {} {}", cache, archive)));
    if (env.config.route_policy == config::RoutePolicy::eager_mesh) {
        auto mesh = mesh_locked(s, options);
        if (!mesh.ok() && is_clean_stop(mesh.error())) return mesh.take_error();
    }
    return ensure_pair(s, cache, archive, options);
}

Result<MeshReport> ensure_mesh(Env& env, const EnsureOptions& options) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, lock_routes(s, "route mesh"));
    return mesh_locked(s, options);
}

Result<Listing> list_routes(Env& env) {
    Session s(env);
    Listing listing;
    std::vector<NodeSnapshot> snapshots;
    listing.discovery = s.discover(snapshots);
    for (const auto& snap : snapshots)
        if (!snap.reachable) listing.unreachable.push_back(fmt::format("{}: {}", snap.node, snap.error));
    std::vector<RouteRecord> records = s.records();
    listing.problems = s.problems();
    for (const auto& d : listing.discovery.routes) {
        RouteEntry e{d.id, d.cache, d.archive, d.cache_path, d.archive_path, "", "", true, find_record(records, d.id)};
        Health h = live_health(s, d.id, d.cache, d.archive, d.cache_path, d.archive_path, d.cache_device, d.archive_device);
        e.health = h.summary();
        if (!h.healthy) e.state = "unhealthy";
        else if (!e.record || e.record->verified_at.empty()) e.state = "unverified";
        else e.state = fresh(env, *e.record) ? "ready" : "stale";
        listing.routes.push_back(std::move(e));
    }
    for (const auto& r : records) {
        if (listing.discovery.find(r.id)) continue;
        RouteEntry e{r.id, r.cache, r.archive, r.cache_path, r.archive_path, "", "", false, r};
        e.state = r.state == RouteState::ready ? "missing" : to_string(r.state);
        listing.routes.push_back(std::move(e));
    }
    for (const auto& h : listing.discovery.half) {
        auto known = std::find_if(listing.routes.begin(), listing.routes.end(), [&](const auto& e) { return e.id == h.id; });
        if (known != listing.routes.end()) continue;
        const bool cache_side = s.node(h.node) && s.node(h.node)->role == config::Role::cache;
        RouteEntry e{h.id, cache_side ? h.node : h.peer, cache_side ? h.peer : h.node, cache_side ? h.path : "",
                     cache_side ? "" : h.path, "half", h.reason, false, std::nullopt};
        listing.routes.push_back(std::move(e));
    }
    std::sort(listing.routes.begin(), listing.routes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return listing;
}

Result<RouteEntry> show_route(Env& env, const std::string& id) {
    ARCHCTL_TRY_ASSIGN(Listing listing, list_routes(env));
    for (auto& e : listing.routes)
        if (e.id == id) return std::move(e);
    return Error(ErrorCode::NOT_FOUND, fmt::format("no route '{}'", id), "see 'archctl route list'");
}

Result<CheckReport> check_route(Env& env, const std::string& id, const EnsureOptions& options) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, lock_routes(s, "route check " + id));
    std::vector<NodeSnapshot> snapshots;
    Discovery discovery = s.discover(snapshots);
    const DiscoveredRoute* d = discovery.find(id);
    if (!d) return Error(ErrorCode::NOT_FOUND, fmt::format("no route '{}' in the live Syncthing config", id), "see 'archctl route list -v'");
    std::vector<RouteRecord> records = s.records();
    RouteRecord record = find_record(records, id).value_or(record_for_discovered(*d));
    CheckReport report;
    report.id = id;
    report.health = live_health(s, id, d->cache, d->archive, d->cache_path, d->archive_path, d->cache_device, d->archive_device);
    Attempt attempt(s, record, s.deadlines(options));
    Status verified = attempt.verify();
    report.seconds = record.last_check_seconds;
    report.verified_at = record.verified_at;
    if (!verified.ok()) {
        report.error = verified.error().message;
        return verified.take_error();
    }
    report.ok = true;
    report.health = Health{true, {}, std::nullopt};
    return report;
}

Result<RollbackReport> rollback_route(Env& env, const std::string& id) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, lock_routes(s, "route rollback " + id));
    ARCHCTL_TRY_ASSIGN(auto record, s.store().load(id));
    if (!record) return Error(ErrorCode::NOT_FOUND, fmt::format("no provisioning record for route '{}'", id), "see 'archctl route list'");
    return rollback_record(s, *record);
}

// ---- JSON views

json to_json(const Route& r) {
    return {{"id", r.id}, {"cache", r.cache}, {"archive", r.archive}, {"cache_path", r.cache_path},
            {"archive_path", r.archive_path}, {"verified_at", r.verified_at}, {"action", to_string(r.action)}};
}

json to_json(const RouteEntry& e) {
    json o = {{"id", e.id}, {"cache", e.cache}, {"archive", e.archive}, {"cache_path", e.cache_path},
              {"archive_path", e.archive_path}, {"state", e.state}, {"health", e.health}, {"discovered", e.discovered}};
    o["last_check_at"] = e.record ? e.record->last_check_at : "";
    o["verified_at"] = e.record ? e.record->verified_at : "";
    if (e.record) o["record"] = to_json(*e.record);
    return o;
}

json to_json(const IgnoredFolder& f) {
    return {{"node", f.node}, {"folder", f.folder_id}, {"path", f.path}, {"type", f.type}, {"reason", f.reason}};
}

json to_json(const HalfRoute& h) {
    return {{"id", h.id}, {"node", h.node}, {"peer", h.peer}, {"path", h.path}, {"reason", h.reason}};
}

json to_json(const RollbackReport& r) {
    json objects = json::array();
    for (const auto& c : r.objects) {
        json o = {{"node", c.node}, {"kind", to_string(c.kind)}, {"id", c.id}, {"status", to_string(c.status)}};
        if (!c.note.empty()) o["note"] = c.note;
        objects.push_back(std::move(o));
    }
    return {{"id", r.id}, {"complete", r.complete}, {"objects", objects}};
}

json to_json(const CheckReport& r) {
    return {{"id", r.id}, {"ok", r.ok}, {"seconds", r.seconds}, {"verified_at", r.verified_at},
            {"health", r.health.summary()}, {"error", r.error}};
}

json to_json(const MeshReport& r) {
    json ensured = json::array(), present = json::array(), failed = json::array();
    for (const auto& route : r.ensured) ensured.push_back(to_json(route));
    for (const auto& [c, a] : r.present) present.push_back({{"cache", c}, {"archive", a}});
    for (const auto& e : r.failed) failed.push_back({{"code", e.code}, {"message", e.message}});
    return {{"ensured", ensured}, {"present", present}, {"skipped", r.skipped}, {"failed", failed}};
}

}  // namespace archctl::routes
