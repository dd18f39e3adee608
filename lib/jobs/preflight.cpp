// Preflight: the external state a job relies on, recomputed before every step (DESIGN.md §5).
// A change is an explicit STALE_STATE failure (compensated by the caller), never adapted to.

#include <fmt/format.h>

#include "lib/jobs/job_run.hpp"
#include "lib/jobs/resolve.hpp"

namespace archctl::jobs {
namespace {

Resource resource_of(const JobDefinition& def) {
    Resource res;
    res.identity = def.identity;
    res.name = def.name;
    return res;
}

}  // namespace

Status check_source(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
    ARCHCTL_TRY_ASSIGN(auto view, read_placement(*src, resource_of(run.def)));
    if (!view) return stale(fmt::format("the source torrent on '{}' is gone: it", run.def.source), run);
    if (view->save_path != run.def.source_save_path)
        return stale(fmt::format("the source placement on '{}' (moved to '{}')", run.def.source, view->save_path), run);
    if (fingerprint(*view) != run.def.source_fingerprint)
        return stale(fmt::format("the source placement on '{}' (selection or completion)", run.def.source), run);
    return {};
}

Result<TargetOwner> live_target_owner(NodeHandle& dst, const JobDefinition& def, const Ledger& ledger) {
    ARCHCTL_TRY_ASSIGN(auto live, dst.qb().torrents({def.qb_id}));
    std::optional<std::vector<std::string>> tags;
    if (!live.empty()) tags = live[0].tags;
    return target_owner(ledger, def.id, tags);
}

Status check_target(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    ARCHCTL_TRY_ASSIGN(auto view, read_placement(*dst, resource_of(run.def)));
    if (run.def.new_target) {
        if (!view) return {};
        // Once the add intent is durable the torrent there may be this job's own: its tag says.
        if (!run.ledger.target_added) return stale(fmt::format("the target '{}' (it now has the torrent)", run.def.target), run);
        ARCHCTL_TRY_ASSIGN(TargetOwner owner, live_target_owner(*dst, run.def, run.ledger));
        if (owner == TargetOwner::someone_else)
            return stale(fmt::format("the target '{}' (it now has the torrent, not added by this job)", run.def.target), run);
        return {};
    }
    // An existing target is compared with what the job was planned against until this job
    // itself starts changing it (stop, selection) in verify.
    if (run.ledger.target_touched) return {};
    if (!view) return stale(fmt::format("the target placement on '{}' is gone: it", run.def.target), run);
    if (fingerprint(*view) != run.def.target_fingerprint)
        return stale(fmt::format("the target placement on '{}'", run.def.target), run);
    return {};
}

StepResult step_preflight(JobRun& run) {
    if (run.ledger.committed) return StepResult::ok();  // a changed source no longer matters
    Status source = check_source(run);
    if (!source.ok()) return StepResult::failed(source.take_error());
    if (run.metainfo.empty()) {
        auto src = run.source();
        if (!src.ok()) return StepResult::failed(src.take_error());
        auto exported = src.value()->qb().export_torrent(run.def.qb_id);
        if (!exported.ok()) return StepResult::failed(exported.take_error());
        run.metainfo = exported.value();
    }
    ARCHCTL_TRY_STATUS(check_target(run));
    return StepResult::ok();
}

}  // namespace archctl::jobs
