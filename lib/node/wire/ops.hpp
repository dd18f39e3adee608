#pragma once
// Typed node operations: one request and one result struct per operation, shared by the caller
// (through the Ops facade) and the node's handlers (lib/node/op_*.cpp), so both sides use one
// definition of each message. The wire stays the JSON lines of lib/node/wire/protocol.hpp: every
// struct's to_json/from_json writes and reads the keys listed beside its fields.
//
// Usage:
//   node::Ops ops(transport);
//   auto tree = ops.tree({.base = "/srv/a/x", .paths = {"f"}});
//   if (tree.ok()) for (const auto& e : tree->entries) ...

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/node/wire/protocol.hpp"
#include "lib/node/server/source_stamps.hpp"
#include "lib/node/client/transport.hpp"

namespace archctl::node {

// A payload file of a request: qB file index, metainfo path below the save path, size.
// Keys: index, path, size.
struct FileEntry {
    std::uint32_t index = 0;
    std::string path;
    std::uint64_t size = 0;
};

// Any list of records with index, path and size (e.g. lib/jobs' JobFile) as request files.
template <class Files>
[[nodiscard]] std::vector<FileEntry> file_entries(const Files& files) {
    std::vector<FileEntry> out;
    out.reserve(files.size());
    for (const auto& f : files) out.push_back(FileEntry{f.index, f.path, f.size});
    return out;
}

// How an operation reports a file or directory it kept. Keys: path, reason, code (absent for
// unknown content and non-empty directories of cleanup).
struct KeptEntry {
    std::string path;
    std::string reason;
    std::string code;  // keep-rule reason ("referenced", ...), "not_empty", or empty
};

// ---- info ----------------------------------------------------------------------------------

// Keys: probe_dirs (optional).
struct InfoRequest {
    std::vector<std::string> probe_dirs;  // directories to describe besides the roots
};

// A root or probed directory. Keys: path, fs_type, fs_id, capabilities, free_bytes, total_bytes,
// dev (the last three absent when statvfs/fstat failed).
struct DirectoryInfo {
    RootInfo root;
    std::optional<std::uint64_t> free_bytes;
    std::optional<std::uint64_t> total_bytes;
    std::optional<std::uint64_t> dev;
};

// Keys: archctl, protocol, pid, roots, probes.
struct InfoResult {
    std::string archctl;
    int protocol = k_protocol_version;
    long pid = 0;
    std::vector<DirectoryInfo> roots;
    std::vector<DirectoryInfo> probes;
};

// The free bytes of the filesystem that holds `path`, by the longest configured root that
// contains it (component-wise: "/srv/a" contains "/srv/a/x" but not "/srv/ab"). nullopt when no
// root contains the path or the node could not measure that root.
[[nodiscard]] std::optional<std::uint64_t> free_bytes_at(const InfoResult& info, const std::string& path);

// ---- tree ----------------------------------------------------------------------------------

// Keys: base, paths.
struct TreeRequest {
    std::string base;
    std::vector<std::string> paths;  // relative to base
};

// lstat of an entry. Keys: size, dev, ino, nlink, mtime_ns, ctime_ns, mode, btime_ns (when known).
struct EntryStat {
    std::uint64_t size = 0, dev = 0, ino = 0, nlink = 0;
    std::int64_t mtime_ns = 0;
    unsigned mode = 0;       // permission bits
    std::int64_t btime_ns = 0;  // birth time; 0: the filesystem does not say
    std::int64_t ctime_ns = 0;  // inode change time; 0 from a node that does not send it
};

// Keys: path, type ("file", "dir", ..., "absent", "refused"), error {code, message} (refused
// only), and the EntryStat keys when the entry exists.
struct TreeEntry {
    std::string path;
    std::string type;
    std::optional<EntryStat> stat;
    std::optional<Error> error;
};

// Keys: base_exists, entries (one per requested path, in order).
struct TreeResult {
    bool base_exists = false;
    std::vector<TreeEntry> entries;
};

// ---- stage ---------------------------------------------------------------------------------

// An auxiliary file for a/: its bytes, base64, or present: already in a/.
// Keys: name, data_b64 | present.
struct StageAux {
    std::string name;
    std::optional<std::string> data_b64;
    bool present = false;

    [[nodiscard]] static StageAux with_bytes(std::string name, std::string_view bytes);
    [[nodiscard]] static StageAux already_present(std::string name);
};

// Keys: job_dir, source_base, files, method (absent: "auto"), verify_transit, budget_bytes
// (absent: no limit), aux, min_free (absent or 0: no floor).
struct StageRequest {
    std::string job_dir;
    std::string source_base;
    std::vector<FileEntry> files;
    std::string method;  // "", "auto", "hardlink", "reflink", "copy"
    bool verify_transit = false;
    std::optional<std::uint64_t> budget_bytes;
    std::vector<StageAux> aux;
    // The free-space floor of the job directory's filesystem: a copy that would take it below
    // the floor is not started, one that reaches it stops at a chunk boundary (kept as a
    // resumable partial copy); the stage then stops "disk". Links and clones cost no space.
    std::uint64_t min_free = 0;
};

// Keys: files_linked, files_reflinked, files_copied, files_reused, bytes_linked,
// bytes_reflinked, bytes_copied, bytes_hashed, files_done, bytes_done.
struct StageCounters {
    std::uint64_t files_linked = 0, files_reflinked = 0, files_copied = 0, files_reused = 0;
    std::uint64_t bytes_linked = 0, bytes_reflinked = 0, bytes_copied = 0, bytes_hashed = 0;
    std::uint64_t files_done = 0, bytes_done = 0;
};

// Keys: complete, stopped ("", "cancel", "budget", "disk"), already_ready and manifest_xxh3
// (complete only), free_bytes and need_bytes (stopped "disk": the free space seen and what the
// copy still needed), and the StageCounters keys.
struct StageResult {
    bool complete = false;
    std::string stopped;
    std::optional<bool> already_ready;
    std::optional<std::string> manifest_xxh3;
    StageCounters counters;
    std::uint64_t free_bytes = 0, need_bytes = 0;
};

// ---- receive_check -------------------------------------------------------------------------

// Keys: job_dir, files (index and size are read), indexed (null or absent: no index evidence),
// verify_transit.
struct ReceiveCheckRequest {
    std::string job_dir;
    std::vector<FileEntry> files;
    std::optional<std::vector<std::string>> indexed;  // names relative to the job directory
    bool verify_transit = false;
};

// Keys: name, state (absent, in_transit, present, verified, mismatch), have_bytes, index, size,
// detail (the last three when known).
struct ReceivedFile {
    std::string name;
    std::string state;
    std::uint64_t have_bytes = 0;
    std::optional<std::uint32_t> index;
    std::optional<std::uint64_t> size;
    std::string detail;
};

// Something in a job directory archctl did not stage: its name below the job directory ("p",
// "p/evil") and what it is ("a symlink where archctl staged a directory"). Keys: name, what.
struct ForeignEntry {
    std::string name;
    std::string what;
};

// Keys: complete, stopped; unless stopped ("cancel"): job_exists, manifest, index_evidence,
// files, ignored, foreign, bytes_present, bytes_total, files_present, files_total, bytes_hashed.
// A job directory with a foreign entry is never complete.
struct ReceiveCheckResult {
    bool complete = false;
    std::string stopped;
    bool job_exists = false;
    bool manifest = false;
    bool index_evidence = false;
    std::vector<ReceivedFile> files;
    std::vector<std::string> ignored;
    std::vector<ForeignEntry> foreign;
    std::uint64_t bytes_present = 0, bytes_total = 0, files_present = 0, files_total = 0, bytes_hashed = 0;
};

// ---- merge / unmerge -----------------------------------------------------------------------

// Keys: job_dir, save_path, files, record_path (absent: the default record), min_free (absent or
// 0: no floor).
struct MergeRequest {
    std::string job_dir;
    std::string save_path;
    std::vector<FileEntry> files;
    std::optional<std::string> record_path;
    // The free-space floor of the destination: a copy that would take its filesystem below it is
    // not started, one that reaches it stops at a chunk boundary; the merge then stops "disk".
    std::uint64_t min_free = 0;
};

// Keys: index, path, provenance ("created", "preexisting"), how ("rename", "copy", "none"), ino.
struct MergedFile {
    std::uint32_t index = 0;
    std::string path;
    std::string provenance;
    std::string how;
    std::uint64_t ino = 0;
};

// Keys: complete, stopped ("", "cancel", "disk"), record_path, bytes_copied; when stopped
// "disk": free_bytes, need_bytes (what the file it stopped at still needed), stopped_at (its
// path); when complete: provenance, dirs_created, bytes_renamed.
struct MergeResult {
    bool complete = false;
    std::string stopped;
    std::vector<MergedFile> provenance;
    std::vector<std::string> dirs_created;
    std::string record_path;
    std::uint64_t bytes_copied = 0, bytes_renamed = 0;
    std::uint64_t free_bytes = 0, need_bytes = 0;
    std::string stopped_at;
};

// Keys: save_path, job_dir, record_path (absent: the default record, named by job_dir),
// referenced, provenance (the caller's merge record, informational).
struct UnmergeRequest {
    std::string save_path;
    std::optional<std::string> job_dir;
    std::optional<std::string> record_path;
    std::vector<std::string> referenced;
    std::optional<nlohmann::json> provenance;
};

// What a target's merge record of a job says, judged against the disk (read-only).
// Keys: save_path, job_dir, record_path (absent: the default record, named by job_dir).
struct MergeRecordRequest {
    std::string save_path;
    std::optional<std::string> job_dir;
    std::optional<std::string> record_path;
};

// Keys: record ("absent": merge never recorded its pre-state, "present"), record_path, files
// (every delta index the record holds), placed (the indices whose file is at its destination:
// the inode its intent names, or a pre-existing file the merge reuses).
struct MergeRecordResult {
    std::string record;
    std::string record_path;
    std::vector<std::uint32_t> files;
    std::vector<std::uint32_t> placed;
};

// Keys: record ("absent", "removed"), removed, kept, preexisting.
struct UnmergeResult {
    std::string record;
    std::vector<std::string> removed;
    std::vector<KeptEntry> kept;
    std::vector<std::string> preexisting;
};

// What qBittorrent calls a file it holds incomplete when "Append .!qB extension to incomplete
// files" is on: the file's name plus this suffix.
inline constexpr const char* k_incomplete_suffix = ".!qB";

// Before the target's recheck: each listed file this job merged that qBittorrent now addresses
// under its incomplete name (<path><suffix> appeared after the merge) is moved to that name,
// replacing the empty or all-zero file qBittorrent allocated there; a suffixed file with any
// other bytes is never touched. After the recheck the same request reports where each file is.
// Keys: save_path, job_dir, record_path (absent: the default record), suffix, indices, adopt.
struct AdoptIncompleteRequest {
    std::string save_path;
    std::optional<std::string> job_dir;
    std::optional<std::string> record_path;
    std::string suffix = k_incomplete_suffix;
    std::vector<std::uint32_t> indices;
    bool adopt = true;  // false: only report
};

// Keys: suffixed (this job's file is at <path><suffix>), plain (this job's file is at <path> and
// nothing is at <path><suffix>), pending (this job's file is at <path> and a suffixed file
// qBittorrent allocated is there too: adopt=false only), foreign (a suffixed file with other
// bytes, or this job's file at neither name).
struct AdoptIncompleteResult {
    std::vector<std::uint32_t> suffixed;
    std::vector<std::uint32_t> plain;
    std::vector<std::uint32_t> pending;
    std::vector<std::uint32_t> foreign;
};

// ---- chmod_readable, cleanup, unlink_owned -------------------------------------------------

// Keys: base, paths.
struct ChmodReadableRequest {
    std::string base;
    std::vector<std::string> paths;
};

// Keys: files_changed, dirs_changed, missing.
struct ChmodReadableResult {
    std::uint64_t files_changed = 0, dirs_changed = 0;
    std::vector<std::string> missing;
};

// Keys: job_dir, referenced, save_path (present: the job's merge record there is dropped too).
struct CleanupRequest {
    std::string job_dir;
    std::vector<std::string> referenced;
    std::optional<std::string> save_path;
    // The source save path of the job (on the source node): once the staged links are removed,
    // the metadata the stage recorded is restored where the far side changed it
    // (source_stamps.hpp).
    std::optional<std::string> source_base;
    // The job's payload indices and auxiliary names as its definition has them: owned like those
    // the manifest and journal name (a target whose copy of the journal never arrived still knows
    // its files), with Syncthing's temp files of them.
    std::vector<std::uint32_t> files;
    std::vector<std::string> aux;
};

// Keys: job_dir ("absent", "removed", "kept"), removed, kept; restored and replaced (only when
// not empty: the source files whose metadata was put back, and those no longer on their inode).
struct CleanupResult {
    std::string job_dir;
    std::vector<std::string> removed;
    std::vector<KeptEntry> kept;
    std::vector<RestoredStamp> restored;
    std::vector<std::string> replaced;
};

// A path to unlink, with what was recorded about it. Keys: the path as a string, or an object
// {path, size, ino} when size or inode is known.
struct OwnedFile {
    std::string path;
    std::optional<std::uint64_t> size;
    std::optional<std::uint64_t> ino;
};

// Keys: paths, referenced, stop_at.
struct UnlinkOwnedRequest {
    std::vector<OwnedFile> paths;
    std::vector<std::string> referenced;
    std::string stop_at;
};

// Keys: removed, kept.
struct UnlinkOwnedResult {
    std::vector<std::string> removed;
    std::vector<KeptEntry> kept;
};

// ---- nonces --------------------------------------------------------------------------------

// Keys: path, content, create_parents.
struct NonceWriteRequest {
    std::string path;
    std::string content;
    bool create_parents = false;
};

// Keys: path, size.
struct NonceWriteResult {
    std::string path;
    std::uint64_t size = 0;
};

// Keys: path.
struct NonceObserveRequest {
    std::string path;
};

// Keys: path, present, content (when present).
struct NonceObserveResult {
    std::string path;
    bool present = false;
    std::string content;
};

// ---- part files ----------------------------------------------------------------------------

// How a part file must look to be used. Keys: expect_pieces, expect_piece_size (absent: not
// checked), allow_short_last_slot.
struct PartfileCheck {
    std::optional<std::uint32_t> expect_pieces;
    std::optional<std::uint32_t> expect_piece_size;
    bool allow_short_last_slot = false;
};

// How archctl checks a qBittorrent part file: libtorrent ends it at its last written byte, so the
// last slot may be short; with the torrent's piece count and piece size, those are checked too.
[[nodiscard]] PartfileCheck qb_partfile_check();
[[nodiscard]] PartfileCheck qb_partfile_check(std::int64_t piece_count, std::int64_t piece_size);

// Keys: path and the PartfileCheck keys.
struct PartfileReadRequest {
    std::string path;
    PartfileCheck check;
};

// Keys: piece, slot.
struct PartfileSlot {
    std::uint32_t piece = 0;
    std::uint32_t slot = 0;
};

// Keys: piece_count, piece_size, header_size, used_slots, slots, file_size, short_slots.
struct PartfileReadResult {
    std::uint32_t piece_count = 0, piece_size = 0;
    std::uint64_t header_size = 0;
    std::uint32_t used_slots = 0;
    std::vector<PartfileSlot> slots;
    std::uint64_t file_size = 0;
    std::vector<std::uint32_t> short_slots;
};

// Keys: from, to, create_parents, replace, the PartfileCheck keys and min_free (absent or 0: no
// floor).
struct PartfileCopyRequest {
    std::string from;
    std::string to;
    bool create_parents = false;
    bool replace = false;
    PartfileCheck check;
    // The free-space floor of the destination's filesystem: a copy that would take it below the
    // floor is refused with DISK_INSUFFICIENT before a byte is written.
    std::uint64_t min_free = 0;
};

// Keys: the PartfileReadResult keys, to, xxh3, already, bytes (absent when already).
struct PartfileCopyResult {
    PartfileReadResult header;
    std::string to;
    std::string xxh3;
    bool already = false;
    std::optional<std::uint64_t> bytes;
};

// partfile_build: a libtorrent part file written from bytes the node holds (docs/torrent-format.md
// "Part files"): one slot per listed piece that has a kept range, in request order. Each range is `length`
// bytes at piece-relative offset `at`, read from the regular file `path` at `offset`, or (with
// `from_partfile`) from the piece's slot of `source_partfile` at `at`. Kept ranges (the files
// outside the target's selection) are written into the slot; the others (the selected files)
// are only read so that the whole piece can be checked against `sha1`; bytes no range covers
// (pad files) count as zeros. Keys of a range: at, length, path | from_partfile, offset, keep.
struct PartfileBuildRange {
    std::uint64_t at = 0;
    std::uint64_t length = 0;
    std::string path;
    std::uint64_t offset = 0;
    bool from_partfile = false;
    bool keep = false;
};

// Keys: piece, length (the piece's length: the last piece may be short), sha1 (hex, absent: not
// checked), ranges.
struct PartfileBuildPiece {
    std::uint32_t piece = 0;
    std::uint64_t length = 0;
    std::optional<std::string> sha1;
    std::vector<PartfileBuildRange> ranges;
};

// Keys: to, create_parents, piece_count, piece_size, source_partfile (absent: none; read with
// the qBittorrent check for piece_count and piece_size), pieces, min_free, dry_run. With
// dry_run nothing is written: every piece is read and checked, and the result says which verify.
struct PartfileBuildRequest {
    std::string to;
    bool create_parents = false;
    std::uint32_t piece_count = 0, piece_size = 0;
    std::optional<std::string> source_partfile;
    std::vector<PartfileBuildPiece> pieces;
    std::uint64_t min_free = 0;
    bool dry_run = false;
};

// Keys: the PartfileReadResult keys (of the file written), to, xxh3, bytes, failed (pieces whose
// SHA-1 did not match: only with dry_run; otherwise such a piece fails the operation with
// PARTFILE_INVALID and nothing is written).
struct PartfileBuildResult {
    PartfileReadResult header;
    std::string to;
    std::string xxh3;
    std::uint64_t bytes = 0;
    std::vector<std::uint32_t> failed;
};

// ---- verify_pieces -------------------------------------------------------------------------

// Keys: save_path, torrent_b64 (the .torrent bytes) | torrent_path, files (a selection).
struct VerifyPiecesRequest {
    std::string save_path;
    std::optional<std::string> torrent_b64;   // the .torrent, base64
    std::optional<std::string> torrent_path;  // a node path, read by the node
    std::optional<std::string> files;
    // File index → its path below save_path on disk, for files a content layout puts elsewhere
    // than their metainfo path (torrent/layout.hpp).
    std::map<std::uint32_t, std::string> paths = {};
    // Files outside `files` whose bytes boundary pieces may read (torrent::VerifyOptions::readable).
    std::optional<std::string> readable = std::nullopt;
};

// lib/torrent's VerifyReport JSON plus save_path.
struct VerifyPiecesResult {
    nlohmann::json report = nlohmann::json::object();
    std::string save_path;
};

// ---- JSON ----------------------------------------------------------------------------------

// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`). A request's
// from_json throws nlohmann::json::exception on a missing required key or a wrong type (the
// server answers BAD_REQUEST); a result's from_json takes absent keys as their defaults.
void to_json(nlohmann::json& j, const FileEntry& v);
void from_json(const nlohmann::json& j, FileEntry& v);
void to_json(nlohmann::json& j, const KeptEntry& v);
void from_json(const nlohmann::json& j, KeptEntry& v);
void to_json(nlohmann::json& j, const InfoRequest& v);
void from_json(const nlohmann::json& j, InfoRequest& v);
void to_json(nlohmann::json& j, const DirectoryInfo& v);
void from_json(const nlohmann::json& j, DirectoryInfo& v);
void to_json(nlohmann::json& j, const InfoResult& v);
void from_json(const nlohmann::json& j, InfoResult& v);
void to_json(nlohmann::json& j, const TreeRequest& v);
void from_json(const nlohmann::json& j, TreeRequest& v);
void to_json(nlohmann::json& j, const TreeEntry& v);
void from_json(const nlohmann::json& j, TreeEntry& v);
void to_json(nlohmann::json& j, const TreeResult& v);
void from_json(const nlohmann::json& j, TreeResult& v);
void to_json(nlohmann::json& j, const StageAux& v);
void from_json(const nlohmann::json& j, StageAux& v);
void to_json(nlohmann::json& j, const StageRequest& v);
void from_json(const nlohmann::json& j, StageRequest& v);
void to_json(nlohmann::json& j, const StageCounters& v);
void from_json(const nlohmann::json& j, StageCounters& v);
void to_json(nlohmann::json& j, const StageResult& v);
void from_json(const nlohmann::json& j, StageResult& v);
void to_json(nlohmann::json& j, const ReceiveCheckRequest& v);
void from_json(const nlohmann::json& j, ReceiveCheckRequest& v);
void to_json(nlohmann::json& j, const ReceivedFile& v);
void from_json(const nlohmann::json& j, ReceivedFile& v);
void to_json(nlohmann::json& j, const ReceiveCheckResult& v);
void from_json(const nlohmann::json& j, ReceiveCheckResult& v);
void to_json(nlohmann::json& j, const MergeRequest& v);
void from_json(const nlohmann::json& j, MergeRequest& v);
void to_json(nlohmann::json& j, const MergedFile& v);
void from_json(const nlohmann::json& j, MergedFile& v);
void to_json(nlohmann::json& j, const MergeResult& v);
void from_json(const nlohmann::json& j, MergeResult& v);
void to_json(nlohmann::json& j, const UnmergeRequest& v);
void from_json(const nlohmann::json& j, UnmergeRequest& v);
void to_json(nlohmann::json& j, const MergeRecordRequest& v);
void from_json(const nlohmann::json& j, MergeRecordRequest& v);
void to_json(nlohmann::json& j, const MergeRecordResult& v);
void from_json(const nlohmann::json& j, MergeRecordResult& v);
void to_json(nlohmann::json& j, const UnmergeResult& v);
void from_json(const nlohmann::json& j, UnmergeResult& v);
void to_json(nlohmann::json& j, const AdoptIncompleteRequest& v);
void from_json(const nlohmann::json& j, AdoptIncompleteRequest& v);
void to_json(nlohmann::json& j, const AdoptIncompleteResult& v);
void from_json(const nlohmann::json& j, AdoptIncompleteResult& v);
void to_json(nlohmann::json& j, const ChmodReadableRequest& v);
void from_json(const nlohmann::json& j, ChmodReadableRequest& v);
void to_json(nlohmann::json& j, const ChmodReadableResult& v);
void from_json(const nlohmann::json& j, ChmodReadableResult& v);
void to_json(nlohmann::json& j, const ForeignEntry& v);
void from_json(const nlohmann::json& j, ForeignEntry& v);
void to_json(nlohmann::json& j, const CleanupRequest& v);
void from_json(const nlohmann::json& j, CleanupRequest& v);
void to_json(nlohmann::json& j, const RestoredStamp& v);
void from_json(const nlohmann::json& j, RestoredStamp& v);
void to_json(nlohmann::json& j, const CleanupResult& v);
void from_json(const nlohmann::json& j, CleanupResult& v);
void to_json(nlohmann::json& j, const OwnedFile& v);
void from_json(const nlohmann::json& j, OwnedFile& v);
void to_json(nlohmann::json& j, const UnlinkOwnedRequest& v);
void from_json(const nlohmann::json& j, UnlinkOwnedRequest& v);
void to_json(nlohmann::json& j, const UnlinkOwnedResult& v);
void from_json(const nlohmann::json& j, UnlinkOwnedResult& v);
void to_json(nlohmann::json& j, const NonceWriteRequest& v);
void from_json(const nlohmann::json& j, NonceWriteRequest& v);
void to_json(nlohmann::json& j, const NonceWriteResult& v);
void from_json(const nlohmann::json& j, NonceWriteResult& v);
void to_json(nlohmann::json& j, const NonceObserveRequest& v);
void from_json(const nlohmann::json& j, NonceObserveRequest& v);
void to_json(nlohmann::json& j, const NonceObserveResult& v);
void from_json(const nlohmann::json& j, NonceObserveResult& v);
void to_json(nlohmann::json& j, const PartfileReadRequest& v);
void from_json(const nlohmann::json& j, PartfileReadRequest& v);
void to_json(nlohmann::json& j, const PartfileSlot& v);
void from_json(const nlohmann::json& j, PartfileSlot& v);
void to_json(nlohmann::json& j, const PartfileReadResult& v);
void from_json(const nlohmann::json& j, PartfileReadResult& v);
void to_json(nlohmann::json& j, const PartfileCopyRequest& v);
void from_json(const nlohmann::json& j, PartfileCopyRequest& v);
void to_json(nlohmann::json& j, const PartfileCopyResult& v);
void from_json(const nlohmann::json& j, PartfileCopyResult& v);
void to_json(nlohmann::json& j, const PartfileBuildRange& v);
void from_json(const nlohmann::json& j, PartfileBuildRange& v);
void to_json(nlohmann::json& j, const PartfileBuildPiece& v);
void from_json(const nlohmann::json& j, PartfileBuildPiece& v);
void to_json(nlohmann::json& j, const PartfileBuildRequest& v);
void from_json(const nlohmann::json& j, PartfileBuildRequest& v);
void to_json(nlohmann::json& j, const PartfileBuildResult& v);
void from_json(const nlohmann::json& j, PartfileBuildResult& v);
void to_json(nlohmann::json& j, const VerifyPiecesRequest& v);
void from_json(const nlohmann::json& j, VerifyPiecesRequest& v);
void to_json(nlohmann::json& j, const VerifyPiecesResult& v);
void from_json(const nlohmann::json& j, VerifyPiecesResult& v);

// ---- facade --------------------------------------------------------------------------------

// The operations of one node, called through its transport (lib/node/client/transport.hpp).
// `progress` receives the node's progress lines while the operation runs; cancel() (e.g. from
// inside `progress`) stops the running operation at its next chunk boundary.
class Ops {
public:
    explicit Ops(Transport& transport) : m_transport(transport) {}

