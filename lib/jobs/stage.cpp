// Step 1, stage: the delta files and the job's auxiliary data in the route folder on the source node.

#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/node/job_layout.hpp"
#include "lib/node/ops.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs {
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

// Copy the source's libtorrent part file into the job (DESIGN.md §9): read only while the
// source torrent is stopped, then restore its run state. The header must match the torrent
// and hold every boundary piece the target union needs.
StepResult carry_partfile(JobRun& run, NodeHandle& src, node::Ops& ops) {
    namespace qb = clients::qbittorrent;
    auto infos = src.qb().torrents({run.def.qb_id});
    if (!infos.ok()) return StepResult::failed(infos.take_error());
    if (infos.value().empty()) return StepResult::failed(stale("the source torrent", run));
    bool was_started = qb::is_started(infos.value()[0].run_state);
    if (was_started) {
        Status s = src.qb().stop({run.def.qb_id});
        if (!s.ok()) return StepResult::failed(s.take_error());
        run.clock().sleep_for(std::chrono::milliseconds(1500));  // qB flushes the part file on stop
    }
    auto copied = ops.partfile_copy({.from = run.def.source_files_path() + "/" + torrent::partfile_name(run.def.qb_id),
                                     .to = job_dir(run.def.route.source_path, run.def.id) + "/" + node::aux_path(node::k_partfile_aux),
                                     .create_parents = true,
                                     .replace = true,
                                     .check = node::qb_partfile_check(run.def.piece_count, run.def.piece_length),
                                     .min_free = run.env.budgets.min_free});
    Status restarted = was_started ? src.qb().start({run.def.qb_id}) : Status();
    if (!copied.ok()) {
        if (!restarted.ok()) run.log(fmt::format("archctl: warning: torrent {} on '{}' was not started again: {}", run.def.qb_id.substr(0, 12),
                                                 run.def.source, restarted.error().message));
        // The floor is a clean stop, not a verdict on the part file.
        if (copied.error().is(ErrorCode::DISK_INSUFFICIENT)) return StepResult::stopped("disk", copied.error().message);
        return StepResult::failed(partfile_unsupported(run, copied.error().message));
    }
    ARCHCTL_TRY_STATUS(restarted);
    std::set<std::int64_t> have;
    for (const auto& s : copied.value().header.slots) have.insert(s.piece);
    std::vector<std::int64_t> missing;
    for (auto piece : run.def.boundary_pieces)
        if (!have.count(piece)) missing.push_back(piece);
    if (!missing.empty())
        return StepResult::failed(partfile_unsupported(run, fmt::format("the source part file does not hold boundary piece(s) {}",
                                                                        fmt::join(missing, ", "))));
    ARCHCTL_TRY_STATUS(run.event("partfile_carried", {{"pieces", run.def.boundary_pieces}}));
    return StepResult::ok();
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
                               .files = node::file_entries(run.def.files),
                               .method = run.env.io.test.stage_method,
                               .verify_transit = run.def.verify_transit,
                               .budget_bytes = std::nullopt,
                               .aux = {node::StageAux::with_bytes(node::k_torrent_aux, run.metainfo)},
                               .min_free = run.env.budgets.min_free};
    if (run.def.partfile == plan::PartfileNeed::carry_source) {
        StepResult carried = carry_partfile(run, *src.value(), ops);
        if (carried.kind != StepResult::next) return carried;
        request.aux.push_back(node::StageAux::already_present(node::k_partfile_aux));
    }
    if (run.env.budgets.max_bytes) {
        std::uint64_t used = run.session_bytes();
        request.budget_bytes = *run.env.budgets.max_bytes > used ? *run.env.budgets.max_bytes - used : 1;
    }
    StageSink sink(run, ops);
    sink.m_base = run.session.bytes_copied;
    auto r = ops.stage(request, std::ref(sink));
    if (!r.ok()) return StepResult::failed(r.take_error());
    const node::StageCounters& c = r.value().counters;
    run.session.bytes_linked += c.bytes_linked + c.bytes_reflinked;
    run.session.bytes_copied += c.bytes_copied;
    if (!r.value().complete) {
        ARCHCTL_TRY_STATUS(run.save());
        if (r.value().stopped == "disk")
            return StepResult::stopped("disk", fmt::format("stage stopped at the free-space floor on '{}': {} free, {} still to copy, floor {} (--min-free)",
                                                           run.def.source, format_size(r.value().free_bytes),
                                                           format_size(r.value().need_bytes), format_size(run.env.budgets.min_free)));
        if (auto stop = run.should_stop()) return *stop;
        std::string why = r.value().stopped;
        return StepResult::stopped(why == "budget" ? "budget" : "interrupt",
                                   why == "budget" ? fmt::format("budget reached ({} copied this run)", format_size(run.session.bytes_copied))
                                                   : "interrupted (Ctrl-C)");
    }
    run.ledger.staged = true;
    ARCHCTL_TRY_STATUS(run.event(
        "staged", {{"bytes_linked", c.bytes_linked}, {"bytes_copied", c.bytes_copied}, {"manifest_xxh3", r.value().manifest_xxh3.value_or("")}}));
    run.log(fmt::format("archctl: staged {} files on {} ({} linked, {} copied)", run.def.files.size(), run.def.source,
                        format_size(c.bytes_linked), format_size(c.bytes_copied)));
    return StepResult::ok();
}

}  // namespace archctl::jobs
