#pragma once
// archctl::routes — discover, verify and provision the Syncthing routes between cache and
// archive nodes (docs/routes.md). The functions here are what `archctl route` and the transfer planner
// call; each reads live Syncthing config first (the authority) and keeps its own evidence in
// `<state>/routes/<id>.json` (route_record.hpp).
//
// ensure_route(cache, archive):
//   1. discover: a route for the pair that is healthy and was verified within
//      routes.check_max_age is returned at once (no writes); an unverified or stale one is
//      verified by a nonce exchange; a half-configured pair or an unfinished attempt for the pair
//      (a record not ready) is continued under the same route ID;
//   2. otherwise a new attempt: route ID `archctl-<cache>-<archive>-<random>`, folder path
//      `<sync_root>/<route id>` on each node;
//   3. per node, cache first: add the peer device (ID, name, the peer's dialable addresses), then
//      the folder (sendreceive, ignorePerms, no versioning, watcher delay 1 s, rescan 3600 s) —
//      each only when absent, recording the intent before and the object's fingerprint after;
//   4. wait until both folders are healthy and the devices connected (health.hpp);
//   5. write a unique nonce file on each side through the node operations and observe it on the
//      other; mark the route ready.
// Every wait ends at the attempt's deadline (routes.provision_timeout from this run's start:
// ROUTE_TIMEOUT, the record says which step and what was seen), at EnsureOptions::stop_at
// (ROUTE_DEADLINE) or at the first interrupt (ROUTE_INTERRUPTED); the last two are clean stops
// a rerun continues. A hard failure (Syncthing refused a config write, a conflicting object)
// rolls back what the attempt created and marks it failed.
//
// Under policy eager_mesh, ensure_route first provisions every other missing online pair.
//
// Unreachable is not missing (docs/routes.md): step 2 runs only when both Syncthings answered
// and no folder pair joins the nodes. While a node's Syncthing does not answer, ensure_route
// re-reads discovery with short naps for up to transfer.outage_wait (an existing route found
// meanwhile is used), then stops cleanly with ROUTE_WAITING. The waits of steps 3–5 that wait
// only because a Syncthing does not answer end the same way, within the same window, leaving the
// record `provisioning` for a rerun to continue under the same route ID.
//
// remove_route (`route rm`) removes a route archctl created, once no unfinished job uses it;
// repair_route (`route ensure --repair`) sets the valve settings (valve.hpp) on both folders.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/clients/node_clients.hpp"
#include "lib/config/config.hpp"
#include "lib/routes/discovery.hpp"
#include "lib/routes/health.hpp"
#include "lib/routes/route_record.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::routes {

// What every routes function needs.
struct Env {
    const config::Config& config;
    const state::StateDir& state;
    std::function<void(const std::string&)> info;  // progress chatter (may be empty)
    // The run's node sessions, shared with the caller: one login per service and one exec child
    // per node for the whole command, whichever routes calls it makes.
    session::NodeSessions& nodes;
};

struct EnsureOptions {
    std::optional<SteadyTime> stop_at;  // --max-minutes: stop cleanly here (ROUTE_DEADLINE)
    // --no-wait: what is not ready at the first look ends the call as a clean stop
    // (ROUTE_WAITING, saying why) instead of waiting; a nonce on a healthy route still gets
    // k_no_wait_nonce_grace to travel.
    bool no_wait = false;
};

// What ensure_route did.
enum class EnsureAction { already_ready, verified, provisioned };
[[nodiscard]] std::string to_string(EnsureAction action);

struct Route {
    std::string id;
    std::string cache, archive;
    std::string cache_path, archive_path;
    std::string verified_at;
    EnsureAction action = EnsureAction::already_ready;
};

// True for the errors that are clean stops (ROUTE_INTERRUPTED, ROUTE_DEADLINE, ROUTE_WAITING): exit 10.
[[nodiscard]] bool is_clean_stop(const Error& error);

// Make sure a ready route exists between `cache` and `archive` (node names), provisioning one
// when needed (see the overview).
[[nodiscard]] Result<Route> ensure_route(Env& env, const std::string& cache, const std::string& archive,
                                         const EnsureOptions& options = {});

// One route as `route list` / `route show` present it.
struct RouteEntry {
    std::string id;
    std::string cache, archive;
    std::string cache_path, archive_path;
    // ready | stale (verified longer ago than routes.check_max_age) | unverified | unhealthy |
    // unsafe (a folder's settings break the valve: `valve` says which) |
    // provisioning | timed_out | failed | rolled_back | missing (a ready record whose folders
    // are gone from the config of two Syncthings that answered) | unreachable (a node's
    // Syncthing does not answer, so its folders cannot be checked) | half (one side configured)
    std::string state;
    std::string health;         // Health::summary(), or "" when not probed
    bool discovered = false;    // found in live config on both nodes
    std::optional<RouteRecord> record;
    std::vector<NodeValve> valve;  // discovered: the sides whose settings break the valve
};

