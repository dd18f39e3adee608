#include "lib/routes/routes.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/retry.hpp"
#include "lib/routes/attempt.hpp"
#include "lib/routes/naming.hpp"
#include "lib/routes/session.hpp"

namespace archctl::routes {
namespace {

using nlohmann::json;

constexpr std::size_t k_suffix_chars = 6;
// How often discovery is read again while a node's Syncthing does not answer.
constexpr auto k_outage_poll = std::chrono::milliseconds(1000);

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
    if (!best->valve.empty())
        s.say(fmt::format("archctl: warning: route {}: folder settings break the valve ({}); fix: {}", best->id,
                          valve_text(best->valve), valve_fix(best->id)));
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

// A Syncthing that answered with a refusal (a wrong API key) is no outage: waiting cannot fix it.
bool outage_code(const std::string& code) {
    return code.empty() || code.rfind("HTTP_", 0) == 0 || code == to_string(ErrorCode::NODE_UNREACHABLE) ||
           code == to_string(ErrorCode::ST_SERVER_ERROR);
}

// Discovery of the pair that waits out an outage: while no route is found and a node's Syncthing
// does not answer, nothing is known about the pair, so discovery is read again after short naps
// within the call's outage window (docs/routes.md "Unreachable is not missing").
Result<PairStatus> look_up_waiting(Session& s, const std::string& cache, const std::string& archive,
                                   const EnsureOptions& options) {
    Deadlines d = s.deadlines(options);
    d.attempt = SteadyTime::max();  // this wait is bounded by the outage window, not by provisioning
    const std::string hint = "no route is provisioned while a node's Syncthing does not answer; rerun when it answers "
                             "(see 'archctl route list')";
    return retry_through_outage(
        [&]() -> Result<PairStatus> {
            std::vector<NodeSnapshot> snapshots;
            PairStatus pair = look_up_pair(s.discover(snapshots, {cache, archive}), cache, archive);
            if (pair.look != PairLook::unreachable) return pair;
            auto down = std::find_if(snapshots.begin(), snapshots.end(), [&](const auto& snap) { return snap.node == pair.down; });
            if (down != snapshots.end() && !outage_code(down->error_code))
                return Error(down->error_code, fmt::format("cannot read the Syncthing of '{}': {}", pair.down, pair.why),
                             fmt::format("check nodes.{}.syncthing in 'archctl config'", pair.down));
            return pair;
        },
        [](const Result<PairStatus>& r) { return r.ok() && r.value().look == PairLook::unreachable; },
        [&](const Result<PairStatus>& r) -> std::optional<Result<PairStatus>> {
            const PairStatus& pair = r.value();
            const std::string what = fmt::format("Syncthing of '{}' does not answer ({}); no route is provisioned while it is unreachable",
                                                 pair.down, pair.why);
            if (auto end = wait_end(d); end != WaitEnd::keep_waiting) return clean_stop_error(end, what);
            if (auto over = s.outage_seen(pair.down, pair.why, fmt::format("looking for the route between '{}' and '{}'", cache, archive),
                                          hint))
                return *over;
            nap(d, k_outage_poll);
            return std::nullopt;
        });
}

// The route `id` in live config. While a Syncthing does not answer, a route not found may exist:
// ROUTE_WAITING (a clean stop), never NOT_FOUND. `doing`: what the caller would have done.
Result<const DiscoveredRoute*> find_live(Session& s, const Discovery& discovery, const std::string& id, const std::string& doing) {
    if (const DiscoveredRoute* d = discovery.find(id)) return d;
    std::vector<RouteRecord> records = s.records();
    auto record = find_record(records, id);
    for (const auto& [node, why] : discovery.unreachable) {
        if (record && node != record->cache && node != record->archive) continue;
        return Error(ErrorCode::ROUTE_WAITING,
                     fmt::format("waiting: Syncthing of '{}' unreachable ({}); route '{}' cannot be {} now", node, why, id, doing),
                     "rerun when it answers");
    }
    return Error(ErrorCode::NOT_FOUND, fmt::format("no route '{}' in the live Syncthing config", id), "see 'archctl route list -v'");
}

Result<Route> ensure_pair(Session& s, const std::string& cache, const std::string& archive, const EnsureOptions& options) {
    ARCHCTL_TRY_ASSIGN(PairStatus pair, look_up_waiting(s, cache, archive, options));
    std::vector<RouteRecord> records = s.records();
    if (pair.look == PairLook::found) return ensure_existing(s, pair.routes, records, options);
    // Both Syncthings answered and no folder pair joins the nodes: only now may an attempt run.

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

std::string valve_fix(const std::string& route_id) { return fmt::format("archctl route ensure --repair {}", route_id); }

std::string discovered_state(bool valve_holds, bool healthy, const std::optional<RouteRecord>& record, bool is_fresh) {
    if (!valve_holds) return "unsafe";
    if (!healthy) return "unhealthy";
    if (!record || record->verified_at.empty()) return "unverified";
    return is_fresh ? "ready" : "stale";
}

std::string recorded_state(const RouteRecord& r, const Discovery& d) {
    if (r.state != RouteState::ready) return to_string(r.state);
    if (!d.answered.contains(r.cache) || !d.answered.contains(r.archive)) return "unreachable";
    return "missing";
}

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
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock(fmt::format("route ensure {} {}", cache, archive)));
    if (env.config.route_policy == config::RoutePolicy::eager_mesh) {
        auto mesh = mesh_locked(s, options);
        if (!mesh.ok() && is_clean_stop(mesh.error())) return mesh.take_error();
    }
    return ensure_pair(s, cache, archive, options);
}

Result<MeshReport> ensure_mesh(Env& env, const EnsureOptions& options) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock("route mesh"));
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
    const Discovery& discovery = listing.discovery;
    for (const auto& d : discovery.routes) {
        RouteEntry e{d.id, d.cache, d.archive, d.cache_path, d.archive_path, "", "", true, find_record(records, d.id), d.valve};
        Health h = live_health(s, d.id, d.cache, d.archive, d.cache_path, d.archive_path, d.cache_device, d.archive_device);
        e.health = h.summary();
        e.state = discovered_state(d.valve.empty(), h.healthy, e.record, e.record && fresh(env, *e.record));
        listing.routes.push_back(std::move(e));
    }
    for (const auto& r : records) {
        if (discovery.find(r.id)) continue;
        RouteEntry e{r.id, r.cache, r.archive, r.cache_path, r.archive_path, recorded_state(r, discovery), "", false, r, {}};
        if (e.state == "unreachable") e.health = unreachable_text(discovery, r.cache, r.archive);
        listing.routes.push_back(std::move(e));
    }
    for (const auto& h : discovery.half) {
        auto known = std::find_if(listing.routes.begin(), listing.routes.end(), [&](const auto& e) { return e.id == h.id; });
        if (known != listing.routes.end()) continue;
        const bool cache_side = s.node(h.node) && s.node(h.node)->role == config::Role::cache;
        // The other side's Syncthing did not answer: its folder may well be there.
        const bool peer_down = !discovery.answered.contains(h.peer);
        RouteEntry e{h.id, cache_side ? h.node : h.peer, cache_side ? h.peer : h.node, cache_side ? h.path : "",
                     cache_side ? "" : h.path, peer_down ? "unreachable" : "half", h.reason, false, std::nullopt, {}};
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
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock("route check " + id));
    std::vector<NodeSnapshot> snapshots;
    Discovery discovery = s.discover(snapshots);
    ARCHCTL_TRY_ASSIGN(const DiscoveredRoute* d, find_live(s, discovery, id, "checked"));
    std::vector<RouteRecord> records = s.records();
    RouteRecord record = find_record(records, id).value_or(record_for_discovered(*d));
    CheckReport report;
    report.id = id;
    report.health = live_health(s, id, d->cache, d->archive, d->cache_path, d->archive_path, d->cache_device, d->archive_device);
    // A route whose folder settings let the far side reach the source's inodes is no route to
    // check: the verdict is the valve, with its fix.
    if (!d->valve.empty()) return valve_error(id, d->valve.front().node, d->valve.front().problems);
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

