// Step 1, stage: the delta files and the job's auxiliary data in the route folder on the source node.

#include <cstdlib>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/transfer/preflight.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs::transfer {
namespace {

// Budget enforcement while a node operation runs: count copied bytes, cancel at the cap.
class StageSink {
public:
    StageSink(JobRun& run, node::Ops& ops) : m_run(run), m_ops(ops) {}
    void operator()(const node::Progress& p) {
        m_copied = p.bytes_copied;
        m_run.progress("stage", 1, p.bytes, p.bytes_total, p.files, p.current);
        std::uint64_t before = m_run.session.bytes_copied;
        m_run.session.bytes_copied = m_base + m_copied;
        if (m_run.should_stop()) m_ops.cancel();
        m_run.session.bytes_copied = before;
    }
    std::uint64_t m_base = 0, m_copied = 0;

private:
    JobRun& m_run;
    node::Ops& m_ops;
};

Error partfile_unsupported(const JobRun& run, const std::string& why) {
    return Error(ErrorCode::PARTFILE_UNSUPPORTED, fmt::format("PARTFILE_UNSUPPORTED: job {}: {}", run.def.id, why),
                 "the pieces shared by selected and skipped files cannot be verified without it; nothing was committed");
}

// The part file the target needs, built on the source into the job (docs/design.md "Partfiles and piece boundaries"): for every
// boundary piece, the bytes of the files outside the union, from those files on the source's
// disk or from the source's own part file, each piece checked against its SHA-1 first. The
// source torrent is stopped (and its run state restored) only while its part file is read.
StepResult carry_partfile(JobRun& run, NodeHandle& src, node::Ops& ops) {
    namespace qb = clients::qbittorrent;
    auto meta = torrent::parse_metainfo(run.metainfo, run.def.name, torrent::k_layers_optional);
    if (!meta.ok()) return StepResult::failed(meta.take_error());
    torrent::FileModel model(meta.value());
    SourceNeeds needs = needs_of(run.def, run.def.source_files_path());
    needs.model = &model;
    needs.piece_hashes = &meta.value().v1_pieces();
    // The neighbours' paths on the source's disk: where its live layout puts them.
    evidence::Resource resource;
    resource.identity = run.def.identity;
    resource.name = run.def.name;
    auto view = evidence::read_placement(src, resource);
    if (!view.ok()) return StepResult::failed(view.take_error());
    if (!view.value()) return StepResult::failed(stale("the source torrent", run));
    torrent::PlacementLayout layout = torrent::infer_layout(plan::metainfo_paths(model), view.value()->names);
    needs.layout = &layout;
    auto sourcing = source_partfile_plan(ops, run.def.source, run.def.qb_id, needs);
    if (!sourcing.ok()) return StepResult::failed(sourcing.take_error());
    bool was_started = false;
    if (sourcing->reads_partfile()) {
        auto infos = src.qb().torrents({run.def.qb_id});
        if (!infos.ok()) return StepResult::failed(infos.take_error());
        if (infos.value().empty()) return StepResult::failed(stale("the source torrent", run));
        was_started = qb::is_started(infos.value()[0].run_state);
        if (was_started) {
            Status s = src.qb().stop({run.def.qb_id});
            if (!s.ok()) return StepResult::failed(s.take_error());
            run.clock().sleep_for(std::chrono::milliseconds(1500));  // qB flushes the part file on stop
            // Its slot table as it is now that libtorrent has let go of it.
            sourcing = source_partfile_plan(ops, run.def.source, run.def.qb_id, needs);
        }
    }
    std::optional<Result<node::PartfileBuildResult>> building;
    if (sourcing.ok()) {
        node::PartfileBuildRequest request = sourcing->request;
        request.to = job_dir(run.def.route.source_path, run.def.id) + "/" + node::aux_path(node::k_partfile_aux);
        request.create_parents = true;
        request.min_free = run.env.budgets.min_free;
        building.emplace(ops.partfile_build(request));
    } else {
        building.emplace(sourcing.error());
    }
    Result<node::PartfileBuildResult>& built = *building;
    Status restarted = was_started ? src.qb().start({run.def.qb_id}) : Status();
    if (!built.ok()) {
        if (!restarted.ok()) run.log(fmt::format("archctl: warning: torrent {} on '{}' was not started again: {}", run.def.qb_id.substr(0, 12),
                                                 run.def.source, restarted.error().message));
        const Error& e = built.error();
        // The floor is a clean stop, not a verdict on the part file; an outage stays an outage.
        if (e.is(ErrorCode::DISK_INSUFFICIENT)) return StepResult::stopped(StopReason::disk, e.message);
        if (e.is(ErrorCode::PARTFILE_UNSUPPORTED)) return StepResult::failed(built.take_error());
        for (ErrorCode c : {ErrorCode::PARTFILE_INVALID, ErrorCode::SOURCE_CHANGED, ErrorCode::NOT_FOUND, ErrorCode::NOT_REGULAR,
                            ErrorCode::PATH_SYMLINK})
            if (e.is(c)) return StepResult::failed(partfile_unsupported(run, e.message));
        return StepResult::failed(built.take_error());
    }
    ARCHCTL_TRY_STATUS(restarted);
    ARCHCTL_TRY_STATUS(run.event("partfile_built", {{"pieces", run.def.boundary_pieces},
                                                    {"from_disk", sourcing->from_disk},
                                                    {"from_partfile", sourcing->from_partfile},
                                                    {"bytes", built->bytes},
                                                    {"xxh3", built->xxh3}}));
    return StepResult::ok();
}

// The delta as the source's disk has it: each file at its path there.
std::vector<node::FileEntry> source_entries(const std::vector<JobFile>& files) {
    std::vector<node::FileEntry> out;
    for (const auto& f : files) out.push_back({f.index, f.at_source(), f.size});
    return out;
}

}  // namespace

