// Step 3, merge: move the received files into place below the target's qB root (DESIGN.md §5).

#include "lib/jobs/job_run.hpp"
#include "lib/node/ops.hpp"

namespace archctl::jobs {
StepResult step_merge(JobRun& run) {
    if (run.ledger.merged) return StepResult::ok();
    // An existing target's baseline is durable before merge places the first file in it.
    ARCHCTL_TRY_STATUS(record_baseline(run));
    auto dst = run.target();
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    auto transport = dst.value()->ops();
    if (!transport.ok()) return StepResult::failed(transport.take_error());
    auto r = node::Ops(*transport.value())
                 .merge({.job_dir = job_dir(run.def.route.target_path, run.def.id),
                         .save_path = run.def.target_save_path,
                         .files = node::file_entries(run.def.files),
                         .record_path = std::nullopt});
    if (!r.ok()) return StepResult::failed(r.take_error());
    run.ledger.merged = true;
    run.ledger.merge_provenance = r.value().provenance;
    ARCHCTL_TRY_STATUS(run.event("merged", {{"provenance", run.ledger.merge_provenance}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs
