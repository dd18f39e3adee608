// Rollback: remove what a provisioning attempt created, and only that (docs/routes.md).

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/routes/attempt.hpp"
#include "lib/routes/naming.hpp"

namespace archctl::routes {
namespace {

using nlohmann::json;

// Why `current` (the live object) may not be removed, or "" when it is still archctl's.
std::string ownership_problem(const RouteRecord& r, const CreatedObject& c, const json& current) {
    if (!c.fingerprint.empty()) {
        return config_fingerprint(current) == c.fingerprint ? "" : "changed since archctl created it";
    }
    // Recorded as intended only: archctl crashed between the write and reading it back. Accept
    // it when it is exactly what archctl was about to create.
    const bool on_cache = c.node == r.cache;
    if (c.kind == ObjectKind::folder) {
        const std::string& expected = on_cache ? r.cache_path : r.archive_path;
        return strip_trailing_slashes(current.value("path", "")) == expected ? "" : "its path is not the one archctl planned";
    }
    const std::string& peer = on_cache ? r.archive : r.cache;
    return current.value("name", "") == peer ? "" : "its name is not the one archctl gave it";
}

// A folder on the link's Syncthing that shares `device`, or "". (Folders this rollback removed
// are gone already: objects are undone in reverse creation order, a node's folder before the
// device it was created after.) Removing a device a folder still lists would silently change
// that folder.
Result<std::string> folder_using(session::NodeSession& link, const std::string& device) {
    ARCHCTL_TRY_ASSIGN(auto folders, link.st().folders());
    for (const auto& f : folders) {
        if (std::find(f.devices.begin(), f.devices.end(), device) != f.devices.end()) return f.id;
    }
    return std::string();
}

Status remove_object(session::NodeSession& link, const CreatedObject& c) {
    if (c.kind == ObjectKind::folder) return link.st().delete_folder(c.id);
    return link.st().delete_device(c.id);
}

// Decide and act on one object; updates its status/note. Returns false when the node could not
// be asked (the object stays as recorded).
Result<bool> roll_back_one(Session& s, RouteRecord& r, CreatedObject& c) {
    ARCHCTL_TRY_ASSIGN(session::NodeSession * link, s.link(c.node));
    auto current = read_object(*link, c.kind, c.id);
    if (!current.ok()) {
        c.note = fmt::format("not checked: {}", current.error().message);
        return false;
    }
    if (!current.value()) {
        c.status = ObjectStatus::absent;
        c.note.clear();
        return true;
    }
    std::string problem = ownership_problem(r, c, *current.value());
    if (problem.empty() && c.kind == ObjectKind::device) {
        auto user = folder_using(*link, c.id);
        if (!user.ok()) {
            c.note = fmt::format("not checked: {}", user.error().message);
            return false;
        }
        if (!user->empty()) problem = fmt::format("folder '{}' uses it", user.value());
    }
    if (!problem.empty()) {
        c.status = ObjectStatus::kept;
        c.note = problem;
        return true;
    }
    Status removed = remove_object(*link, c);
    if (!removed.ok()) {
        c.note = fmt::format("not removed: {}", removed.error().message);
        return false;
    }
    crash_point("route.rollback.deleted");
    c.status = ObjectStatus::removed;
    c.note.clear();
    return true;
}

}  // namespace

Result<RollbackReport> rollback_record(Session& s, RouteRecord& r) {
    if (!r.verified_at.empty() || r.state == RouteState::ready)
        return Error(ErrorCode::ROUTE_VERIFIED, fmt::format("route '{}' was verified ready; archctl never removes a verified route", r.id),
                     "remove its folder and devices in Syncthing by hand if it must go");
    RollbackReport report;
    report.id = r.id;
    bool complete = true;
    for (auto it = r.created.rbegin(); it != r.created.rend(); ++it) {
        CreatedObject& c = *it;
        if (c.status == ObjectStatus::removed || c.status == ObjectStatus::absent) continue;
        auto done = roll_back_one(s, r, c);
        if (!done.ok()) return done.take_error();
        c.at = now_text();
        ARCHCTL_TRY_STATUS(s.store().save(r, "rollback.recorded"));
        if (c.status != ObjectStatus::removed && c.status != ObjectStatus::absent) complete = false;
    }
    report.complete = complete;
    if (complete) {
        r.state = RouteState::rolled_back;
        r.step = "rolled back";
        r.step_started_at = now_text();
        r.seen.clear();
        ARCHCTL_TRY_STATUS(s.store().save(r, "rolled_back"));
    }
    report.objects = r.created;
    return report;
}

}  // namespace archctl::routes
