#pragma once
// Internal to lib/jobs: the state of one job being driven, shared by the step files.

#include <chrono>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs::transfer {

// The records (ledger, session, events: core/ledger.hpp) and the state of one archive or
// unarchive job being driven.
struct JobRun : JobRecords<Ledger> {
    JobRun(RunEnv& run_env, JobDefinition definition)
        : JobRecords(run_env, definition.id), def(std::move(definition)), started(run_env.io.clock->steady()) {}

    JobDefinition def;
    SteadyTime started;
    std::string metainfo;  // exported .torrent bytes: the job directory's copy (resource.torrent)
    bool metainfo_checked = false;  // this run checked `metainfo` is the job's resource (job_metainfo)
    bool released = false;  // this run checked that the target holds no transfer of the job
    bool staged_here = false;  // this run's stage step linked the job's files (not an earlier run's)
    // Payload files this run's byte budget leaves on the source: the target ignores them until
    // the next run (limit_transfer, hold.cpp).
    std::set<std::uint32_t> budget_held;
    std::string waiting_on;  // why the sync step waits ("" = nothing known), for the progress panel
    // This run stopped because the target cannot take the job (target_cannot_take), and, past the
    // bound, undoes and releases it (TransferRun::fail then ends it cancelled).
    bool room_stop = false;
    bool releasing = false;
    std::uint64_t session_bytes() const { return session.bytes_copied + session.bytes_synced; }
    Clock& clock() const { return *env.io.clock; }

    // Compensation and restore go on when a record cannot be written (undoing matters more than
    // the record of it); the failure is said on the log, never dropped silently.
    void record(const std::string& type, nlohmann::json fields = nlohmann::json::object());
    void record_ledger();
    // Record a file compensation or cleanup left in place on `node` ({path, reason, code}) in
    // the ledger's `kept`, once per node and path; saved with the next save().
    void note_kept(const std::string& node, nlohmann::json entry, const std::string& step);
    // A stop the budgets or the user asked for, checked at chunk and step boundaries.
    std::optional<StepResult> should_stop() const;
    void progress(const std::string& step, int number, std::uint64_t done, std::uint64_t total, std::uint64_t files_done,
                  const std::string& current) const;

    Result<NodeHandle*> source() { return env.nodes.get(def.source); }
    Result<NodeHandle*> target() { return env.nodes.get(def.target); }
};

// The exported .torrent kept in the job's directory at creation: what the run adds to the target
// and ships with the staged files, so that one job asks qBittorrent for it once.
inline constexpr const char* k_job_metainfo = "resource.torrent";

// The job's metainfo for this run: the job directory's copy when it parses and is the job's
// resource (checked once per run); else (a job created before the copy was kept, a crash, a
// damaged copy: the record is a cache) exported from the source again, checked (STALE_STATE
// when the source now has another torrent under the id) and kept again, durably.
[[nodiscard]] Status job_metainfo(JobRun& run);

// Preflight, run before every step until the commit: the source placement (present, save path,
// selection, completion) and the target (a new target still without the torrent; an existing
// one unchanged until this job touches it). A change is STALE_STATE.
StepResult step_preflight(JobRun& run);
// Who put the torrent with the job's qB id on the target, read live (target_owner in job.hpp).
[[nodiscard]] Result<TargetOwner> live_target_owner(NodeHandle& dst, const JobDefinition& def, const Ledger& ledger);
[[nodiscard]] Status check_source(JobRun& run);
[[nodiscard]] Status check_target(JobRun& run);
StepResult step_stage(JobRun& run);
StepResult step_sync(JobRun& run);
StepResult step_merge(JobRun& run);
StepResult step_verify(JobRun& run);
StepResult step_cleanup(JobRun& run);
// A lost or corrupt ledger, rebuilt from placement records, events and the target's disk.
Status rebuild_ledger(JobRun& run);
// Existing target: record its baseline durably (selection, run state, qB id, content,
// provenance, part file) before anything touches it. Idempotent.
[[nodiscard]] Status record_baseline(JobRun& run);
// Failure before commit: restore the target baseline, remove only what this job created.
Status compensate(JobRun& run, const Error& why);
// Undo what this job did to an existing target (after unmerge): selection, part file, per-file
// progress (a recheck), tags, run state. Errors name what could not be restored.
[[nodiscard]] Status restore_baseline(JobRun& run);
// Start the job's torrent on the target and see it started: a check qBittorrent still had queued
// stops it again when it ends, so a torrent seen stopped a while after the start is started once
// more (15 s at most, then a warning).
[[nodiscard]] Status start_and_confirm(JobRun& run, clients::qbittorrent::Api& tqb);
// Drop the job's copy of the baseline part file (after commit or compensation).
[[nodiscard]] Status drop_baseline_copy(JobRun& run);
// Recheck a stopped torrent and wait for the result; an attempt to download fails. A check
// qBittorrent is still running (asked for by a run that was stopped) is stopped first: asked to
// recheck during its check, qBittorrent 4.5 leaves the torrent at 0% for good. A check that
// makes no progress for recheck_stall_limit() while no other check of that qBittorrent moves
// either (it checks one torrent at a time: a queued one shows checking at 0%) is stopped and
// asked for once more; a second stall is the error is_recheck_stall() recognises, naming the
// torrent and what to do. A stop asked for during the wait (stop_requested()) ends it with
// CANCELLED; the check itself goes on in qBittorrent.
[[nodiscard]] Result<std::vector<clients::qbittorrent::TorrentFile>> recheck_and_wait(Clock& clock, clients::qbittorrent::Api& client,
                                                                                      const std::string& id);
// recheck_and_wait's error after a second stall.
[[nodiscard]] bool is_recheck_stall(const Error& e);
// How long a recheck may show no progress before it counts as stalled, for a torrent of `bytes`:
// 30 s plus 1 s per 100 MiB, 10 minutes at most.
[[nodiscard]] std::chrono::seconds recheck_stall_limit(std::int64_t bytes);
// How long recheck_and_wait sleeps between two reads of the torrent, `since_recheck` after it
// asked for the recheck: 50 ms for the first 2 s, 200 ms up to 5 s, 500 ms up to 20 s, 1 s up to a
// minute, then 2 s.
[[nodiscard]] std::chrono::milliseconds recheck_poll_interval(std::chrono::steady_clock::duration since_recheck);

// A stop stops the bytes (hold.cpp): hold_transfer() stops the rest of an unsynced
// job's transfer into the target (ignore patterns for the job's directory on the target's
// Syncthing, marked with the job id, so the hold is its own durable record); release_transfer()
// lifts it. Both are idempotent; release reads the target live, so it needs no record of ours.
// Release is due before the job moves bytes again (begin of a run, the sync step) and after
// compensation or cancel removed the job's staging (before, the target would pull it again).
[[nodiscard]] Status hold_transfer(JobRun& run, const std::string& reason);
[[nodiscard]] Status release_transfer(JobRun& run);
// Whether .stignore `ignore_lines` hold the transfer of `job_id`.
[[nodiscard]] bool holds_transfer(const std::vector<std::string>& ignore_lines, const std::string& job_id);
// A run never lets Syncthing carry a job past its byte budget: before the stage links anything,
// and when the sync step starts, the target's hold covers every payload file beyond the first
// ones (in index order, not yet on the target) whose sizes reach the budget left — so a run moves
// at most the one file that crosses the cap past it. Without --max-bytes, or with every file
// within it, this is release_transfer(). `before_staging`: nothing of the job can be in a pull
// yet, so the folder needs no restart. Sets run.budget_held.
[[nodiscard]] Status limit_transfer(JobRun& run, const std::set<std::uint32_t>& present, bool before_staging);
// After the staging is removed: Syncthing may bring an emptied job directory back for a moment;
// both sides scan the job's prefix and what came back is cleaned again, for a few seconds at
// most (cleanup.cpp).
[[nodiscard]] Status settle_staging(JobRun& run);
// For the driver's session end: after a stop (budget, deadline, disk, interrupt, waiting), hold;
// a hold that cannot be written is a warning on the log, never a failure of the stop. A
// --no-wait run that ends waiting does not hold: the user asked Syncthing to carry on alone.
void hold_after_stop(JobRun& run, StopReason reason);
// At the start of a run: release, a failure is a warning (the sync step releases again).
void release_before_run(JobRun& run);

// What the sync step reads from both Syncthings when the job's bytes do not arrive.
struct SyncFacts {
    std::string source, target;          // node names
    bool target_paused = false, source_paused = false;
    std::string target_state;            // db/status state on the target ("" = not running)
    std::string target_error;            // db/status error on the target
    std::optional<bool> peer_connected;  // the target's connection to the source device
    std::string remote_state;            // the target's completion of the source: valid|notSharing|paused|unknown|""
    std::vector<clients::syncthing::FolderError> pull_errors;  // the target's folder/errors
    std::string job_id;
};
struct Blockage {
    std::string node;   // where the cause was seen
    std::string cause;  // "" when nothing known keeps the bytes from moving
    // The target's Syncthing refuses the job's bytes (out of space, a folder error, pull errors):
    // a condition of the target that another node may not have (target_cannot_take), unlike a
    // paused folder or a lost connection.
    bool target_refuses = false;
};
// The one cause, by precedence: a paused folder, a folder error, a disconnected device, pull
// errors (the job's own first; "no space left" reads as the target out of disk space).
[[nodiscard]] Blockage blockage_of(const SyncFacts& facts);

// A job that cannot land moves on (target_room.hpp): the stop of a step because the target
// cannot take the job's bytes (the sync's or merge's floor, a part file that does not fit, the
// target's Syncthing out of space or refusing the job's files) is recorded in the ledger's
// target_blocked (an event the first time); it stays the stop `reason` with `text`, saying how
// long the job waits, or, past the bound (release_due), becomes the failure DISK_INSUFFICIENT
// that undoes and releases the job.
[[nodiscard]] StepResult target_cannot_take(JobRun& run, StopReason reason, const std::string& text);
// The target took the job's bytes again (the step it blocked finished, or a run moved bytes to
// the target and stopped for another reason): its target_blocked record goes (an event says so).
void target_took(JobRun& run);

// STALE_STATE: `what` changed since the job was created; archctl never adapts silently.
Error stale(const std::string& what, const JobRun& run);

// The job directory name inside a route folder.
inline std::string job_dir(const std::string& route_folder, const std::string& job_id) { return route_folder + "/" + job_id; }

}  // namespace archctl::jobs::transfer
