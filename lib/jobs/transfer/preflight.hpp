#pragma once
// The checks a job's preflight makes of the real source and target before it moves anything
// (docs/design.md "Preflight", "Partfiles and piece boundaries"): one place decides, for `plan`, for the command that creates
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
#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/layout.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::jobs::transfer {

struct PartfileSourcing;

// What a job reads from its source placement.
struct SourceNeeds {
    std::string save_path;                      // where the job reads the files (node path): the data path
    std::vector<JobFile> files;                 // the delta (read at JobFile::at_source)
    plan::PartfileNeed partfile = plan::PartfileNeed::none;
    std::vector<std::int64_t> boundary_pieces;  // pieces of the union that need skipped files' bytes
    torrent::Selection union_set;               // the target union (which files are not requested)
    std::int64_t piece_count = 0, piece_length = 0;
    // The torrent's files (needed only when the part file is carried: which files share the
    // boundary pieces, for the message); null otherwise.
    const torrent::FileModel* model = nullptr;
    // The torrent's v1 piece hashes (needed only when the part file is built: each built piece
    // is checked against its SHA-1 before anything moves); null otherwise.
    const std::vector<torrent::Sha1Digest>* piece_hashes = nullptr;
    // When set and the part file is built from the source: where its bytes come from.
    PartfileSourcing* sourcing_out = nullptr;
    // Where the files are below `save_path` (that placement's content layout); null: at their
    // metainfo paths.
    const torrent::PlacementLayout* layout = nullptr;
};

// Where the bytes of a built part file come from on the source (docs/design.md "Partfiles and piece boundaries"): for every
// boundary piece, the ranges of the files outside the union, each read from that file on the
// source's disk (present there at its full size, and the piece verifies with it) or from the
// slot of that piece in the source's own part file.
struct PartfileSourcing {
    std::vector<std::uint32_t> from_disk;       // neighbour files read from the source's disk
    std::vector<std::uint32_t> from_partfile;   // neighbour files read from the source's part file
    // Piece by piece: which neighbour's bytes come from where ("disk" or "partfile").
    struct Bytes {
        std::int64_t piece = 0;
        std::uint32_t file = 0;
        const char* from = "disk";
    };
    std::vector<Bytes> bytes;
    std::string source_partfile;                // its path on the source node
    node::PartfileBuildRequest request;         // every boundary piece, with its SHA-1; `to` unset
    bool reads_partfile() const { return !from_partfile.empty(); }
};

// What job `def` reads below `save_path` (its source data path, or the target's save path for
// the target's own part file); model, hashes and layout unset.
[[nodiscard]] SourceNeeds needs_of(const JobDefinition& def, const std::string& save_path);

// File `index`'s path below needs.save_path: where needs.layout puts it, else its metainfo path.
[[nodiscard]] std::string source_disk_path(const SourceNeeds& needs, std::uint32_t index);

// Decides, for a new v1 target whose union has boundary pieces, where each piece's bytes of the
// files outside the union come from on the source (`node`'s torrent `qb_id`, read in
// needs.save_path); PARTFILE_UNSUPPORTED naming the pieces and files whose bytes are nowhere.
// Pieces whose outside bytes are all on disk are checked against their SHA-1 on the node
// (nothing written; one that fails there is taken from the part file when it holds it); of the
// source's part file only the header is read. Needs needs.model and needs.piece_hashes.
[[nodiscard]] Result<PartfileSourcing> source_partfile_plan(node::Ops& ops, const std::string& node, const std::string& qb_id,
                                                            const SourceNeeds& needs);

// The source as the job will find it: `named` (the files whose qBittorrent names must be the
// paths the placement's layout gives them, their `source_disk`: the union) named so (RENAMED_IN_QB), its
// content where the job reads it (`needs.save_path`: the save path, or qBittorrent's
// incomplete-downloads folder while the content is there; elsewhere SOURCE_INCOMPLETE or
// BAD_PATH), every delta file a regular file of its size reached without a symlink
// (PATH_SYMLINK, NOT_REGULAR, NOT_FOUND, SOURCE_CHANGED), and, when the plan builds the part
// file from the source, every boundary piece's outside bytes on the source's disk or in its
// part file (source_partfile_plan; PARTFILE_UNSUPPORTED). `view` is the live source placement.
[[nodiscard]] Status check_source_ready(NodeHandle& source, const plan::PlacementView& view, const SourceNeeds& needs,
                                        const std::vector<JobFile>& named, const std::string& torrent_name);

// RENAMED_IN_QB when one of `files` has another name in qBittorrent (`view`) than its path on
// the source's disk (JobFile::at_source); the message is plan::check_names'.
[[nodiscard]] Status check_names(const plan::PlacementView& view, const std::vector<JobFile>& files, const std::string& torrent_name);

// The target save path reached without a symlink, and no delta file's path there taken by a
// symlink, a directory or anything but a regular file (PATH_SYMLINK, MERGE_CONFLICT).
[[nodiscard]] Status check_target_paths(NodeHandle& target, const std::string& save_path, const std::vector<JobFile>& files);

// The delta files already on the target at their full size (regular files): merge keeps them as
// they are and the recheck judges their bytes, so plan names them and a failed recheck says
// which were there before.
[[nodiscard]] Result<std::vector<JobFile>> preexisting_target_files(NodeHandle& target, const std::string& save_path,
                                                                    const std::vector<JobFile>& files);
// Both of the above from one tree read of the target (what a plan needs).
[[nodiscard]] Result<std::vector<JobFile>> checked_preexisting_target_files(NodeHandle& target, const std::string& save_path,
                                                                            const std::vector<JobFile>& files);

// An existing v1 target that must verify the union's boundary pieces with its own bytes
// (PartfileNeed::target_own): each boundary piece is in the target's part file, or every file
// outside the union that shares it is on the target's disk at its full size (libtorrent then
// reads it from there). PARTFILE_UNSUPPORTED otherwise, naming the files to add. Needs
// `needs.model`; nothing to check for other needs.
[[nodiscard]] Status check_target_partfile(NodeHandle& target, const std::string& save_path, const std::string& qb_id,
                                           const SourceNeeds& needs);

}  // namespace archctl::jobs::transfer