// The one-line fix of a route whose folder settings break the valve.
[[nodiscard]] std::string valve_fix(const std::string& route_id);

// The state of a discovered route (pure): unsafe, unhealthy, unverified, stale or ready.
[[nodiscard]] std::string discovered_state(bool valve_holds, bool healthy, const std::optional<RouteRecord>& record,
                                           bool fresh);
// The state of a recorded route discovery did not find on both nodes (pure): `unreachable` for
// a ready record while one of its nodes did not answer, `missing` when both did, else the
// record's own state.
[[nodiscard]] std::string recorded_state(const RouteRecord& record, const Discovery& discovery);

struct Listing {
    std::vector<RouteEntry> routes;
    Discovery discovery;
    std::vector<std::string> unreachable;  // "node: why"
    std::vector<std::string> problems;     // unreadable records
};

// Discover every route and merge the records. Probes health of each discovered route.
[[nodiscard]] Result<Listing> list_routes(Env& env);
// One route by ID (discovered or recorded). NOT_FOUND when neither knows it.
[[nodiscard]] Result<RouteEntry> show_route(Env& env, const std::string& id);

struct CheckReport {
    std::string id;
    Health health;
    bool ok = false;
    double seconds = 0;
    std::string verified_at;
    std::string error;
};

// Nonce exchange on a discovered route now (both directions); records the result. Fails with
// ROUTE_UNHEALTHY when health does not hold, ROUTE_CHECK_FAILED when a nonce was not seen.
[[nodiscard]] Result<CheckReport> check_route(Env& env, const std::string& id, const EnsureOptions& options = {});

struct RollbackReport {
    std::string id;
    std::vector<CreatedObject> objects;  // after the rollback: removed / absent / kept
    bool complete = false;               // nothing archctl created is left
};

// Remove the config objects the attempt `id` created, each only while it is unchanged since
// creation (fingerprint) and, for a device, no other folder uses it. Refuses (ROUTE_VERIFIED) a
// route that was ever verified ready.
[[nodiscard]] Result<RollbackReport> rollback_route(Env& env, const std::string& id);

struct MeshReport {
    std::vector<Route> ensured;                       // pairs that had no route and now have one
    std::vector<std::pair<std::string, std::string>> present;  // pairs that had a route
    std::vector<std::string> skipped;                 // "cache/archive: why" (offline nodes)
    std::vector<Error> failed;                        // pairs that could not be provisioned
};

// Provision every missing cache/archive pair whose nodes are both online.
[[nodiscard]] Result<MeshReport> ensure_mesh(Env& env, const EnsureOptions& options = {});

// One config object `route rm` or `route ensure --repair` looked at.
struct TouchedObject {
    std::string node;
    ObjectKind kind = ObjectKind::folder;
    std::string id;
    std::string status;  // rm: removed | absent | kept; repair: repaired | holds
    std::string note;    // why it was kept, or what was changed
};

struct RemoveReport {
    std::string id;
    std::vector<TouchedObject> objects;
    std::vector<std::pair<std::string, std::string>> files_left;  // (node, folder path): never touched
};

// `route rm ID`: remove the route archctl created under `id` — its folder on both Syncthings and,
// on each, the peer device when no other folder there shares it — then its record. Files on disk
// are never touched. Refuses (ROUTE_CONFLICT) a route archctl did not create, (ROUTE_IN_USE) one
// an unfinished job uses, and stops cleanly (ROUTE_WAITING) while a Syncthing does not answer.
// A verified route may be removed this way; a rerun after a crash finishes the removal.
[[nodiscard]] Result<RemoveReport> remove_route(Env& env, const std::string& id);

struct RepairReport {
    std::string id;
    std::vector<TouchedObject> folders;  // one per side
    std::string verified_at;             // the nonce exchange after the repair
};

// `route ensure --repair ID`: PATCH each side's folder with valve_repair() (only the valve keys),
// read it back, then verify the route by a nonce exchange. ROUTE_WAITING while a Syncthing does
// not answer; ROUTE_CONFIG_REFUSED when Syncthing did not keep the settings.
[[nodiscard]] Result<RepairReport> repair_route(Env& env, const std::string& id, const EnsureOptions& options = {});

[[nodiscard]] nlohmann::json to_json(const Route& route);
[[nodiscard]] nlohmann::json to_json(const RouteEntry& entry);
[[nodiscard]] nlohmann::json to_json(const IgnoredFolder& folder);
[[nodiscard]] nlohmann::json to_json(const HalfRoute& half);
[[nodiscard]] nlohmann::json to_json(const RollbackReport& report);
[[nodiscard]] nlohmann::json to_json(const CheckReport& report);
[[nodiscard]] nlohmann::json to_json(const MeshReport& report);
[[nodiscard]] nlohmann::json to_json(const RemoveReport& report);
[[nodiscard]] nlohmann::json to_json(const RepairReport& report);
[[nodiscard]] nlohmann::json to_json(const NodeValve& valve);

}  // namespace archctl::routes
