#pragma once
// Job records on disk: the immutable definition, the mutable ledger, the append-only events.
//
// Creation order (a crash at any point leaves a state the next run understands):
//   1. index/active/<id> marked              → a marker without a job: skipped (job_index.hpp)
//   2. jobs/<id>/ created                    → an empty directory: ignored by list_jobs
//   3. definition.json written O_EXCL        → the job exists
//   4. events.jsonl first event appended
// Nothing here reads other jobs: creating one costs the same with 50,000 old jobs as with none.
// The ledger is absent until the first step boundary; a missing or corrupt ledger is rebuilt by
// the caller from the definition, the journals and live reads (never lossy).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/journal.hpp"
#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

class JobStore {
public:
    explicit JobStore(const StateDir& dir) : m_dir(dir) {}

    // Write the definition of a new job (fails with EXISTS if it already has one).
    Status create(const std::string& job_id, const nlohmann::json& definition);
    Result<nlohmann::json> definition(const std::string& job_id) const;
    // The definition with every element of its per-file lists (`files`, `union_files`) read as
    // null: the lists keep their lengths, and a summary that counts them needs ~16 bytes a file
    // where the lists take ~900 (~90 MB at 100,000 files).
    Result<nlohmann::json> definition_outline(const std::string& job_id) const;

    // The ledger; NOT_FOUND when none was written yet, CORRUPT when unreadable.
    Result<nlohmann::json> ledger(const std::string& job_id) const;
    Status write_ledger(const std::string& job_id, const nlohmann::json& ledger);

    // Append one event {"at": ..., "type": ..., ...fields}.
    Status append_event(const std::string& job_id, const std::string& type, nlohmann::json fields = nlohmann::json::object());
    Result<JournalContents> events(const std::string& job_id) const;

    // Ids of every job that has a definition, oldest first.
    Result<std::vector<std::string>> list() const;
    // Ids of jobs that did work (they have events or a ledger) but whose definition is missing or
    // unreadable, oldest first. A directory with nothing in it never became a job. Once the job
    // index is built only active jobs are read (a retired job had a readable definition).
    Result<std::vector<std::string>> damaged() const;
    // Whether this one job is damaged in that sense.
    bool is_damaged(const std::string& job_id) const;

    // Remove a job's records entirely (after its tombstone is written). `later`: the jobs
    // directory is not fsynced, the caller does it once after many (sync_removals()).
    enum class Sync { now, later };
    Status remove(const std::string& job_id, Sync sync = Sync::now);
    // Make the removals done with Sync::later durable (one fsync of the jobs directory).
    Status sync_removals();
    // The request digest in a job's definition ("" when it has none), read without parsing the
    // whole definition when it is where the definition's writer puts it.
    std::string request_digest(const std::string& job_id) const;

    std::string dir_of(const std::string& job_id) const { return m_dir.job(job_id); }
    const StateDir& state_dir() const { return m_dir; }

private:
    StateDir m_dir;
};

}  // namespace archctl::state
