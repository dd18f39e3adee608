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
#include "lib/session/space.hpp"
#include "lib/torrent/identity.hpp"

namespace archctl::jobs::evidence {

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

// What resolve() is made of, for a caller that holds the lists itself (Snapshot below).
// RES lowered, or BAD_VALUE (not hex, too short or too long).
[[nodiscard]] Result<std::string> res_prefix(const std::string& res);
// Whether one of the torrent's hashes (id, v1, v2) starts with the lowered prefix.
[[nodiscard]] bool matches_res(const clients::qbittorrent::TorrentInfo& torrent, const std::string& prefix);
// A torrent of a node's list that matches RES.
struct ResMatch {
    std::string node;
    const clients::qbittorrent::TorrentInfo* torrent = nullptr;
};
// The one resource `matches` (in node order, then list order) name, or NOT_FOUND / AMBIGUOUS as
// resolve() says them for `res_in`. Nothing found while a node could not be read because of an
// outage (`outage`: the first such error) is that outage, not NOT_FOUND: the node may hold it.
[[nodiscard]] Result<Resource> resource_of(const std::string& res_in, const std::vector<ResMatch>& matches,
                                           std::vector<std::string> unreachable, std::optional<Error> outage = std::nullopt);

// The live placement of `resource` on `node` (files, selection, completion), or nullopt when
// the node's qBittorrent does not have it.
[[nodiscard]] Result<std::optional<plan::PlacementView>> read_placement(NodeHandle& node, const Resource& resource);

// Snapshot: what planning many resources reads once per command (docs/design.md "Many resources
// and tier policies"): each node's torrent list — one torrents/info on first use, its error kept
// too — indexed by every hash, and a node's free space at a directory (errors are asked again).
// resolve() and placement() answer as the live resolve() and read_placement() do, from the
// lists; only a placement's file list (torrents/files) is read per resource, when asked for. A
// command planning one resource builds a snapshot of its own; a plan made again later (a batch's
// re-plan) builds a fresh one.
//
//   jobs::evidence::Snapshot snapshot(nodes);
//   ARCHCTL_TRY_ASSIGN(Resource r, snapshot.resolve(res));
//   ARCHCTL_TRY_ASSIGN(auto view, snapshot.placement(*node, r));   // one torrents/files
class Snapshot {
public:
    explicit Snapshot(Nodes& nodes) : m_nodes(nodes) {}
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;

    [[nodiscard]] Nodes& nodes() { return m_nodes; }
    // `node`'s torrent list, read on the first call.
    [[nodiscard]] const Result<NodeHandle::TorrentList>& torrents(NodeHandle& node);
    // resolve(nodes, res) over the lists.
    [[nodiscard]] Result<Resource> resolve(const std::string& res);
    // read_placement(node, resource) with the torrent's entry from the list: its file list only.
    [[nodiscard]] Result<std::optional<plan::PlacementView>> placement(NodeHandle& node, const Resource& resource);
    // node.space(path), measured once.
    [[nodiscard]] Result<session::Space> space(NodeHandle& node, const std::string& path);

private:
    struct NodeList {
        Result<NodeHandle::TorrentList> list;
        std::map<std::string, std::vector<std::size_t>> by_hash;  // lowered id, v1 and v2 → positions in the list
    };
    NodeList& list_of(NodeHandle& node);

    Nodes& m_nodes;
    std::map<std::string, NodeList> m_lists;                             // by node
    std::map<std::pair<std::string, std::string>, session::Space> m_space;  // by node and path
};

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

}  // namespace archctl::jobs::evidence
