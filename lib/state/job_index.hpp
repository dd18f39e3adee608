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
//   rebuild: under the lock, active markers added, the log rewritten (temp + fsync + rename +
//            fsync dir), then the markers of finished jobs removed, then `built` written. A crash
//            before the rename leaves the old log and at most a stray temp file; after it, a
//            finished job that still has its marker is retired again by the next reader.
//   clear:   (`job clear`, every finished job at once; IndexClear) the log read as it is under
//            the lock, then without it the caller writes the tombstones and removes those jobs'
//            directories, then under the lock the log is replaced by one that holds only the
//            lines appended since it was read (jobs that ended meanwhile). Readers drop rows whose
//            job directory is gone, so a crash before the replace shows only the jobs not yet
//            removed, and a rerun clears those.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "lib/base/atomic_file.hpp"
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

class JobIndex;

// The live finished jobs in id order, read forward from the log one row at a time (`job list
// --all`, `job clear`), so nothing holds a row per finished job. The log is in the order jobs
// ended, mostly the order of their ids; opening the stream reads it once (a megabyte at a time)
// and keeps only the rows out of id order (a job that ended after a newer one, or a row written
// twice: its id and place in the log) and the removals; each pass reads the log again and merges
// those in. A row is live as JobIndex::finished says: its newest line counts, a later removal or
// a missing job directory drops it. The first pass checks each job directory and keeps one bit
// per row, so every later pass yields the same rows (a count taken in one pass holds for the
// next). The stream reads the log as it was when opened: lines appended since, or a log put in
// its place, are not read.
class FinishedStream {
public:
    FinishedStream(FinishedStream&&) = default;
    FinishedStream& operator=(FinishedStream&&) = delete;

    // Each live row, in increasing id order, until `f` fails (its error is returned).
    [[nodiscard]] Status each(const std::function<Status(const FinishedEntry&)>& f);
    // How many rows the scan found out of id order (held in memory until the stream is dropped).
    std::size_t out_of_order() const { return m_late.size(); }

private:
    friend class JobIndex;
    friend class IndexClear;
    struct Place {
        off_t offset = 0;
        std::size_t length = 0;
    };
    FinishedStream(StateDir dir, UniqueFd fd) : m_dir(std::move(dir)), m_fd(std::move(fd)) {}
    [[nodiscard]] Status scan();
    [[nodiscard]] Status emit(std::string_view id, std::string_view line, off_t offset, std::size_t& k,
                              const std::function<Status(const FinishedEntry&)>& f);

    StateDir m_dir;
    UniqueFd m_fd;
    off_t m_size = 0;                                  // the log's length when opened
    std::map<std::string, Place, std::less<>> m_late;  // rows out of id order: the newest line of each id
    std::map<std::string, off_t, std::less<>> m_removed;  // the newest removal of each id
    std::vector<bool> m_live;                          // per candidate row, from the first pass
    bool m_checked = false;
};

// `job clear` of every finished job in the log (JobIndex::begin_clear): the stream reads the log
// as it was when the clear began, under the index lock; the caller reads stream() (tombstones
// first, made durable; then each job's directory removed) without holding the lock, so a job
// that ends meanwhile is retired as usual; commit() replaces the log, under the lock, with the
// lines appended since (those jobs stay listed). Dropped uncommitted, the log stays as it was;
// its rows whose job directories are gone are not shown, and a rerun clears the rest.
class IndexClear {
public:
    IndexClear(IndexClear&&) = default;
    IndexClear& operator=(IndexClear&&) = delete;

    FinishedStream& stream() { return m_stream; }
    // The log replaced (temp + fsync + rename + fsync dir) by its header and the lines appended
    // after the stream read it. A log a rebuild put in its place meanwhile is kept as it is.
    [[nodiscard]] Status commit();

private:
    friend class JobIndex;
    IndexClear(StateDir dir, FinishedStream stream) : m_dir(std::move(dir)), m_stream(std::move(stream)) {}
    StateDir m_dir;
    FinishedStream m_stream;
};

// A rebuild of the index that holds no finished job's row: each row goes to the new log as it is
// added, a megabyte at a time (JobIndex::begin_rebuild). Nothing changes for readers until
// commit(); dropping it uncommitted leaves the old log as it was (markers added stay: an active
// marker of a finished job is retired again by the next reader).
class IndexRebuild {
public:
    IndexRebuild(IndexRebuild&&) = default;
    IndexRebuild& operator=(IndexRebuild&&) = delete;

    // Mark a job active.
    [[nodiscard]] Status add_active(const std::string& job_id);
    // One finished job's row; in increasing id order, so the log stays sorted by id (an id not
    // after the previous one is refused, nothing written).
    [[nodiscard]] Status add_finished(const FinishedEntry& entry);
    // The new log replaces the old one, the finished jobs' markers go, then `built` is written.
    [[nodiscard]] Status commit();

private:
    friend class JobIndex;
    IndexRebuild(StateDir dir, UniqueFd lock, AtomicFile log) : m_dir(std::move(dir)), m_lock(std::move(lock)), m_log(std::move(log)) {}
    [[nodiscard]] Status flush();

    StateDir m_dir;
    UniqueFd m_lock;  // the index lock, held until this is dropped
    AtomicFile m_log;
    std::string m_pending;                 // lines not yet written
    std::vector<std::string> m_finished;   // ids added, in order: their markers go at commit
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
    // The same, one job at a time (see IndexRebuild): for a state directory with more finished
    // jobs than should be held at once. Takes the index lock until the rebuild is dropped.
    Result<IndexRebuild> begin_rebuild();
    // Every live finished job, oldest id first, one row at a time (see FinishedStream).
    Result<FinishedStream> finished_stream() const;
    // Begin `job clear` (see IndexClear): the log as it is now, read under the index lock.
    Result<IndexClear> begin_clear();

    std::string log_path() const { return m_dir.index() + "/finished.jsonl"; }

private:
    std::string marker(const std::string& job_id) const { return m_dir.index() + "/active/" + job_id; }
    StateDir m_dir;
};

}  // namespace archctl::state
