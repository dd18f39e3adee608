#pragma once
// Archive coverage of a cache placement (pure; docs/evict-proof.md, docs/design.md "Evict").
//
// Evicting a cache placement is safe only when every file the cache holds is held elsewhere
// *now*. The required set is the cache placement's selected files (files skipped there hold no
// payload on the cache). Whether an archive placement holds one file is one decision,
// `judge_file`, shared by `plan evict`, `status RES`, evict's proof and its revalidation before
// every deletion. A file counts only when, read live:
//   - the covering torrent is in that qBittorrent and not in an error, missingFiles, checking,
//     moving or unknown state;
//   - qBittorrent reports the file selected and at 100%, under the path its content layout
//     gives it (torrent/layout.hpp: no rename);
//   - the archive node's own stat of the file at that path shows a regular file of the exact
//     size; and
//   - that stat is the one archctl recorded when its recheck committed the file (device, inode,
//     size, mtime) — or, with --verify-archive, a piece check on the archive's disk will prove
//     the bytes before anything is deleted.
// archctl's records (a committed generation, a fingerprint) are never a proof on their own: a
// placement committed before stamps were recorded, or by another state directory, counts only
// through --verify-archive. Per-file coverage is the union over archive nodes. Identity is the
// caller's duty: every view must be a placement of the same resource (by its aliases).
//
// Nothing here talks to a service or touches a disk; callers bring the evidence
// (lib/jobs/archive_evidence reads it).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::plan {

// One file of the resource, as the metainfo says (qB index, path with the root folder first).
struct CoverageFile {
    std::uint32_t index = 0;
    std::string path;
    std::uint64_t size = 0;
};

// A file as a node's disk shows it: what archctl records when its recheck commits a file, and
// compares with a fresh stat before it relies on that file. Equal stamps: the bytes the recheck
// read are still the bytes at that path.
struct FileStamp {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t btime_ns = 0;  // birth time; 0: unknown (the filesystem does not say, or an older record)
    // Inode change time: what no writer can put back (a rewrite in place that restores the mtime
    // still moves it). 0: unknown (an older record or node).
    std::int64_t ctime_ns = 0;

    bool operator==(const FileStamp&) const = default;
    // [dev, ino, size, mtime_ns], then btime_ns when known, and ctime_ns (after btime_ns, 0 when
    // unknown) when known.
    nlohmann::json to_json() const;
    static Result<FileStamp> from_json(const nlohmann::json& j);
};

// Stamps by file index, as stored in a placement record and an evict proof:
// [[index, dev, ino, size, mtime_ns(, btime_ns(, ctime_ns))], ...].
nlohmann::json stamps_to_json(const std::map<std::uint32_t, FileStamp>& stamps);
[[nodiscard]] Result<std::map<std::uint32_t, FileStamp>> stamps_from_json(const nlohmann::json& j);

// What the node's stat of one file at its metainfo path showed: not asked, a regular file,
// nothing, or something else.
enum class OnDisk { unread, file, absent, other };

struct DiskFile {
    OnDisk on_disk = OnDisk::unread;
    FileStamp stamp;               // when a file
    std::string other;             // what is there when other: "directory", "symlink", "refused"
};

// --verify-archive: every file is proven by a piece check, whatever its stamps show.
enum class VerifyArchive { no, yes };

// One archive placement as its qBittorrent and its disk show it now.
struct ArchiveEvidence {
    PlacementView view;                          // qBittorrent's view (selection, 100% files, names)
    std::string state;                           // qBittorrent's own state string ("missingFiles")
    std::uint64_t generation = 0;                // archctl's committed generation there (0: none)
    std::map<std::uint32_t, FileStamp> committed; // stamps archctl recorded at its commit
    std::vector<DiskFile> disk;                  // by file index: the node's stat now
    // By file index: the path below the save path the placement's content layout gives the file
    // ("" or absent: its metainfo path). qBittorrent naming it otherwise is a rename.
    std::vector<std::string> expected;
    VerifyArchive verify = VerifyArchive::no;    // --verify-archive: a piece check proves the bytes
    // Whether the copy will stay. Non-empty: why it will not — the torrent's effective share
    // limit would remove it or its files ("a global share limit (ratio 0) would remove the
    // torrent and its files"); none of its files then counts.
    std::string will_not_stay;
    // Other torrents on the node whose files are this copy's files (same paths): deleting one
    // of them with its files deletes the copy. "'name' (qB id 12)" each.
    std::vector<std::string> shared_with;
    bool count_shared = false;                   // evict.count_shared_copies
};