namespace {

// Set the valve settings on `node`'s folder `id` when they break it; read back to prove it.
Result<TouchedObject> repair_side(Session& s, RouteRecord& record, const std::string& node, const std::string& id) {
    ARCHCTL_TRY_ASSIGN(session::NodeSession * link, s.link(node));
    ARCHCTL_TRY_ASSIGN(auto folder, link->st().folder(id));
    if (!folder) return Error(ErrorCode::NOT_FOUND, fmt::format("route '{}' has no folder on '{}' any more", id, node), "see 'archctl route show " + id + "'");
    TouchedObject touched{node, ObjectKind::folder, id, "holds", ""};
    const auto problems = valve_problems(*folder);
    if (problems.empty()) return touched;
    ARCHCTL_TRY_STATUS(link->st().patch_folder(id, valve_repair(*folder)));
    crash_point("route.repair.patched");
    ARCHCTL_TRY_ASSIGN(auto after, link->st().folder(id));
    if (!after || !valve_problems(*after).empty())
        return Error(ErrorCode::ROUTE_CONFIG_REFUSED,
                     fmt::format("Syncthing of '{}' did not keep the valve settings of folder '{}': {}", node, id,
                                 after ? valve_summary(valve_problems(*after)) : std::string("the folder is gone")),
                     fmt::format("set them in the folder's options in Syncthing, then run 'archctl route check {}'", id));
    // Still the folder archctl made: its fingerprint follows archctl's own change.
    if (CreatedObject* c = record.find_created(node, ObjectKind::folder, id); c && c->status == ObjectStatus::created) {
        c->fingerprint = config_fingerprint(after->raw);
        c->at = now_text();
        ARCHCTL_TRY_STATUS(s.store().save(record, "repair.recorded"));
    }
    touched.status = "repaired";
    touched.note = "was " + valve_summary(problems);
    s.say(fmt::format("route {}: valve settings set on {} (was {})", id, node, valve_summary(problems)));
    return touched;
}

}  // namespace

