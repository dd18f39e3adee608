#pragma once
// One job's row, whatever its kind: what `status`, `job list`, `job show`, the driver's run
// result and notifications show of it. Each kind fills it from its definition and ledger (the
// transfer kind's summarize_transfer in lib/jobs/transfer/summary.hpp, the evict kind's in
// lib/jobs/evict); a damaged job's row is read here, since no kind can read it.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {

// What a row shows of a job's ledger: the part every kind has (LedgerCore's state, step,
// failure, kept) and the transfer facts rows report (synced, merged, the bytes seen on the
// target, a target that cannot take the job). An eviction leaves the transfer facts unset.
struct RowLedger {
    JobState state = JobState::running;
    std::string step;
    nlohmann::json failure;
    nlohmann::json kept = nlohmann::json::array();
    bool synced = false;
    bool merged = false;
    std::uint64_t bytes_present = 0;
    std::optional<TargetBlocked> target_blocked;
};

struct JobSummary {
    std::string id;
    nlohmann::json definition;
    RowLedger ledger;             // what the row shows of the kind's ledger
    nlohmann::json stored_ledger; // the ledger as the kind stores it (`job show --json`)
    std::string nodes;            // "seedbox → nas"; the cache node alone for an eviction
    bool running = false;         // a live process holds its lock
    long pid = 0;                 // that process (read_lock), 0 when none
    std::string status;           // the progress text
    bool needs_attention = false; // failed with something left to do, or cleanup required
    bool damaged = false;         // its definition is missing or unreadable: nothing can drive it
    bool retired = false;         // not in the job index's active set (its row is in the finished log)
    // A damaged job's staging directories as its "created" event names them: [{node, path}].
    nlohmann::json staging = nlohmann::json::array();

    bool finished() const;
    // What the job moves, from where to where, read from its definition: op (archive, unarchive,
    // evict), resource (its qB id), torrent name, source and target node (evict: the cache node
    // as source, no target). Empty fields for a damaged job.
    struct Identity {
        std::string op, resource, name, source, target;
    };
    Identity identity() const;
    // The job row of every --json document (man archctl-json, "JOB ROW"): id, op, resource,
    // name, source, target, state, step, bytes/files done and total, percent, started, ended,
    // pid, failure {code, message} or null, plus the human `status` text.
    nlohmann::json to_json() const;
};

// Whether a live process holds the job's lock, and its pid.
void read_lock(const state::JobStore& store, JobSummary& row);

// The row of a damaged job (state::JobStore::damaged): what is wrong and the command that
// removes its records.
[[nodiscard]] JobSummary summarize_damaged(const state::JobStore& store, const std::string& id);
// Remove a damaged job's staging directories on their nodes (the node's cleanup operation: only
// the job's own directory below the route folder). Every node is tried; the first error is
// returned and the job's records should then stay, so the paths remain known.
[[nodiscard]] Status remove_damaged_staging(Nodes& nodes, const JobSummary& row);
// What compensation and cleanup left in place, by step and reason: "compensation kept 3 files
// used by other torrents", "compensation kept 2 files: 1 used by another torrent, 1 there before
// the job"; empty when nothing was kept. `kept` is the ledger's list.
std::string kept_text(const nlohmann::json& kept);

}  // namespace archctl::jobs
