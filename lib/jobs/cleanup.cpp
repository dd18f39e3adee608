// Step 5, cleanup: remove the job's staging on both nodes (DESIGN.md §5). Right before each
// node's cleanup, the paths that node's torrents reference below the job directory are read
// fresh: a staged file some torrent uses is kept (lib/node/keep_rule.hpp) and recorded.

#include "lib/base/crash_point.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/jobs/referenced.hpp"
#include "lib/node/ops.hpp"

namespace archctl::jobs {
StepResult step_cleanup(JobRun& run) {
    if (run.ledger.cleaned) return StepResult::ok();
    nlohmann::json kept_all = nlohmann::json::array();
    for (auto [node_name, folder] : {std::pair{run.def.source, run.def.route.source_path}, std::pair{run.def.target, run.def.route.target_path}}) {
        auto node = run.env.nodes.get(node_name);
        if (!node.ok()) return StepResult::failed(node.take_error());
        auto transport = node.value()->ops();
        if (!transport.ok()) return StepResult::failed(transport.take_error());
        std::string dir = job_dir(folder, run.def.id);
        auto used = referenced_paths_below(*node.value(), dir);
        if (!used.ok()) return StepResult::failed(used.take_error());
        node::CleanupRequest request{.job_dir = dir, .referenced = {}, .save_path = std::nullopt};
        for (const auto& p : used.value().paths)
            if (path_at_or_below(p, dir)) request.referenced.push_back(p);
        if (node_name == run.def.target) request.save_path = run.def.target_save_path;  // drops the merge record
        auto r = node::Ops(*transport.value()).cleanup(request);
        if (!r.ok()) return StepResult::failed(r.take_error());
        for (const auto& kept : r.value().kept) {
            nlohmann::json k = kept;
            // Files the keep rule kept; unknown content and directories are only reported.
            if (!kept.code.empty() && kept.code != "not_empty") run.note_kept(node_name, k, "cleanup");
            k["node"] = node_name;
            kept_all.push_back(std::move(k));
        }
        crash_point("cleanup.node");
    }
    // After the commit the target's part file is what the recheck verified; the job's copy of
    // the baseline one goes with the rest of the staging.
    if (run.ledger.committed) {
        ARCHCTL_TRY_STATUS(drop_baseline_copy(run));
    }
    run.ledger.cleaned = true;
    ARCHCTL_TRY_STATUS(run.event("cleaned", {{"kept", kept_all}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs
