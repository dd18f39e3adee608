// Compensation: a failure before commit restores the target baseline and removes only what this
// job created (DESIGN.md §5). Every part is attempted; the first error is reported.

#include <fmt/format.h>

#include "lib/jobs/job_run.hpp"

namespace archctl::jobs {
namespace {

namespace qb = clients::qbittorrent;

// Remove the files merge placed (its own record says which; pre-existing ones stay). A merge
// that was interrupted left a record too, so this runs whenever merge may have started.
Status unmerge(JobRun& run, NodeHandle& dst) {
    bool may_have_merged = run.ledger.merged || run.ledger.step == "merge" || run.ledger.step == "verify";
    if (!may_have_merged) return {};
    ARCHCTL_TRY_ASSIGN(node::Transport * ops, dst.ops());
    auto r = node::call_operation(*ops, "unmerge", {{"job_dir", job_dir(run.def.route.target_path, run.def.id)},
                                                    {"save_path", run.def.target_save_path},
                                                    {"provenance", run.ledger.merge_provenance}});
    if (!r.ok())
        return Error("UNMERGE_FAILED", fmt::format("cannot remove the files job {} placed on '{}': {}", run.def.id, run.def.target,
                                                   r.error().message));
    run.ledger.merged = false;
    (void)run.event("unmerged", {{"removed", r.value().value("removed", nlohmann::json::array())},
                                 {"kept", r.value().value("kept", nlohmann::json::array())}});
    return {};
}

}  // namespace

Status compensate(JobRun& run, const Error& why) {
    (void)run.event("compensating", {{"reason", why.message}});
    auto dst = run.target();
    if (!dst.ok()) return dst.take_error();
    Status first;
    auto keep = [&first](Status s) {
        if (!s.ok() && first.ok()) first = std::move(s);
    };
    if (run.def.new_target && run.ledger.target_added) {
        // A new target is removed before its files, so qBittorrent never sees them vanish.
        Status removed = dst.value()->qb().remove({run.def.qb_id}, qb::DeleteData::no);
        if (removed.ok()) run.ledger.target_added = false;
        keep(std::move(removed));
    }
    keep(unmerge(run, *dst.value()));
    keep(restore_baseline(run));
    keep(drop_baseline_copy(run));
    (void)run.save();
    StepResult c = step_cleanup(run);
    if (c.kind == StepResult::fail) keep(c.error);
    if (!first.ok()) return first;
    (void)run.event("compensated");
    return {};
}

}  // namespace archctl::jobs