    [[nodiscard]] Result<InfoResult> info(const InfoRequest& request = {});
    [[nodiscard]] Result<TreeResult> tree(const TreeRequest& request);
    [[nodiscard]] Result<StageResult> stage(const StageRequest& request, ProgressFn progress = {});
    [[nodiscard]] Result<ReceiveCheckResult> receive_check(const ReceiveCheckRequest& request, ProgressFn progress = {});
    [[nodiscard]] Result<MergeResult> merge(const MergeRequest& request, ProgressFn progress = {});
    [[nodiscard]] Result<MergeRecordResult> merge_record(const MergeRecordRequest& request);
    [[nodiscard]] Result<UnmergeResult> unmerge(const UnmergeRequest& request);
    [[nodiscard]] Result<AdoptIncompleteResult> adopt_incomplete(const AdoptIncompleteRequest& request);
    [[nodiscard]] Result<ChmodReadableResult> chmod_readable(const ChmodReadableRequest& request);
    [[nodiscard]] Result<CleanupResult> cleanup(const CleanupRequest& request);
    [[nodiscard]] Result<UnlinkOwnedResult> unlink_owned(const UnlinkOwnedRequest& request);
    [[nodiscard]] Result<NonceWriteResult> nonce_write(const NonceWriteRequest& request);
    [[nodiscard]] Result<NonceObserveResult> nonce_observe(const NonceObserveRequest& request);
    [[nodiscard]] Result<PartfileReadResult> partfile_read(const PartfileReadRequest& request);
    [[nodiscard]] Result<PartfileCopyResult> partfile_copy(const PartfileCopyRequest& request);
    [[nodiscard]] Result<PartfileBuildResult> partfile_build(const PartfileBuildRequest& request);
    [[nodiscard]] Result<VerifyPiecesResult> verify_pieces(const VerifyPiecesRequest& request, ProgressFn progress = {});

    void cancel() { m_transport.cancel(); }
    Transport& transport() { return m_transport; }

private:
    Transport& m_transport;
};

}  // namespace archctl::node
