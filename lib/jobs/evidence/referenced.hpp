#pragma once
// The paths a node's qBittorrent references now (docs/design.md "Failure before commit", "Evict"):
// the one snapshot every unlink on a node is checked against. It is read fresh right before the
// unlink — one torrent list, then each torrent's file list — and never kept across steps.
//
// A torrent references save path + "/" + each file's name as qBittorrent lays it out (renamed
// files under their new names, skipped files too: qBittorrent still lists them, and libtorrent
// reads a skipped file's boundary bytes from it when it exists). A trailing slash of a save
// path is dropped.

#include <set>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/jobs/core/nodes.hpp"

namespace archctl::jobs::evidence {

struct Referenced {
    std::set<std::string> paths;      // every referenced node path
    std::vector<std::string> qb_ids;  // the torrents whose files were read, in qBittorrent's order
    bool excluded_present = false;    // the excluded torrent was listed (and skipped)
    std::size_t torrents = 0;         // torrents listed, the excluded one included
};

// Every path a torrent in `node`'s qBittorrent references now (save path + "/" + each file's
// name, as qBittorrent lays it out), read fresh right before an unlink: one torrent list, then
// each torrent's file list. The torrent `excluding_qb_id` (if given) is skipped.
[[nodiscard]] Result<Referenced> referenced_paths(NodeHandle& node, const std::string& excluding_qb_id = {});

// The same, for a caller that only unlinks at or below `dir` (a job's staging directory): the
// file list of a torrent whose save path can hold no such path is not read, so a check of a
// route folder costs one torrent list. `qb_ids` names only the torrents read.
[[nodiscard]] Result<Referenced> referenced_paths_below(NodeHandle& node, const std::string& dir,
                                                        const std::string& excluding_qb_id = {});

// True when `path` is `dir` or lies below it (both without a trailing slash; "" is the root).
[[nodiscard]] bool path_at_or_below(const std::string& path, const std::string& dir);

}  // namespace archctl::jobs::evidence