StepResult step_stage(JobRun& run) {
    if (run.ledger.staged) return StepResult::ok();
    auto src = run.source();
    if (!src.ok()) return StepResult::failed(src.take_error());
    auto transport = src.value()->ops();
    if (!transport.ok()) return StepResult::failed(transport.take_error());
    node::Ops ops(*transport.value());
    node::StageRequest request{.job_dir = job_dir(run.def.route.source_path, run.def.id),
                               .source_base = run.def.source_files_path(),
                               .files = source_entries(run.def.files),
                               .method = run.env.io.test.stage_method,
                               .verify_transit = run.def.verify_transit,
                               .budget_bytes = std::nullopt,
                               .aux = {node::StageAux::with_bytes(node::k_torrent_aux, run.metainfo)},
                               .min_free = run.env.budgets.min_free,
                               .layout = run.def.payload_layout};
    if (run.def.partfile == plan::PartfileNeed::carry_source) {
        StepResult carried = carry_partfile(run, *src.value(), ops);
        if (carried.kind != StepResult::next) return carried;
        request.aux.push_back(node::StageAux::already_present(node::k_partfile_aux));
    }
    // The target holds what this run's byte budget does not cover before anything is linked.
    // Without it (the target's Syncthing refused the patterns) the sync step still stops at the
    // budget, later by what Syncthing carried in between: a warning, not a stop.
    if (run.env.budgets.max_bytes)
        if (Status limited = limit_transfer(run, {}, true); !limited.ok())
            run.log(fmt::format("archctl: warning: {}; the run may move more than --max-bytes", limited.error().message));
    if (run.env.budgets.max_bytes) {
        std::uint64_t used = run.env.budgets.moved_before + run.session_bytes();
        request.budget_bytes = *run.env.budgets.max_bytes > used ? *run.env.budgets.max_bytes - used : 1;
    }
    StageSink sink(run, ops);
    sink.m_base = run.session.bytes_copied;
    auto r = ops.stage(std::move(request), std::ref(sink));
    if (!r.ok()) return StepResult::failed(r.take_error());
    const node::StageCounters& c = r.value().counters;
    run.session.bytes_linked += c.bytes_linked + c.bytes_reflinked;
    run.session.bytes_copied += c.bytes_copied;
    if (!r.value().complete) {
        ARCHCTL_TRY_STATUS(run.save());
        if (r.value().stopped == node::Stop::disk)
            return StepResult::stopped(StopReason::disk, fmt::format("stage stopped at the free-space floor on '{}': {} free, {} still to copy, floor {} (--min-free)",
                                                           run.def.source, format_size(r.value().free_bytes),
                                                           format_size(r.value().need_bytes), format_size(run.env.budgets.min_free)));
        if (auto stop = run.should_stop()) return *stop;
        const bool budget = r.value().stopped == node::Stop::budget;
        return StepResult::stopped(budget ? StopReason::budget : StopReason::interrupt,
                                   budget ? fmt::format("budget reached ({} copied this run)", format_size(run.session.bytes_copied))
                                                   : std::string(interrupt_text()));
    }
    run.ledger.staged = true;
    run.staged_here = true;
    ARCHCTL_TRY_STATUS(run.event(
        "staged", {{"bytes_linked", c.bytes_linked}, {"bytes_copied", c.bytes_copied}, {"manifest_xxh3", r.value().manifest_xxh3.value_or("")}}));
    run.log(fmt::format("archctl: staged {} files on {} ({} linked, {} copied)", run.def.files.size(), run.def.source,
                        format_size(c.bytes_linked), format_size(c.bytes_copied)));
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
