// Step 5, cleanup: remove the job's staging on both nodes (DESIGN.md §5).

#include "lib/base/crash_point.hpp"
#include "lib/jobs/job_run.hpp"

namespace archctl::jobs {
StepResult step_cleanup(JobRun& run) {
    if (run.ledger.cleaned) return StepResult::ok();
    for (auto [node_name, folder] : {std::pair{run.def.source, run.def.route.source_path}, std::pair{run.def.target, run.def.route.target_path}}) {
        auto node = run.nodes.get(node_name);
        if (!node.ok()) return StepResult::failed(node.take_error());
        auto ops = node.value()->ops();
        if (!ops.ok()) return StepResult::failed(ops.take_error());
        nlohmann::json args = {{"job_dir", job_dir(folder, run.def.id)}};
        if (node_name == run.def.target) args["save_path"] = run.def.target_save_path;  // drops the merge record
        auto r = node::call_operation(*ops.value(), "cleanup", args);
        if (!r.ok()) return StepResult::failed(r.take_error());
        crash_point("cleanup.node");
    }
    // After the commit the target's part file is what the recheck verified; the job's copy of
    // the baseline one goes with the rest of the staging.
    if (run.ledger.committed) {
        Status dropped = drop_baseline_copy(run);
        if (!dropped.ok()) return StepResult::failed(dropped.take_error());
    }
    run.ledger.cleaned = true;
    (void)run.event("cleaned");
    return StepResult::ok();
}

}  // namespace archctl::jobs
