#pragma once
// The merge record of a job on the target: the journal merge writes before it changes anything
// (lib/node/server/op_merge.cpp), and what merge_record, adopt_incomplete and unmerge read back.
//
// It lives at the request's `record_path`, by default `<root>/.archctl/merge-<job-id>.jsonl` under
// the root that holds the save path (outside every Syncthing folder). Its records, in order:
//
//   {"pre": [...], "dirs": [...], "save_path", "job_dir"}   the pre-merge state, durable before
//        any change: per delta file {"i", "path", "state": "absent" | "preexisting", "size" and
//        "ino" (preexisting), "suffixed": "present" | "absent" (what was at qBittorrent's
//        incomplete name)}, and the directories the merge creates, shallowest first
//   {"intent": i, "how": "rename" | "copy", "ino", "size"}  before file i moves: the inode that
//        will appear at its destination
//   {"placed": i}                                            after file i is in place
//
// A record whose pre-state never landed (a crash before its first sync) reads as no record.

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {

inline constexpr const char* k_merge_journal_kind = "archctl-merge";

// A job's merge record as read back.
struct MergeState {
    nlohmann::json pre;                                // the first record
    std::map<std::uint32_t, nlohmann::json> intents;  // index → intent record
    std::set<std::uint32_t> placed;
};

// A file of a merge request, its path split into components.
struct DeltaFile {
    std::uint32_t index = 0;
    std::string path;
    std::vector<std::string> components;
    std::uint64_t size = 0;
};

// The request's files with their paths split; a path that would leave the save path is refused.
[[nodiscard]] Result<std::vector<DeltaFile>> parse_delta_files(const std::vector<FileEntry>& files);

// MERGE_CONFLICT: a delta path (or a directory on the way to it) the merge cannot use as it is.
[[nodiscard]] Error merge_conflict(const std::string& path, const std::string& cause);

// The pre-state record's content: what is at every delta path now, and the directories that do
// not exist yet.
struct PreState {
    nlohmann::json files = nlohmann::json::array();
    std::vector<std::string> missing_dirs;  // node paths, shallowest first
};

// What is at every delta path below `save_path` before the merge. A different-size or
// non-regular entry at a delta path, or a non-directory where a directory is needed, is a
// conflict; nothing is changed either way.
[[nodiscard]] Result<PreState> record_pre_state(const RootSet& roots, const std::string& save_path, const std::vector<DeltaFile>& files);

// The job id of a job directory (its last component).
[[nodiscard]] std::string job_id_of(const std::string& job_dir);

// The record's node path: `record_path` when given, else <root holding save_path>/.archctl/
// merge-<job>.jsonl (BAD_REQUEST when neither record_path nor job_dir is given).
[[nodiscard]] Result<std::string> merge_record_path_for(const RootSet& roots, const std::optional<std::string>& record_path,
                                                        const std::optional<std::string>& job_dir, const std::string& save_path);

// The record at `record_fd_path` (a path through an open directory, fd_path()); nullopt when
// there is none or its pre-state never landed.
[[nodiscard]] Result<std::optional<MergeState>> load_merge_record(const std::string& record_fd_path);

// The pre-state entries of the record by file index, pointing into `state` (which must outlive
// them): at 100,000 files a copy of the entries took ~40 MB while the merge ran.
using PreByIndex = std::map<std::uint32_t, const nlohmann::json*>;
[[nodiscard]] PreByIndex pre_by_index(const MergeState& state);

// Whether the file `name` in `dir`, seen as `st`, is what qBittorrent allocated at a file's
// incomplete name after the merge: nothing was there before (`pre`'s "suffixed" is "absent"), it
// is a regular file with one link, no larger than the job's file (`size`), and every byte of it
// is zero (holes read as zeros).
[[nodiscard]] Result<bool> qb_allocation(int dir, const std::string& name, const std::string& display, const nlohmann::json& pre,
                                         const struct stat& st, std::uint64_t size);

}  // namespace archctl::node
