#pragma once
// What `status RES` reads live for each resource: every configured node's placement of it, as
// that node's qBittorrent reports it now, and per cache placement how much of it archive
// placements hold by the live test evict applies (docs/status.md "What status reads").

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/clients/qbittorrent/types.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/torrent/identity.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::jobs::report {

// What one node holds of a resource, as its qBittorrent reports it now.
struct PlacementSummary {
    std::string node, role;
    std::string error;                 // the node could not be read (then nothing else is known)
    bool present = false;              // the node's qBittorrent has the torrent
    std::string qb_id, save_path, run_state;
    std::size_t files = 0, selected = 0, complete = 0;
    std::int64_t selected_bytes = 0, complete_bytes = 0;
    torrent::Selection selected_set, complete_set;
    std::vector<std::string> names;    // file paths by qB index
    clients::qbittorrent::TorrentInfo info;                    // qB's torrent entry
    std::vector<clients::qbittorrent::TorrentFile> file_list;  // qB's file list
    std::optional<state::PlacementRecord> record;  // archctl's last commit on this node

    nlohmann::json to_json() const;
};

// How much of one cache placement's selected files archive placements hold now, by the live
// test evict applies before it deletes anything (docs/evict-proof.md "The per-file judgement").
struct CoverageSummary {
    std::string cache;
    std::size_t files = 0, covered = 0;
    std::map<std::string, std::size_t> by_archive;  // archive node → files of this cache it proves
    std::vector<std::string> missing;               // paths no archive node proves
    std::vector<std::pair<std::string, std::string>> refused;  // (path, why no archive copy counts)
    std::vector<std::string> notes;                 // archive placements that do not count, and why

    nlohmann::json to_json() const;
};

struct ResourceStatus {
    torrent::Identity identity;
    std::string name;
    std::vector<PlacementSummary> placements;  // every configured node, by name
    std::vector<CoverageSummary> coverage;     // one per cache node holding the resource

    nlohmann::json to_json() const;
};

// Fill in the placements and coverage of each resource (given by identity and name) on every
// configured node: one torrent list per node for all of them; a placement whose torrent entry
// proves every file selected and complete takes the resource's file table (kept in the state
// directory's cache/files/ after its first read), every other placement reads its own file list
// (docs/status.md "What status reads"). An unreadable node is reported in its placement's
// `error`, never fatal.
// `count_shared`: evict.count_shared_copies (coverage counts copies other torrents share).
[[nodiscard]] std::vector<ResourceStatus> resource_status(Nodes& nodes, const state::StateDir& dir,
                                                          const std::vector<ResourceStatus>& resources, bool count_shared = false);

}  // namespace archctl::jobs::report
