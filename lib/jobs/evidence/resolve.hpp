#pragma once
// Resolving RES (a full hash or an unambiguous prefix of ≥ 8 hex of any alias, like a short git
// id) against the live qBittorrent lists of every reachable node, and reading placements.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/identity.hpp"

namespace archctl::jobs {

struct Resource {
    torrent::Identity identity;
    std::string name;
    std::map<std::string, clients::qbittorrent::TorrentInfo> placements;  // node → qB's view
    std::vector<std::string> unreachable;                                  // "node: reason"

    std::vector<std::string> aliases() const;
    std::string short_id() const { return identity.qb_id().substr(0, 12); }
};

// Find RES on every node. Errors: BAD_VALUE (not hex, too short), NOT_FOUND (no node has it),
// AMBIGUOUS (the prefix matches different resources; the message lists them).
// Lists::fresh asks each qBittorrent for its list now; Lists::session reads the session's one
// list (NodeSession::torrent_list), for a report that reads it again afterwards (status).
enum class Lists { fresh, session };
[[nodiscard]] Result<Resource> resolve(Nodes& nodes, const std::string& res, Lists lists = Lists::fresh);

// The live placement of `resource` on `node` (files, selection, completion), or nullopt when
// the node's qBittorrent does not have it.
[[nodiscard]] Result<std::optional<plan::PlacementView>> read_placement(NodeHandle& node, const Resource& resource);

// Where the placement's files are now: qBittorrent's incomplete-downloads folder
// (download_path) while its content path is there ("Keep incomplete torrents in"), else its
// save path. qBittorrent moves the files to the save path when the torrent completes.
[[nodiscard]] std::string data_path(const plan::PlacementView& view);

// BAD_PATH naming the folder and the config key when the placement's files are in an
// incomplete-downloads folder outside the node's qb_root (the node serves nothing there).
[[nodiscard]] Status check_data_path_served(const plan::PlacementView& view, const config::NodeConfig& node,
                                            const std::string& torrent_name);

// Digest of what a job relies on about a placement (docs/design.md "Words" (fingerprint)).
[[nodiscard]] std::string fingerprint(const plan::PlacementView& view);

}  // namespace archctl::jobs
