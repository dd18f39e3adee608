#pragma once
// Live evidence about archive placements (docs/evict-proof.md): what plan::judge_file decides on, read
// fresh from the node — qBittorrent's state and file list for the torrent, the archive node's
// own stat of each file at its metainfo path, and the stamps archctl recorded when its recheck
// committed those files. Used by `plan evict`, `status`, evict's proof and its revalidation
// before every deletion, so they can never disagree.
//
// Whether the copy will stay is part of the evidence: the torrent's effective share limits (the
// node's global limits, read once per session) and the other torrents on the node whose files
// are this copy's files (a torrent whose content path holds one of the copy's paths has its file
// list read to confirm it).
//
// Cost per archive placement: one torrents/files request (the caller brings the torrent's info,
// one torrents/info request), one node `tree` batch for all its files, and the file list of each
// other torrent whose content path holds one of its paths.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::jobs::evidence {

// The placement view of torrent `info` on `node`, from qBittorrent's file list.
plan::PlacementView placement_view(const std::string& node, const clients::qbittorrent::TorrentInfo& info,
                                   const std::vector<clients::qbittorrent::TorrentFile>& files);

// What archctl recorded on `node` for the resource (under any of its aliases) at its last commit:
// the generation (0: never committed) and the stamp of every file its recheck verified.
struct CommittedFiles {
    std::uint64_t generation = 0;
    std::map<std::uint32_t, plan::FileStamp> stamps;
};
[[nodiscard]] Result<CommittedFiles> committed_files(const state::StateDir& dir, const std::vector<std::string>& aliases,
                                                     const std::string& node);

// The node's stat of each of `files` below `base` (one `tree` batch), indexed by file index over
// `file_count` entries; indices not asked stay "unread".
[[nodiscard]] Result<std::vector<plan::DiskFile>> stat_files(NodeHandle& node, const std::string& base,
                                                             const std::vector<plan::CoverageFile>& files, std::size_t file_count);

struct EvidenceOptions {
    plan::VerifyArchive verify = plan::VerifyArchive::no;
    bool count_shared = false;  // evict.count_shared_copies
    // The node's torrents, for the shared-files check: a snapshot a plan or report already
    // holds; null: read fresh (what a revalidation right before a deletion does).
    const std::vector<clients::qbittorrent::TorrentInfo>* torrents = nullptr;
};

// Other torrents in `torrents` (the node's list) whose files include one of `paths` (absolute
// node paths), each named "'name' (qB id 12)"; `self` is skipped.
[[nodiscard]] Result<std::vector<std::string>> torrents_sharing(NodeHandle& node, const std::string& self,
                                                                const std::vector<std::string>& paths,
                                                                const std::vector<clients::qbittorrent::TorrentInfo>& torrents);

// Everything judge_file needs about the placement `info` on `node`, given qBittorrent's file
// list for it. `files` is the resource's file list (metainfo paths and sizes; a path "" for a
// file not asked about); only files qBittorrent reports selected and complete are stat'ed, each
// at the path the placement's content layout gives it.
[[nodiscard]] Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const clients::qbittorrent::TorrentInfo& info,
                                                             const std::vector<clients::qbittorrent::TorrentFile>& qb_files,
                                                             const std::vector<plan::CoverageFile>& files,
                                                             const CommittedFiles& committed, const EvidenceOptions& options);
// The same, reading qBittorrent's file list first.
[[nodiscard]] Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const clients::qbittorrent::TorrentInfo& info,
                                                             const std::vector<plan::CoverageFile>& files,
                                                             const CommittedFiles& committed, const EvidenceOptions& options);

// Stamps of the regular files among `stats` (for the record a commit writes).
std::map<std::uint32_t, plan::FileStamp> stamps_of(const std::vector<plan::DiskFile>& stats);

}  // namespace archctl::jobs::evidence
