#pragma once
// The checks a job's preflight makes of the real source and target before it moves anything
// (DESIGN.md §5 "Preflight", §9): one place decides, for `plan`, for the command that creates
// the job and for the job's preflight before staging, so plan never promises what the job would
// refuse and both say it in the same words.
//
//   auto needs = SourceNeeds{...};                 // what the job will read, from the plan or the definition
//   ARCHCTL_TRY_STATUS(check_source_ready(*src, view, needs, named, torrent_name));
//   ARCHCTL_TRY_STATUS(check_target_paths(*dst, target_save_path, files));

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/jobs/job.hpp"
#include "lib/jobs/nodes.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/file_model.hpp"

namespace archctl::jobs {

// What a job reads from its source placement.
struct SourceNeeds {
    std::string save_path;                      // where the job reads the files (node path): the data path
    std::vector<JobFile> files;                 // the delta, at metainfo paths
    plan::PartfileNeed partfile = plan::PartfileNeed::none;
    std::vector<std::int64_t> boundary_pieces;  // pieces of the union that need skipped files' bytes
    torrent::Selection union_set;               // the target union (which files are not requested)
    std::int64_t piece_count = 0, piece_length = 0;
    // The torrent's files (needed only when the part file is carried: which files share the
    // boundary pieces, for the message); null otherwise.
    const torrent::FileModel* model = nullptr;
};

// The source as the job will find it: `named` (the files whose qBittorrent names must be their
// metainfo paths: every file for plan, the union for the job) named so (RENAMED_IN_QB), its
// content where the job reads it (`needs.save_path`: the save path, or qBittorrent's
// incomplete-downloads folder while the content is there; elsewhere SOURCE_INCOMPLETE or
// BAD_PATH), every delta file a regular file of its size reached without a symlink
// (PATH_SYMLINK, NOT_REGULAR, NOT_FOUND, SOURCE_CHANGED), and, when the plan carries the
// source's part file, a part file that exists, matches the torrent and holds every boundary
// piece (PARTFILE_UNSUPPORTED). `view` is the live source placement.
[[nodiscard]] Status check_source_ready(NodeHandle& source, const plan::PlacementView& view, const SourceNeeds& needs,
                                        const std::vector<JobFile>& named, const std::string& torrent_name);

// RENAMED_IN_QB when one of `files` has another name in qBittorrent (`view`) than its metainfo
// path; the message is plan::check_names'.
[[nodiscard]] Status check_names(const plan::PlacementView& view, const std::vector<JobFile>& files, const std::string& torrent_name);

// The target save path reached without a symlink, and no delta file's path there taken by a
// symlink, a directory or anything but a regular file (PATH_SYMLINK, MERGE_CONFLICT).
[[nodiscard]] Status check_target_paths(NodeHandle& target, const std::string& save_path, const std::vector<JobFile>& files);

// The delta files already on the target at their full size (regular files): merge keeps them as
// they are and the recheck judges their bytes, so plan names them and a failed recheck says
// which were there before.
[[nodiscard]] Result<std::vector<JobFile>> preexisting_target_files(NodeHandle& target, const std::string& save_path,
                                                                    const std::vector<JobFile>& files);

// An existing v1 target that must verify the union's boundary pieces with its own bytes
// (PartfileNeed::target_own): each boundary piece is in the target's part file, or every file
// outside the union that shares it is on the target's disk at its full size (libtorrent then
// reads it from there). PARTFILE_UNSUPPORTED otherwise, naming the files to add. Needs
// `needs.model`; nothing to check for other needs.
[[nodiscard]] Status check_target_partfile(NodeHandle& target, const std::string& save_path, const std::string& qb_id,
                                           const SourceNeeds& needs);

}  // namespace archctl::jobs
