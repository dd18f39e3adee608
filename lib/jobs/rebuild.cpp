// Rebuilding a lost or corrupt ledger from evidence (DESIGN.md §4): the placement records, the
// job's append-only events, and the target node's disk. Slower than reading the ledger, never
// lossy: every step it cannot prove done is run again, and every step is idempotent.

#include <fmt/format.h>

#include "lib/jobs/job_run.hpp"
#include "lib/node/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs {

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
    if (l.committed) {
        l.staged = l.synced = l.merged = true;
        l.step = "verify";  // only the post-commit part (chmod, start) runs again: idempotent
    } else {
        // Files already at their target paths mean merge ran (it is idempotent: its own record
        // recognises the files it placed); otherwise start from stage, whose READY marker and
        // journal skip what is done.
        auto dst = run.target();
        if (!dst.ok()) return dst.take_error();
        ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.value()->ops());
        node::TreeRequest placed{.base = run.def.target_save_path, .paths = {}};
        for (const auto& f : run.def.files) placed.paths.push_back(f.path);
        ARCHCTL_TRY_ASSIGN(auto tree, node::Ops(*transport).tree(placed));
        bool all_placed = !run.def.files.empty();
        size_t i = 0;
        for (const auto& e : tree.entries) {
            if (i >= run.def.files.size()) break;
            all_placed = all_placed && e.type == "file" && e.stat && e.stat->size == run.def.files[i].size;
            ++i;
        }
        if (all_placed && l.staged) {
            l.synced = true;
            l.step = "merge";
        } else {
            l.step = "stage";
            l.staged = false;
        }
    }
    run.ledger = l;
    ARCHCTL_TRY_STATUS(run.save());
    return run.event("ledger_rebuilt", {{"step", l.step}, {"committed", l.committed}});
}

}  // namespace archctl::jobs
