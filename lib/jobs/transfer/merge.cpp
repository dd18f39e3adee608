// Step 3, merge: move the received files into place below the target's qB root (docs/design.md "Step 3: merge").
// A copy across filesystems holds the free-space floor (--min-free): the node stops before the
// floor and the run ends as a clean 'disk' stop (exit 10) that `resume` continues. A copy that
// finds the filesystem full (no floor, or something else filled it) stops the same way.

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::transfer {
namespace {

// Why a merge that did not complete stopped, as the run reports it.
StepResult merge_stopped(JobRun& run, const node::MergeResult& r) {
    std::uint64_t floor = run.env.budgets.min_free;
    // The target cannot take the job: a stop that a job whose target stays full turns, past
    // the bound, into its release (target_cannot_take).
    if (r.stopped == node::Stop::disk && floor)
        return target_cannot_take(
            run, StopReason::disk, fmt::format("merge stopped at the free-space floor on '{}': {} free, {} still to copy for '{}', floor {} (--min-free)",
                                               run.def.target, format_size(r.free_bytes), format_size(r.need_bytes), r.stopped_at, format_size(floor)));
    if (r.stopped == node::Stop::disk)
        return target_cannot_take(run, StopReason::disk,
                                  fmt::format("merge stopped: the filesystem of '{}' on '{}' is full ({} free, {} still to copy)", r.stopped_at,
                                              run.def.target, format_size(r.free_bytes), format_size(r.need_bytes)));
    if (auto stop = run.should_stop()) return *stop;
    return StepResult::stopped(StopReason::interrupt, interrupt_text());
}

// The delta as the target's disk will have it: each file at its path there.
std::vector<node::FileEntry> target_entries(const std::vector<JobFile>& files) {
    std::vector<node::FileEntry> out;
    for (const auto& f : files) out.push_back({f.index, f.at_target(), f.size});
    return out;
}

}  // namespace

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
                         .files = target_entries(run.def.files),
                         .record_path = std::nullopt,
                         .min_free = run.env.budgets.min_free,
                         .layout = run.def.payload_layout});
    if (!r.ok()) return StepResult::failed(r.take_error());
    run.session.bytes_copied += r.value().bytes_copied;
    if (!r.value().complete) return merge_stopped(run, r.value());
    target_took(run);
    run.ledger.merged = true;
    run.ledger.merge_provenance = std::move(r.value().provenance);
    ARCHCTL_TRY_STATUS(run.event("merged", {{"provenance", run.ledger.merge_provenance}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
