#pragma once
// The messages of the operations that tidy up after a job: chmod_readable (target), cleanup (both
// ends) and unlink_owned (evict). Part of lib/node/wire/ops.hpp, which says how the structs map to
// the wire.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {

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

// One file whose metadata cleanup put back (lib/node/server/source_stamps.hpp). Keys: index, path,
// mtime_found, mtime_restored, mode_found, mode_restored (the modes as octal text).
struct RestoredStamp {
    std::uint32_t index = 0;
    std::string path;
    std::int64_t mtime_found = 0, mtime_restored = 0;
    std::uint32_t mode_found = 0, mode_restored = 0;
};

// What cleanup did with the job directory: there was none, it removed it, or it kept it (holding
// something it does not own).
enum class JobDirEnd { absent, removed, kept };

// The enumerator's name.
[[nodiscard]] std::string_view to_string(JobDirEnd end);

// Keys: job_dir (a JobDirEnd), removed, kept; restored and replaced (only when not empty: the
// source files whose metadata was put back, and those no longer on their inode).
struct CleanupResult {
    JobDirEnd job_dir = JobDirEnd::absent;
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

// ---- JSON ----------------------------------------------------------------------------------

// nlohmann/json conversions (`nlohmann::json j = request;`, `j.get<TreeResult>()`): see
// lib/node/wire/ops.hpp for what a from_json does with missing keys.
void to_json(nlohmann::json& j, const ChmodReadableRequest& v);
void from_json(const nlohmann::json& j, ChmodReadableRequest& v);
void to_json(nlohmann::json& j, const ChmodReadableResult& v);
void from_json(const nlohmann::json& j, ChmodReadableResult& v);
void to_json(nlohmann::json& j, const CleanupRequest& v);
void from_json(const nlohmann::json& j, CleanupRequest& v);
void to_json(nlohmann::json& j, const RestoredStamp& v);
void from_json(const nlohmann::json& j, RestoredStamp& v);
void to_json(nlohmann::json& j, JobDirEnd v);
void from_json(const nlohmann::json& j, JobDirEnd& v);
void to_json(nlohmann::json& j, const CleanupResult& v);
void from_json(const nlohmann::json& j, CleanupResult& v);
void to_json(nlohmann::json& j, const OwnedFile& v);
void from_json(const nlohmann::json& j, OwnedFile& v);
void to_json(nlohmann::json& j, const UnlinkOwnedRequest& v);
void from_json(const nlohmann::json& j, UnlinkOwnedRequest& v);
void to_json(nlohmann::json& j, const UnlinkOwnedResult& v);
void from_json(const nlohmann::json& j, UnlinkOwnedResult& v);

}  // namespace archctl::node
