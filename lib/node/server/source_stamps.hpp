#pragma once
// The source's metadata before a job staged it (docs/staging.md "The valve"). Staging hard-links
// the source's files into the route folder, so until the staged links are gone the far side's
// Syncthing can change those inodes' metadata in place (a `touch` there arrives as a new mtime on
// the source inode; content changes replace the inode and are caught by the recheck). The stage
// writes, before its first link, each source file's inode, mtime and mode to a record outside
// every Syncthing folder:
//
//   <root holding the source save path>/.archctl/stage-<job-id>.json
//
// and the job's cleanup, once the staged links are removed (so nothing more can reach the
// inodes), restores what changed — only on the same inode — then drops the record.

#include <cstdint>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "lib/base/result.hpp"
#include "lib/node/server/root_set.hpp"
#include "lib/node/wire/ops_cleanup.hpp"

namespace archctl::node {

struct SourceStamp {
    std::uint32_t index = 0;
    std::string path;  // below the source save path
    std::uint64_t ino = 0;
    std::int64_t mtime_ns = 0;
    std::uint32_t mode = 0;  // permission and special bits (07777)
};

// "<root>/.archctl/stage-<job-id>.json"
[[nodiscard]] std::string source_stamps_path(const std::string& root, const std::string& job_id);

// Writes the record for `job_id` unless one exists (a rerun keeps the first stage's stamps: they
// are the metadata from before any link). Durable: temp, fsync, rename, fsync the directory.
[[nodiscard]] Status write_source_stamps(const RootSet& roots, const std::string& source_base, const std::string& job_id,
                                         const std::vector<SourceStamp>& stamps);

struct RestoreReport {
    bool record = false;                 // a record existed
    std::vector<RestoredStamp> restored;  // lib/node/wire/ops_cleanup.hpp
    std::vector<std::string> replaced;   // files no longer the staged inode: left alone
};

// Restores the recorded mtime and mode of every file still on its recorded inode, then removes
// the record. No record: nothing to do.
[[nodiscard]] Result<RestoreReport> restore_source_stamps(const RootSet& roots, const std::string& source_base, const std::string& job_id);

}  // namespace archctl::node
