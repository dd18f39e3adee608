#pragma once
// Tombstones: when a finished job is hidden (Clear Finished, `job rm`), a minimal record stays
// for the retention period so a rerun of the same command is recognised as already done.
//
//   tombstones/<job-id>                 one hidden job (`job rm`, a job clear hides one by one)
//   tombstones/cleared-<stamp>.jsonl    the jobs one `job clear` hid at once (TombstoneBatch): a
//                                       header line {"tombstones": "cleared", "version": 1,
//                                       "hidden_at"}, then one {"job_id", "request_digest",
//                                       "outcome"} a line; written temp + fsync + rename + fsync
//                                       dir, so a crash leaves all of them or none
// A job may have both, or two batches (a clear rerun after a crash); either says it was hidden.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/atomic_file.hpp"
#include "lib/base/result.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::state {

struct Tombstone {
    std::string job_id;
    std::string request_digest;  // digest of the job's request: same command → same digest
    std::string outcome;         // "done", "failed", "cancelled"
    std::string hidden_at;       // RFC 3339
};

Status write_tombstone(const StateDir& dir, const Tombstone& t);
// Every tombstone, those in batches included (one record each: for tests and inspection).
Result<std::vector<Tombstone>> read_tombstones(const StateDir& dir);
// Remove tombstones older than `days` (a batch as a whole: its records share hidden_at); returns
// how many records were removed. A batch is counted a line at a time, never held.
Result<size_t> purge_tombstones(const StateDir& dir, long days);

// The tombstones of many jobs hidden at once, written as they are added (a megabyte at a time)
// into one file that appears only on commit().
class TombstoneBatch {
public:
    static Result<TombstoneBatch> create(const StateDir& dir);
    // One job's record; its hidden_at is the batch's.
    [[nodiscard]] Status add(const Tombstone& t);
    // Durable and visible, with every record added (nothing is written for an empty batch).
    [[nodiscard]] Status commit();
    std::size_t size() const { return m_count; }

private:
    TombstoneBatch(AtomicFile file, std::string hidden_at) : m_file(std::move(file)), m_hidden_at(std::move(hidden_at)) {}
    AtomicFile m_file;
    std::string m_hidden_at;
    std::string m_pending;
    std::size_t m_count = 0;
};

}  // namespace archctl::state
