// Step 3, merge: move the received files into place below the target's qB root (DESIGN.md §5).

#include "lib/jobs/job_run.hpp"
#include "lib/node/ops.hpp"

namespace archctl::jobs {
StepResult step_merge(JobRun& run) {
    if (run.ledger.merged) return StepResult::ok();
    // An existing target's baseline is durable before merge places the first file in it.
    Status baseline = record_baseline(run);
    if (!baseline.ok()) return StepResult::failed(baseline.take_error());
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
    (void)run.event("merged", {{"provenance", run.ledger.merge_provenance}});
    return StepResult::ok();
}

}  // namespace archctl::jobs
