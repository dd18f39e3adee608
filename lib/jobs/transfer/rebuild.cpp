// Rebuilding a lost or corrupt ledger from evidence (docs/design.md "State on disk"): the placement records, the
// job's append-only events, the target's merge record and the target node's disk. Slower than
// reading the ledger, never lossy: every step it cannot prove done is run again, and every step
// is idempotent.

#include <fmt/format.h>

#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs::transfer {
namespace {

// Every delta file is a regular file of its size at its target path.
Result<bool> all_files_at_target(node::Ops& ops, const JobDefinition& def) {
    node::TreeColumnsRequest placed{.tree = {.base = def.target_save_path, .paths = {}}, .columns = {"size"}};
    placed.tree.paths.reserve(def.files.size());
    for (const auto& f : def.files) placed.tree.paths.push_back(f.at_target());
    ARCHCTL_TRY_ASSIGN(auto tree, ops.tree_columns(placed));
    if (def.files.empty() || tree.entries.size() != def.files.size()) return false;
    for (std::size_t i = 0; i < tree.entries.size(); ++i) {
        const auto& e = tree.entries[i];
        if (e.type != node::EntryType::file || !e.stat || e.stat->size != def.files[i].size) return false;
    }
    return true;
}

}  // namespace

Status rebuild_ledger(JobRun& run) {
    Ledger l;
    // The events say what the job did to qBittorrent (append-only, written before the ledger).
    auto events = run.env.store.events(run.def.id);
    if (events.ok())
        for (const auto& e : events->records) {
            std::string type = e.value("type", "");
            if (type == "target_added") {
                l.target_added = true;
                l.target_tag = e.value("tag", "");
            }
            if (type == "baseline_recorded") {
                l.baseline_recorded = true;
                l.target_baseline = e;
            }
            if (type == "target_touched") l.target_touched = true;
            if (type == "baseline_restored") l.target_touched = false;
            if (type == "staged") l.staged = true;
        }
    // The commit is the placement record this job wrote.
    state::PlacementStore placements(run.env.state_dir);
    for (const auto& alias : run.def.aliases) {
        auto rec = placements.get(alias, run.def.target);
        if (rec.ok() && rec.value() && rec.value()->job_id == run.def.id) {
            l.committed = true;
            l.generation = rec.value()->generation;
        }
    }
    // A new target's torrent that carries this job's tag was added by this job, whatever the
    // events managed to record before a crash.
    if (run.def.new_target && !l.committed) {
        auto dst = run.target();
        if (!dst.ok()) return dst.take_error();
        // Judged on the tag alone: nothing of the lost ledger is trusted.
        ARCHCTL_TRY_ASSIGN(TargetOwner owner, live_target_owner(*dst.value(), run.def, Ledger{}));
        if (owner == TargetOwner::this_job) {
            l.target_added = true;
            l.target_tag = job_tag(run.def.id);
        }
    }
    nlohmann::json evidence = {{"step", ""}, {"committed", l.committed}};
    if (l.committed) {
        l.staged = l.synced = l.merged = true;
        l.step = TransferStep::verify;  // only the post-commit part (chmod, start) runs again: idempotent
    } else {
        auto dst = run.target();
        if (!dst.ok()) return dst.take_error();
        ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.value()->ops());
        node::Ops ops(*transport);
        // The target's merge record: merge records its pre-state before it moves anything, and
        // it starts only once every file has arrived. Files it placed have left the route
        // folder (and, through Syncthing, the source's staging): they never "arrive" again, so
        // the job goes on at merge, which recognises its own files by the inodes it recorded.
        ARCHCTL_TRY_ASSIGN(auto record, ops.merge_record({.save_path = run.def.target_save_path,
                                                          .job_dir = job_dir(run.def.route.target_path, run.def.id),
                                                          .record_path = std::nullopt}));
        evidence["merge_record"] = node::to_string(record.record);
        evidence["placed"] = record.placed.size();
        if (record.record == node::MergeRecord::present) {
            l.staged = l.synced = true;
            l.step = TransferStep::merge;
        } else {
            ARCHCTL_TRY_ASSIGN(bool all_placed, all_files_at_target(ops, run.def));
            if (all_placed && l.staged) {
                l.synced = true;
                l.step = TransferStep::merge;
            } else {
                // Stage's READY marker and journal skip what is staged; sync waits only for
                // what has not arrived.
                l.step = TransferStep::stage;
                l.staged = false;
            }
        }
    }
    evidence["step"] = to_string(l.step);
    run.ledger = l;
    ARCHCTL_TRY_STATUS(run.save());
    return run.event("ledger_rebuilt", evidence);
}

}  // namespace archctl::jobs::transfer
