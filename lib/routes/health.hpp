#pragma once
// Route health (docs/routes.md): both folders configured, shared with the peer, not paused,
// without folder or file errors, their marker present, and the peer device connected on both
// sides. judge_health() is pure; probe_side() gathers the facts of one side.
//
// Health is necessary, not sufficient: a route is `ready` only after a nonce exchange (nonce.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/syncthing/api.hpp"
#include "lib/node/client/transport.hpp"

namespace archctl::routes {

struct SideFacts {
    std::string node;
    bool reachable = false;
    std::string error;            // why the Syncthing could not be read
    bool folder_present = false;
    bool shares_peer = false;     // the folder's device list holds the peer
    bool paused = false;
    std::string state;            // db/status state ("" = not running)
    std::string folder_error;     // db/status error
    std::int64_t file_errors = 0; // db/status errors (per-file pull errors)
    bool peer_connected = false;
    std::optional<bool> marker_present;  // nullopt: the node could not be asked
    std::string marker_error;
    std::string folder_path;
    std::optional<Error> folder_refused;  // the node refuses the folder's path (a symlink, outside its roots)
};

struct Health {
    bool healthy = false;
    std::vector<std::string> problems;  // e.g. "archive1: peer cache1 not connected"
    // A problem no wait can fix (a route folder that is a symlink): the error that says which
    // path and what to do; waits end at once with it.
    std::optional<Error> blocker;
    [[nodiscard]] std::string summary() const;  // problems joined with "; ", or "healthy"
};

[[nodiscard]] Health judge_health(const SideFacts& cache, const SideFacts& archive);

// What one side looks like now. `transport` may be null (marker then unknown, a problem).
[[nodiscard]] SideFacts probe_side(clients::syncthing::Api& client, node::Transport* transport,
                                   const std::string& node_name, const std::string& folder_id,
                                   const std::string& folder_path, const std::string& peer_device);

}  // namespace archctl::routes