// How one file is held by one archive placement.
enum class FileProof {
    proven,       // live evidence equals what archctl's recheck committed
    // counts once evict's piece check on the archive's disk proves it: the file is where it
    // belongs at its size, but archctl has no stamp of it or its stamp changed (or
    // --verify-archive asks for every file)
    piece_check,
    unproven,     // does not count
};

struct FileVerdict {
    FileProof proof = FileProof::unproven;
    // unproven: what differs ("absent on disk", "size 9 on disk, 12 in the metainfo");
    // piece_check: why the stamps do not prove it ("its ctime changed since archctl's recheck").
    std::string why;
};

// The one decision: does archive placement `a` hold `f` now? (docs/evict-proof.md "The per-file judgement")
[[nodiscard]] FileVerdict judge_file(const ArchiveEvidence& a, const CoverageFile& f);

struct CoverageInput {
    PlacementView cache;
    std::vector<CoverageFile> files;       // every file of the resource, by index
    std::vector<ArchiveEvidence> archives; // every reachable archive placement of the resource
    std::vector<std::string> unreachable;  // "node: reason", for the notes
};

struct FileCoverage {
    CoverageFile file;
    std::vector<std::string> nodes;    // archive nodes holding it, sorted
    std::vector<std::string> refused;  // "nas: absent on disk" for placements that do not count
    std::vector<std::string> piece_checked;  // nodes in `nodes` whose copy evict proves by a piece check
};

// What one proof relies on for one file: its path and the stamp seen when it was proven.
struct ProvenFile {
    std::uint32_t index = 0;
    std::string path;
    std::uint64_t size = 0;
    FileStamp stamp;
    std::string disk = {};  // its path below the save path on the archive's disk ("": `path`)
    bool pieces = false;    // proven by evict's piece check, not by its stamp
};

// How an archive node proves its files.
enum class Trust {
    committed,       // stamps equal to the ones archctl's recheck committed
    verify_pieces,   // a fresh piece check on the archive's disk (--verify-archive)
};

// What one archive node proves: the required files it holds (a proof the job persists and
// revalidates, live, right before every deletion).
struct ArchiveProof {
    std::string node;
    std::string qb_id;
    std::string save_path;
    torrent::Selection files;
    std::uint64_t generation = 0;
    Trust trust = Trust::committed;
    std::vector<ProvenFile> proven;  // one per file in `files`, with the stamp it was proven at

    // The files evict's piece check must prove: every file under Trust::verify_pieces, else the
    // ones whose stamps do not prove them.
    torrent::Selection piece_files() const;

    nlohmann::json to_json() const;
    static Result<ArchiveProof> from_json(const nlohmann::json& j);
};

struct Coverage {
    torrent::Selection required;            // the cache placement's selected files
    std::vector<FileCoverage> files;        // one per required file, by index
    std::vector<CoverageFile> missing;      // required files no archive placement covers
    std::vector<ArchiveProof> proofs;       // one per archive node that covers at least one file
    std::vector<std::string> notes;         // placements or files that do not count, and why
    std::uint64_t required_bytes = 0, missing_bytes = 0;
    std::string digest;                     // sha256 hex over every fact the verdict relies on

    bool complete() const { return missing.empty(); }
    nlohmann::json to_json() const;
};

// Compute the coverage. Errors: BAD_VALUE when a selected index is not a file of the resource.
[[nodiscard]] Result<Coverage> compute_coverage(const CoverageInput& input);

// Does `proof` still hold against fresh evidence from its node? Empty when it does, else the
// reason naming the file, the node and what differs ("file 3 'pay/b.bin' on 'nas': absent on
// disk"). `live` is nullopt when the node's qBittorrent no longer has the placement.
[[nodiscard]] std::string proof_drift(const ArchiveProof& proof, const std::optional<ArchiveEvidence>& live);

std::string to_string(Trust t);

}  // namespace archctl::plan
