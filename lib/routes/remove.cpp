// `archctl route rm ID`: remove a route archctl created (docs/routes.md "Removing a route").
//
// Order, so that a crash anywhere leaves something a rerun finishes: refuse what is not ours or
// still in use → both Syncthings must answer → the folder on the cache, then on the archive →
// on each, the peer device when no folder there shares it any more → the record. Each config
// removal passes a crash point (route.rm.folder, route.rm.device); the record goes last
// (route.rm.record), so a rerun after a crash still knows the route was archctl's. Files on disk
// are never touched.

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/routes/routes.hpp"
#include "lib/routes/session.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::routes {
namespace {

// A job is unfinished until its ledger says done, failed or cancelled (no ledger yet: it has
// not run, and is unfinished too).
bool finished_state(const std::string& state) { return state == "done" || state == "failed" || state == "cancelled"; }

// The first unfinished job whose definition names route `id`: "<job id>" and its state.
Result<std::optional<std::pair<std::string, std::string>>> job_using(const state::StateDir& dir, const std::string& id) {
    using Found = std::optional<std::pair<std::string, std::string>>;
    state::JobStore store(dir);
    state::JobIndex index(dir);
    // Finished jobs leave the index's active set; an old state directory without an index has
    // every job read.
    ARCHCTL_TRY_ASSIGN(std::vector<std::string> ids, index.built() ? index.active() : store.list());
    for (const auto& job : ids) {
        auto definition = store.definition_outline(job);
        if (!definition.ok() || !definition->is_object()) continue;  // a torn create: no job
        const auto route = definition->value("route", nlohmann::json::object());
        if (!route.is_object() || route.value("id", "") != id) continue;
        std::string job_state = "running";
        if (auto ledger = store.ledger(job); ledger.ok() && ledger->is_object()) job_state = ledger->value("state", "running");
        if (!finished_state(job_state)) return Found(std::pair{job, job_state});
    }
    return Found();
}

// The record of a route archctl created, or why `route rm` refuses it.
Result<RouteRecord> own_record(Session& s, const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto record, s.store().load(id));
    const std::string refuse_hint = "archctl removes only routes it created; remove this folder in Syncthing on both nodes if it must go";
    if (!record) {
        std::vector<NodeSnapshot> snapshots;
        if (s.discover(snapshots).find(id))
            return Error(ErrorCode::ROUTE_CONFLICT, fmt::format("route '{}' was not created by archctl (it has no provisioning record)", id),
                         refuse_hint);
        return Error(ErrorCode::NOT_FOUND, fmt::format("no route '{}'", id), "see 'archctl route list'");
    }
    const bool made = record->origin == "provisioned" &&
                      std::any_of(record->created.begin(), record->created.end(), [](const CreatedObject& c) {
                          return c.kind == ObjectKind::folder && c.status != ObjectStatus::kept;
                      });
    if (!made)
        return Error(ErrorCode::ROUTE_CONFLICT,
                     fmt::format("route '{}' was not created by archctl (its record says {}, no folder made by archctl)", id,
                                 record->origin),
                     refuse_hint);
    return std::move(*record);
}

// Remove the route's folder on one side, when it is the folder archctl made (its path).
Result<TouchedObject> remove_folder(session::NodeSession& link, const std::string& node, const std::string& id,
                                    const std::string& path) {
    TouchedObject t{node, ObjectKind::folder, id, "absent", ""};
    ARCHCTL_TRY_ASSIGN(auto folder, link.st().folder(id));
    if (!folder) return t;
    if (strip_trailing_slashes(folder->path) != path)
        return Error(ErrorCode::ROUTE_CONFLICT,
                     fmt::format("folder '{}' on '{}' has path {}, the route archctl made has {}; it is left alone", id, node,
                                 folder->path, path),
                     "remove it in Syncthing by hand if it must go");
    ARCHCTL_TRY_STATUS(link.st().delete_folder(id));
    crash_point("route.rm.folder");
    t.status = "removed";
    return t;
}

// Remove the peer device on one side when no folder there shares it any more.
Result<TouchedObject> remove_device(session::NodeSession& link, const std::string& node, const std::string& device) {
    TouchedObject t{node, ObjectKind::device, device, "absent", ""};
    if (device.empty()) return t;
    ARCHCTL_TRY_ASSIGN(auto existing, link.st().device(device));
    if (!existing) return t;
    ARCHCTL_TRY_ASSIGN(auto folders, link.st().folders());
    for (const auto& f : folders) {
        if (std::find(f.devices.begin(), f.devices.end(), device) == f.devices.end()) continue;
        t.status = "kept";
        t.note = fmt::format("folder '{}' shares it", f.id);
        return t;
    }
    ARCHCTL_TRY_STATUS(link.st().delete_device(device));
    crash_point("route.rm.device");
    t.status = "removed";
    return t;
}

}  // namespace

Result<RemoveReport> remove_route(Env& env, const std::string& id) {
    Session s(env);
    if (!valid_route_id(id)) return Error(ErrorCode::NOT_FOUND, fmt::format("no route '{}'", id), "see 'archctl route list'");
    ARCHCTL_TRY_ASSIGN(LockFile lock, s.lock("route rm " + id));
    ARCHCTL_TRY_ASSIGN(RouteRecord record, own_record(s, id));
    ARCHCTL_TRY_ASSIGN(auto user, job_using(env.state, id));
    if (user)
        return Error(ErrorCode::ROUTE_IN_USE,
                     fmt::format("route '{}' is used by unfinished job {} ({})", id, user->first, user->second),
                     fmt::format("finish it ('archctl resume') or cancel it ('archctl job cancel {}'), then rerun", user->first));
    // Both sides are removed in one go, or not at all while a Syncthing does not answer.
    std::vector<NodeSnapshot> snapshots;
    const Discovery discovery = s.discover(snapshots, {record.cache, record.archive});
    if (std::string down = unreachable_text(discovery, record.cache, record.archive); !down.empty())
        return Error(ErrorCode::ROUTE_WAITING, fmt::format("waiting: {}; route '{}' is not removed", down, id),
                     "rerun when both Syncthings answer");
    RemoveReport report;
    report.id = id;
    struct SideOf {
        const std::string& node;
        const std::string& path;
        const std::string& peer_device;
    };
    const SideOf sides[] = {{record.cache, record.cache_path, record.archive_device},
                            {record.archive, record.archive_path, record.cache_device}};
    for (const auto& side : sides) {
        ARCHCTL_TRY_ASSIGN(session::NodeSession * link, s.link(side.node));
        ARCHCTL_TRY_ASSIGN(TouchedObject folder, remove_folder(*link, side.node, id, side.path));
        report.objects.push_back(std::move(folder));
    }
    for (const auto& side : sides) {
        ARCHCTL_TRY_ASSIGN(session::NodeSession * link, s.link(side.node));
        ARCHCTL_TRY_ASSIGN(TouchedObject device, remove_device(*link, side.node, side.peer_device));
        report.objects.push_back(std::move(device));
        report.files_left.emplace_back(side.node, side.path);
    }
    ARCHCTL_TRY_STATUS(s.store().remove(id));
    return report;
}

}  // namespace archctl::routes