Result<RepairReport> repair_route(Env& env, const std::string& id, const EnsureOptions& options) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock("route repair " + id));
    std::vector<NodeSnapshot> snapshots;
    Discovery discovery = s.discover(snapshots);
    ARCHCTL_TRY_ASSIGN(const DiscoveredRoute* d, find_live(s, discovery, id, "repaired"));
    std::vector<RouteRecord> records = s.records();
    RouteRecord record = find_record(records, id).value_or(record_for_discovered(*d));
    RepairReport report;
    report.id = id;
    for (const std::string* node : {&d->cache, &d->archive}) {
        ARCHCTL_TRY_ASSIGN(TouchedObject side, repair_side(s, record, *node, id));
        report.folders.push_back(std::move(side));
    }
    // Syncthing restarts a folder it patched: the route is proven again, both ways.
    Attempt attempt(s, record, s.deadlines(options));
    ARCHCTL_TRY_STATUS(attempt.verify());
    report.verified_at = record.verified_at;
    return report;
}

Result<RollbackReport> rollback_route(Env& env, const std::string& id) {
    Session s(env);
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock("route rollback " + id));
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
    json valve = json::array();
    for (const auto& v : e.valve) valve.push_back(to_json(v));
    o["valve"] = std::move(valve);
    if (!e.valve.empty()) o["fix"] = valve_fix(e.id);
    return o;
}

json to_json(const NodeValve& v) {
    json problems = json::array();
    for (const auto& p : v.problems)
        problems.push_back({{"setting", p.setting}, {"have", p.have}, {"want", p.want}, {"text", p.text()}});
    return {{"node", v.node}, {"problems", problems}};
}

json to_json(const TouchedObject& t) {
    json o = {{"node", t.node}, {"kind", to_string(t.kind)}, {"id", t.id}, {"status", t.status}};
    if (!t.note.empty()) o["note"] = t.note;
    return o;
}

json to_json(const RemoveReport& r) {
    json objects = json::array(), files = json::array();
    for (const auto& o : r.objects) objects.push_back(to_json(o));
    for (const auto& [node, path] : r.files_left) files.push_back({{"node", node}, {"path", path}});
    return {{"id", r.id}, {"objects", objects}, {"files_left", files}};
}

json to_json(const RepairReport& r) {
    json folders = json::array();
    for (const auto& f : r.folders) folders.push_back(to_json(f));
    return {{"id", r.id}, {"folders", folders}, {"verified_at", r.verified_at}};
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
