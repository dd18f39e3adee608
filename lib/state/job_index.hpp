#pragma once
// The job index: which jobs are still active, and a compact log of the finished ones, so that
// `status`, `resume` and `job list` never read every job's records (docs/design.md "State on disk", "Performance rules").
//
//   <state>/index/active/<job-id>   an empty marker: the job may still need something
//   <state>/index/finished.jsonl    journal "finished" v1: one line per job that ended cleanly,
//                                   {"n": live, "id", "row": <job row>, "nodes"}, or a removal
//                                   {"n": live, "removed": id}; `n` counts the live rows after it
//   <state>/index/built             written last by a rebuild: the index covers every job
//   <state>/index/lock              flock: one writer of the finished log at a time
//
// It is a cache: each job's own directory stays the truth, and the index can be rebuilt from the
// job directories at any time (jobs::rebuild_job_index). Crash contract, step by step:
//   create:  marker (O_EXCL + fsync dir) → job dir → definition. A marker without a definition is
//            a torn create: readers skip it (and drop it once it is old).
//   retire:  row appended and fsynced → marker unlinked. A crash between leaves both: the reader
//            sees the marker, reads the job's ledger, and retires it again; the append is skipped
//            when the row is already in the log's tail, and readers drop duplicate ids.
//   forget:  (after the job's records are removed) marker unlinked, removal line appended.
//            Readers drop rows whose job directory is gone, so a crash between never shows a
//            removed job again.
//   rebuild: under the lock, the log is rewritten (temp + fsync + rename + fsync dir), markers
//            added or removed, then `built` written.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

// One finished job as the log holds it: its job row (`job list --json`) and the nodes text.
struct FinishedEntry {
    std::string id;
    nlohmann::json row;
    std::string nodes;
};

// Finished jobs, oldest first, and how many the log holds in all (`total` ≥ entries.size()).
struct FinishedPage {
    std::vector<FinishedEntry> entries;
    std::size_t total = 0;
};

class JobIndex {
public:
    explicit JobIndex(const StateDir& dir) : m_dir(dir) {}

    // Whether a rebuild covered every job (an old state directory has no index yet).
    bool built() const;

    // Mark a job active (before its definition is written); an existing marker is kept.
    Status mark_active(const std::string& job_id);
    // Active job ids, sorted (oldest first).
    Result<std::vector<std::string>> active() const;
    // Whether the marker is older than `seconds` (a torn create nobody finishes).
    bool marker_older_than(const std::string& job_id, long seconds) const;
    Status unmark(const std::string& job_id);

    // The job ended cleanly: append its row to the finished log, then drop its marker.
    Status retire(const std::string& job_id, const nlohmann::json& row, const std::string& nodes);
    // The job's records were removed: drop its marker, and note the removal in the finished log
    // when `in_log` (it was retired).
    Status forget(const std::string& job_id, bool in_log);

    // The newest `limit` finished jobs (every one without a limit), oldest first, read from the
    // log's end; rows whose job directory is gone are left out.
    Result<FinishedPage> finished(std::optional<std::size_t> limit) const;
    // Finished jobs whose log line contains `needle` (an id or resource prefix, a name), oldest
    // first.
    Result<std::vector<FinishedEntry>> finished_matching(const std::string& needle) const;

    // Replace the index with what the job directories say: `active` ids marked, every other
    // marker of `finished` dropped, the log rewritten with `finished` (sorted by id), then
    // `built` written.
    Status rebuild(const std::vector<std::string>& active, std::vector<FinishedEntry> finished);
    // Rewrite the log without the ids in `gone` (after `job clear`), atomically.
    Status drop_finished(const std::vector<std::string>& gone);

    std::string log_path() const { return m_dir.index() + "/finished.jsonl"; }

private:
    std::string marker(const std::string& job_id) const { return m_dir.index() + "/active/" + job_id; }
    StateDir m_dir;
};

}  // namespace archctl::state
