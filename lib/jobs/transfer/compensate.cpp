// Compensation: a failure before commit restores the target baseline and removes only what this
// job created that nothing references (docs/design.md "Failure before commit"). Every part is attempted; the first error
// is reported.
//
// Order on the target: the new target's torrent goes first, and only when the live torrent
// proves this job added it (its tag, see job_tag); a torrent there that someone else added stays,
// and so do its files. Then the referenced paths are read fresh and unmerge unlinks only files
// this job placed that no other torrent references (lib/node/server/keep_rule.hpp decides per file).
// What stays is recorded with its reason in the `unmerged` event and in the ledger's `kept`.

#include <fmt/format.h>

#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/jobs/core/job_row.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::transfer {
namespace {

namespace qb = clients::qbittorrent;

// A new target: remove the torrent when this job added it (before its files, so qBittorrent
// never sees them vanish), leave it when someone else did. Ok when nothing of this job's is
// left in qBittorrent. The live torrent is asked even when the ledger does not record the add
// (a ledger lost and rebuilt): its tag proves who added it, the ledger is only a cache.
Status remove_new_target(JobRun& run, NodeHandle& dst) {
    if (!run.def.new_target) return {};
    ARCHCTL_TRY_ASSIGN(TargetOwner owner, live_target_owner(dst, run.def, run.ledger));
    if (owner == TargetOwner::this_job) {
        ARCHCTL_TRY_STATUS(dst.qb().remove({run.def.qb_id}, qb::DeleteData::no));
        run.record("target_removed", {{"node", run.def.target}});
    } else if (owner == TargetOwner::someone_else) {
        run.record("target_kept", {{"node", run.def.target}, {"reason", "the torrent there was not added by this job"}});
    }
    if (!run.ledger.target_tag.empty()) ARCHCTL_TRY_STATUS(dst.qb().delete_tags({run.ledger.target_tag}));
    run.ledger.target_added = false;
    run.record_ledger();
    return {};
}

// The paths the target's torrents use now, read right before unmerge unlinks anything. The
// job's own torrent counts only for what is not this job's doing: a new target this job added
// is left out (after remove_new_target it is gone anyway); an existing target is left out except
// for files selected there that this job did not select itself.
Result<evidence::Referenced> used_on_target(JobRun& run, NodeHandle& dst) {
    bool own_torrent_is_ours = !run.def.new_target;
    if (run.def.new_target) {
        ARCHCTL_TRY_ASSIGN(TargetOwner owner, live_target_owner(dst, run.def, run.ledger));
        own_torrent_is_ours = owner == TargetOwner::this_job;
    }
    ARCHCTL_TRY_ASSIGN(evidence::Referenced refs, evidence::referenced_paths(dst, own_torrent_is_ours ? run.def.qb_id : std::string()));
    if (!run.def.new_target && refs.excluded_present) {
        ARCHCTL_TRY_ASSIGN(auto files, dst.qb().files(run.def.qb_id));
        for (const auto& f : files) {
            bool selected_by_this_job = run.ledger.target_touched && run.def.delta.contains(f.index);
            if (f.priority > 0 && !selected_by_this_job) refs.paths.insert(run.def.target_save_path + "/" + f.name);
        }
    }
    return refs;
}

// Remove the files merge placed (its own record says which; pre-existing ones stay). A merge
// that was interrupted left a record too, so this runs whenever merge may have started.
Status unmerge(JobRun& run, NodeHandle& dst) {
    bool may_have_merged = run.ledger.merged || run.ledger.step == TransferStep::merge || run.ledger.step == TransferStep::verify;
    if (!may_have_merged) return {};
    ARCHCTL_TRY_ASSIGN(evidence::Referenced used, used_on_target(run, dst));
    node::UnmergeRequest request{.save_path = run.def.target_save_path,
                                 .job_dir = job_dir(run.def.route.target_path, run.def.id),
                                 .record_path = std::nullopt,
                                 .referenced = {},
                                 .provenance = nlohmann::json(run.ledger.merge_provenance)};
    for (const auto& p : used.paths)
        if (evidence::path_at_or_below(p, run.def.target_save_path)) request.referenced.push_back(p);
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    auto r = node::Ops(*transport).unmerge(request);
    if (!r.ok() && is_outage(r.error())) return r.take_error();  // a wait, not a verdict
    if (!r.ok())
        return Error(ErrorCode::UNMERGE_FAILED, fmt::format("cannot remove the files job {} placed on '{}': {}", run.def.id, run.def.target,
                                                   r.error().message));
    run.ledger.merged = false;
    nlohmann::json kept = r.value().kept;
    for (const auto& k : r.value().kept)
        if (k.code != node::KeptCode::not_empty) run.note_kept(run.def.target, k, "unmerge");
    for (const auto& p : r.value().preexisting)
        run.note_kept(run.def.target, node::KeptEntry{p, "it was there before this job", node::KeptCode::preexisting}, "unmerge");
    run.record("unmerged", {{"removed", r.value().removed},
                                 {"kept", kept},
                                 {"preexisting", r.value().preexisting},
                                 {"torrents_read", used.qb_ids.size()}});
    return {};
}

}  // namespace

Status compensate(JobRun& run, const Error& why) {
    run.record("compensating", {{"reason", why.message}});
    auto dst = run.target();
    if (!dst.ok()) return dst.take_error();
    Status first;
    auto keep = [&first](Status s) {
        if (!s.ok() && first.ok()) first = std::move(s);
    };
    // A run that lifted the job's hold (its sync step did) may have the target pulling the job's
    // files right now: a hold stops that before anything is removed, so no pull makes the staging
    // directory again after cleanup settled it. Lifted again below, once the staging is gone.
    if (run.released && !run.ledger.synced)
        if (Status held = hold_transfer(run, "undo"); !held.ok())
            run.log(fmt::format("archctl: warning: {}; Syncthing may bring back staging that cleanup removes", held.error().message));
    Status removed = remove_new_target(run, *dst.value());
    // While this job's torrent may still be in qBittorrent its files stay too: a rerun removes
    // both (the merge record is kept until unmerge runs).
    if (removed.ok()) keep(unmerge(run, *dst.value()));
    keep(std::move(removed));
    keep(restore_baseline(run));
    keep(drop_baseline_copy(run));
    run.record_ledger();
    StepResult c = step_cleanup(run);
    if (c.kind == StepResult::fail) keep(c.error);
    // A hold a stop left in the target's Syncthing goes after the staging: lifted before, it lets
    // the target pull the job's files again while cleanup removes them (hold.cpp). The
    // target rescans the folder when the hold goes: what that brings back is settled too.
    if (!run.released) {
        release_before_run(run);
        if (Status settled = settle_staging(run); !settled.ok())
            run.log(fmt::format("archctl: warning: job {}: staging directories may be left in route folder {}: {}", run.def.id,
                                run.def.route.id, settled.error().message));
    }
    if (std::string kept = kept_text(run.ledger.kept); !kept.empty())
        run.log(fmt::format("archctl: job {}: {} (see 'archctl job show {}')", run.def.id, kept, run.def.id));
    if (!first.ok()) return first;
    run.record("compensated", {{"kept", run.ledger.kept.size()}});
    return {};
}

}  // namespace archctl::jobs::transfer
