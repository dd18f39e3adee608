#pragma once
// Nonce files: the proof that a route carries bytes in one direction. The writer's node writes a
// small file with unique content at the root of its route folder; the reader's node must then
// hold a file of that name with exactly that content (a stale copy from an earlier check has
// other content and does not count). Both go through the node operations
// (`nonce_write`, `nonce_observe`), so they run on the node that owns the disk.

#include <string>

#include "lib/base/result.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::routes {

struct NonceFile {
    std::string folder_path;  // the route folder on the node (node path)
    std::string name;         // ".archctl-nonce-<writer>": one file per direction, overwritten
                              // by each check, so checks leave nothing behind
    std::string content;      // unique per check: route, writer, time, 128 random bits
};

// A fresh nonce for one direction of route `route_id`, written by node `writer`.
[[nodiscard]] NonceFile make_nonce(const std::string& route_id, const std::string& writer, const std::string& folder_path);

// Write the nonce file (atomically, durable) on the link's node.
[[nodiscard]] Status write_nonce(session::NodeSession& link, const NonceFile& nonce);
// True when the node holds the nonce file with exactly the expected content.
[[nodiscard]] Result<bool> observe_nonce(session::NodeSession& link, const NonceFile& nonce);

}  // namespace archctl::routes
