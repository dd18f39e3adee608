#pragma once
// Route records: `<state>/routes/<route-id>.json`, one per route archctl provisioned or verified
// (docs/design.md "State on disk"; docs/routes.md).
//
// Live Syncthing config is the authority for whether a route exists (see discovery.hpp); a record
// adds what config cannot say: which provisioning step an attempt reached and what it saw there,
// every config object the attempt created (with a fingerprint of the object as created, so a
// rollback removes only what is still unambiguously archctl's), and when a nonce exchange last
// proved the route in both directions.
//
// Every write is atomic (temp + fsync + rename + fsync dir) and passes the named crash point
// "route.<what>" right after the write, so a test can kill archctl at each durable step. A crash
// leaves the previous or the new record, never a torn one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"

namespace archctl::routes {

// provisioning: an attempt is under way or was interrupted (a rerun continues it);
// timed_out / failed: the attempt gave up (a rerun continues it, rollback undoes it);
// rolled_back: what the attempt created was removed again; ready: verified by a nonce exchange.
enum class RouteState { provisioning, timed_out, failed, rolled_back, ready };

[[nodiscard]] std::string to_string(RouteState state);
[[nodiscard]] std::optional<RouteState> parse_route_state(std::string_view text);

enum class ObjectKind { device, folder };
[[nodiscard]] std::string to_string(ObjectKind kind);

// intended: about to be created (written before the PUT, so a crash right after the PUT is
// recognised); created: exists as archctl made it (fingerprint set); removed: deleted again by a
// rollback; absent: gone already when a rollback looked; kept: left in place because ownership
// was ambiguous (note says why).
enum class ObjectStatus { intended, created, removed, absent, kept };
[[nodiscard]] std::string to_string(ObjectStatus status);

// One Syncthing config object an attempt created on one node.
struct CreatedObject {
    std::string node;         // the node whose Syncthing holds the object
    ObjectKind kind = ObjectKind::device;
    std::string id;           // device ID or folder ID
    std::string fingerprint;  // of the object as read back right after creation
    ObjectStatus status = ObjectStatus::intended;
    std::string at;           // RFC 3339 of the last status change
    std::string note;         // why an object was kept

    bool operator==(const CreatedObject&) const = default;
};

struct RouteRecord {
    std::string id;                       // = Syncthing folder ID
    std::string cache, archive;           // node names
    std::string cache_path, archive_path; // folder paths on each node
    std::string cache_device, archive_device;  // Syncthing device IDs, once known
    RouteState state = RouteState::provisioning;
    std::string origin = "provisioned";   // or "discovered" (a pair made outside archctl)
    std::string created_at, updated_at;

    // Provisioning diagnosis: the step reached, when it began, what was last seen there, and the
    // error that ended the attempt.
    std::string step;
    std::string step_started_at;
    std::string seen;
    std::string error;
    std::vector<CreatedObject> created;

    std::string verified_at;     // last nonce exchange that succeeded both ways
    std::string last_check_at;   // last nonce exchange attempted
    std::string last_check;      // "ok" or what failed
    double last_check_seconds = 0;

    bool operator==(const RouteRecord&) const = default;

    // The entry for (node, kind, id), or nullptr.
    [[nodiscard]] CreatedObject* find_created(const std::string& node, ObjectKind kind, const std::string& id);
    [[nodiscard]] const CreatedObject* find_created(const std::string& node, ObjectKind kind, const std::string& id) const;
};

[[nodiscard]] nlohmann::json to_json(const RouteRecord& record);
// CORRUPT (naming `source`) when the object lacks an id, nodes or a known state.
[[nodiscard]] Result<RouteRecord> record_from_json(const nlohmann::json& object, const std::string& source);

// The records under one `<state>/routes/` directory.
class RouteStore {
public:
    explicit RouteStore(std::string dir) : m_dir(std::move(dir)) {}

    [[nodiscard]] const std::string& dir() const { return m_dir; }
    [[nodiscard]] std::string path_of(const std::string& id) const;

    // Every record, sorted by id. Unreadable or corrupt files are skipped and described in
    // `problems` (a record is a cache of evidence; live config stays the authority).
    [[nodiscard]] std::vector<RouteRecord> load_all(std::vector<std::string>& problems) const;
    // nullopt when there is no record for `id`.
    [[nodiscard]] Result<std::optional<RouteRecord>> load(const std::string& id) const;
    // Stamp updated_at, write atomically, then pass crash point "route.<crash_name>".
    [[nodiscard]] Status save(RouteRecord& record, std::string_view crash_name) const;
    // Remove the record of `id` durably (unlink, fsync the directory), then pass crash point
    // "route.rm.record". No record is no error.
    [[nodiscard]] Status remove(const std::string& id) const;

private:
    std::string m_dir;
};

// True when `id` is safe as a record file name (letters, digits, '-', '_', '.'; no leading '.').
[[nodiscard]] bool valid_route_id(std::string_view id);

}  // namespace archctl::routes
