#pragma once
// The messages of the operations that move a job's payload: stage (source), receive_check,
// merge, merge_record, adopt_incomplete and unmerge (target). Part of lib/node/wire/ops.hpp, which
// says how the structs map to the wire.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/node/wire/job_layout.hpp"

namespace archctl::node {

// ---- shared records ------------------------------------------------------------------------

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

// Why an operation stopped at a chunk boundary before it completed (lib/node/server/operation.hpp):
// the "stopped" key of its result, "" (it did not stop), "cancel", "budget" or "disk". A stop is
// not an error; a rerun of the same request resumes.
enum class Stop { none, cancel, budget, disk };

// "" for Stop::none, else the enumerator's name.
[[nodiscard]] std::string_view to_string(Stop stop);

// Why a file or directory was kept, as a code: none (no code: unknown content and non-empty
// directories of cleanup), a keep-rule reason (referenced, not_regular, size_changed, replaced,
// other_links: lib/node/server/keep_rule.hpp), not_owned (bytes this job did not place),
// not_empty (a directory unmerge leaves), preexisting (there before the job).
enum class KeptCode { none, referenced, not_regular, size_changed, replaced, other_links, not_owned, not_empty, preexisting };

// The enumerator's name; "" for none.
[[nodiscard]] std::string_view to_string(KeptCode code);

// How an operation reports a file or directory it kept. Keys: path, reason, code (absent for
// KeptCode::none).
struct KeptEntry {
    std::string path;
    std::string reason;
    KeptCode code = KeptCode::none;
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

// How the stage places a payload file in the job directory: automatic (a hard link, else a
// clone, else a copy) or only the one named. On the wire "auto", "hardlink", "reflink", "copy".
enum class MethodChoice { automatic, hardlink, reflink, copy };

// The wire name ("auto" for automatic).
[[nodiscard]] std::string_view to_string(MethodChoice method);
// The method a wire name names; nullopt for any other text.
[[nodiscard]] std::optional<MethodChoice> parse_method_choice(std::string_view name);

// Keys: job_dir, source_base, files, method (absent: "auto"), verify_transit, budget_bytes
// (absent: no limit), aux, min_free (absent or 0: no floor).
struct StageRequest {
    std::string job_dir;
    std::string source_base;
    std::vector<FileEntry> files;
    MethodChoice method = MethodChoice::automatic;
    bool verify_transit = false;
    std::optional<std::uint64_t> budget_bytes;
    std::vector<StageAux> aux;
    // The free-space floor of the job directory's filesystem: a copy that would take it below
    // the floor is not started, one that reaches it stops at a chunk boundary (kept as a
    // resumable partial copy); the stage then stops "disk". Links and clones cost no space.
    std::uint64_t min_free = 0;
    PayloadLayout layout = PayloadLayout::flat;  // of the job's p/ (job_layout.hpp)
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
    Stop stopped = Stop::none;
    std::optional<bool> already_ready;
    std::optional<std::string> manifest_xxh3;
    StageCounters counters;
    std::uint64_t free_bytes = 0, need_bytes = 0;
};

// ---- receive_check -------------------------------------------------------------------------

// Keys: job_dir, files (index and size are read), indexed (null or absent: no index evidence),
// indexed_all (true: every expected name is indexed, in place of listing them), verify_transit,
// unfinished_only (true: the result's `files` leaves out the entries that are present or
// verified; its counts still cover every entry), absent_ranges (true: the payload files not
// there at all are answered as one ranges text of their indices, `absent`, not an entry each).
struct ReceiveCheckRequest {
    std::string job_dir;
    std::vector<FileEntry> files;
    std::optional<std::vector<std::string>> indexed;  // names relative to the job directory
    bool verify_transit = false;
    PayloadLayout layout = PayloadLayout::flat;
    bool indexed_all = false;
    bool unfinished_only = false;
    // At the start of a sync of 100,000 files none is there: an entry each took ~80 MB of JSON
    // on the node and as much for the caller; the ranges text takes a few bytes.
    bool absent_ranges = false;
};

// How far one expected entry of a job directory has arrived (lib/node/server/op_receive.cpp):
// absent, in_transit, present, verified or mismatch; on the wire, the enumerator's name.
enum class Arrival { absent, in_transit, present, verified, mismatch };

// The enumerator's name.
[[nodiscard]] std::string_view to_string(Arrival arrival);

// Keys: name, state (an Arrival; absent key: absent), have_bytes, index, size, detail (the last
// three when known).
struct ReceivedFile {
    std::string name;
    Arrival state = Arrival::absent;
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
// files, absent (when the request asked absent_ranges and a payload file is absent: the ranges
// text of their indices, "0-4,7"), ignored, foreign, bytes_present, bytes_total, files_present,
// files_total, bytes_hashed. A job directory with a foreign entry is never complete. An entry a
// request asked about that neither `files` nor `absent` lists (the request's unfinished_only) is
// present or verified; a node that predates absent_ranges lists absent files in `files`.
struct ReceiveCheckResult {
    bool complete = false;
    Stop stopped = Stop::none;  // none or cancel
    bool job_exists = false;
    bool manifest = false;
    bool index_evidence = false;
    std::vector<ReceivedFile> files;
    std::vector<std::uint32_t> absent;  // payload files with nothing under their name, by index, ascending
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
    PayloadLayout layout = PayloadLayout::flat;
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
    Stop stopped = Stop::none;  // none, cancel or disk
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

// Whether a merge record is there: absent (merge never recorded its pre-state) or present.
enum class MergeRecord { absent, present };

// The enumerator's name.
[[nodiscard]] std::string_view to_string(MergeRecord record);

// Keys: record (a MergeRecord; absent key: absent), record_path, files
// (every delta index the record holds), placed (the indices whose file is at its destination:
// the inode its intent names, or a pre-existing file the merge reuses).
struct MergeRecordResult {
    MergeRecord record = MergeRecord::absent;
    std::string record_path;
    std::vector<std::uint32_t> files;
    std::vector<std::uint32_t> placed;
};

// What unmerge found of the merge record: none (nothing to undo), or one it undid and removed.
enum class UnmergeRecord { absent, removed };

// The enumerator's name.
[[nodiscard]] std::string_view to_string(UnmergeRecord record);

// Keys: record (an UnmergeRecord), removed, kept, preexisting.
struct UnmergeResult {
    UnmergeRecord record = UnmergeRecord::absent;
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

// ---- JSON ----------------------------------------------------------------------------------

// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`): see
// lib/node/wire/ops.hpp for what a from_json does with missing keys. A Stop reads only its own
// names; another one throws, so such a result is invalid. So do Arrival and the other enums here.
void to_json(nlohmann::json& j, Stop v);
void from_json(const nlohmann::json& j, Stop& v);
void to_json(nlohmann::json& j, const FileEntry& v);
void from_json(const nlohmann::json& j, FileEntry& v);
void to_json(nlohmann::json& j, KeptCode v);
void from_json(const nlohmann::json& j, KeptCode& v);
void to_json(nlohmann::json& j, const KeptEntry& v);
void from_json(const nlohmann::json& j, KeptEntry& v);
void to_json(nlohmann::json& j, const StageAux& v);
void from_json(const nlohmann::json& j, StageAux& v);
void to_json(nlohmann::json& j, PayloadLayout v);
void from_json(const nlohmann::json& j, PayloadLayout& v);
void to_json(nlohmann::json& j, MethodChoice v);
void from_json(const nlohmann::json& j, MethodChoice& v);
void to_json(nlohmann::json& j, const StageRequest& v);
void from_json(const nlohmann::json& j, StageRequest& v);
void to_json(nlohmann::json& j, const StageCounters& v);
void from_json(const nlohmann::json& j, StageCounters& v);
void to_json(nlohmann::json& j, const StageResult& v);
void from_json(const nlohmann::json& j, StageResult& v);
void to_json(nlohmann::json& j, const ReceiveCheckRequest& v);
void from_json(const nlohmann::json& j, ReceiveCheckRequest& v);
void to_json(nlohmann::json& j, Arrival v);
void from_json(const nlohmann::json& j, Arrival& v);
void to_json(nlohmann::json& j, const ReceivedFile& v);
void from_json(const nlohmann::json& j, ReceivedFile& v);
void to_json(nlohmann::json& j, const ReceiveCheckResult& v);
void from_json(const nlohmann::json& j, ReceiveCheckResult& v);
void to_json(nlohmann::json& j, const ForeignEntry& v);
void from_json(const nlohmann::json& j, ForeignEntry& v);
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
void to_json(nlohmann::json& j, MergeRecord v);
void from_json(const nlohmann::json& j, MergeRecord& v);
void to_json(nlohmann::json& j, UnmergeRecord v);
void from_json(const nlohmann::json& j, UnmergeRecord& v);
void to_json(nlohmann::json& j, const MergeRecordResult& v);
void from_json(const nlohmann::json& j, MergeRecordResult& v);
void to_json(nlohmann::json& j, const UnmergeResult& v);
void from_json(const nlohmann::json& j, UnmergeResult& v);
void to_json(nlohmann::json& j, const AdoptIncompleteRequest& v);
void from_json(const nlohmann::json& j, AdoptIncompleteRequest& v);
void to_json(nlohmann::json& j, const AdoptIncompleteResult& v);
void from_json(const nlohmann::json& j, AdoptIncompleteResult& v);

}  // namespace archctl::node
