#pragma once
// Discovery: which Syncthing folders are routes (docs/routes.md), from each node's live config.
//
// On a node N, a folder is one side of a route to node M when it lies below N's sync root, its
// type is `sendreceive`, and its device list is exactly {N's device, M's device} where M is a
// configured node of the other role. A route is such a folder present on both N and M with the
// same folder ID. Everything else is ignored, with a reason, and never modified: multi-device
// folders, other types, folders outside the sync root, folders shared with devices that are no
// configured node. classify() is pure; read_snapshot() does the REST reads.
//
// A node whose Syncthing does not answer is `unreachable`, never a reason to think its routes are
// gone: look_up_pair() says `unreachable` for a pair with no route found while either node could
// not be read, and `absent` only when both answered (docs/routes.md "Unreachable is not missing").
// Each route side also carries the folder settings that break the valve (valve.hpp).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/clients/syncthing/api.hpp"
#include "lib/config/config.hpp"
#include "lib/routes/valve.hpp"

namespace archctl::routes {

// What one node's Syncthing said (or that it could not be read).
struct NodeSnapshot {
    std::string node;
    config::Role role = config::Role::cache;
    std::string sync_root;
    bool reachable = false;
    std::string error;        // why it could not be read
    std::string error_code;   // the error's code (HTTP_UNREACHABLE, ST_AUTH, …)
    std::string device_id;    // this Syncthing's own device ID
    std::vector<clients::syncthing::Folder> folders;
    std::vector<clients::syncthing::Device> devices;
    std::vector<std::string> listen_addresses;  // options.listenAddresses
};

// A folder that is no side of a route, and why.
struct IgnoredFolder {
    std::string node;
    std::string folder_id;
    std::string path;
    std::string type;
    std::string reason;
};

// One side of a possible route whose other side is missing or unreadable.
struct HalfRoute {
    std::string id;
    std::string node;
    std::string peer;
    std::string path;
    std::string reason;
};

// The valve problems of one side's folder (valve.hpp).
struct NodeValve {
    std::string node;
    std::vector<ValveProblem> problems;
};

struct DiscoveredRoute {
    std::string id;
    std::string cache, archive;
    std::string cache_path, archive_path;
    std::string cache_device, archive_device;
    std::vector<NodeValve> valve;  // sides whose folder settings break the valve (cache first)
};

// "cache1: versioning 'trashcan' (must be off); archive1: ignorePerms false (must be true)"
[[nodiscard]] std::string valve_text(const std::vector<NodeValve>& valve);

struct Discovery {
    std::vector<DiscoveredRoute> routes;  // sorted by id
    std::vector<HalfRoute> half;
    std::vector<IgnoredFolder> ignored;
    std::map<std::string, std::string> unreachable;  // node → why its Syncthing could not be read
    std::set<std::string> answered;                  // nodes whose Syncthing was read

    // Routes between `cache` and `archive` (by node name), sorted by id.
    [[nodiscard]] std::vector<DiscoveredRoute> between(const std::string& cache, const std::string& archive) const;
    [[nodiscard]] const DiscoveredRoute* find(const std::string& id) const;
};

// What discovery can say about one cache/archive pair.
enum class PairLook {
    found,        // at least one route joins the pair
    unreachable,  // none found, but a node's Syncthing did not answer: nothing is known
    absent,       // both Syncthings answered and no folder pair joins them
};

struct PairStatus {
    PairLook look = PairLook::absent;
    std::vector<DiscoveredRoute> routes;  // found: the pair's routes, sorted by id
    std::string down;                     // unreachable: the node (the cache first)
    std::string why;                      // unreachable: its error
};

// The pair's status in `discovery`. A node missing from the snapshots counts as unreachable.
[[nodiscard]] PairStatus look_up_pair(const Discovery& discovery, const std::string& cache, const std::string& archive);

// "Syncthing of 'archive2' does not answer (<why>)" for the first node of the pair that did not
// answer; "" when both did.
[[nodiscard]] std::string unreachable_text(const Discovery& discovery, const std::string& cache, const std::string& archive);

// Classify every folder of every reachable snapshot. `known_devices` maps node name → device ID
// for nodes whose Syncthing could not be read (from earlier records), so a folder shared with
// such a node is reported as a half route rather than as shared with an unknown device.
[[nodiscard]] Discovery classify(const std::vector<NodeSnapshot>& snapshots,
                                 const std::map<std::string, std::string>& known_devices = {});

// Read status, folders, devices and listen addresses of one node's Syncthing. Never fails:
// an unreachable Syncthing gives reachable = false and the error text.
[[nodiscard]] NodeSnapshot read_snapshot(clients::syncthing::Api& client, const config::NodeConfig& node);

}  // namespace archctl::routes
