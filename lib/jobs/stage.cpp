// Step 1, stage: the delta files and the job's auxiliary data in the route folder on the source node.

#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/job_run.hpp"

namespace archctl::jobs {
namespace {

// Budget enforcement while a node operation runs: count copied bytes, cancel at the cap.
class StageSink final : public node::ProgressSink {
public:
    StageSink(JobRun& run, node::Transport& t) : m_run(run), m_t(t) {}
    void on_progress(const node::Progress& p) override {
        m_copied = p.bytes_copied;
        m_run.progress("stage", 1, p.bytes, p.bytes_total, p.files, p.current);
        std::uint64_t before = m_run.session.bytes_copied;
        m_run.session.bytes_copied = m_base + m_copied;
        if (m_run.should_stop()) m_t.cancel();
        m_run.session.bytes_copied = before;
    }
    std::uint64_t m_base = 0, m_copied = 0;

private:
    JobRun& m_run;
    node::Transport& m_t;
};

Error partfile_unsupported(const JobRun& run, const std::string& why) {
    return Error("PARTFILE_UNSUPPORTED", fmt::format("PARTFILE_UNSUPPORTED: job {}: {}", run.def.id, why),
                 "the pieces shared by selected and skipped files cannot be verified without it; nothing was committed");
}

// Copy the source's libtorrent part file into the job (DESIGN.md §9): read only while the
// source torrent is stopped, then restore its run state. The header must match the torrent
// and hold every boundary piece the target union needs.
StepResult carry_partfile(JobRun& run, NodeHandle& src, node::Transport& ops) {
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
    auto copied = node::call_operation(ops, "partfile_copy",
                                       {{"from", run.def.source_save_path + "/." + run.def.qb_id + ".parts"},
                                        {"to", job_dir(run.def.route.source_path, run.def.id) + "/a/partfile"},
                                        {"create_parents", true},
                                        {"replace", true},
                                        {"expect_pieces", run.def.piece_count},
                                        {"expect_piece_size", run.def.piece_length},
                                        {"allow_short_last_slot", true}});
    if (was_started) (void)src.qb().start({run.def.qb_id});
    if (!copied.ok()) return StepResult::failed(partfile_unsupported(run, copied.error().message));
    std::set<std::int64_t> have;
    for (const auto& s : copied.value().value("slots", nlohmann::json::array())) have.insert(s.value("piece", std::int64_t{-1}));
    std::vector<std::int64_t> missing;
    for (auto piece : run.def.boundary_pieces)
        if (!have.count(piece)) missing.push_back(piece);
    if (!missing.empty())
        return StepResult::failed(partfile_unsupported(run, fmt::format("the source part file does not hold boundary piece(s) {}",
                                                                        fmt::join(missing, ", "))));
    (void)run.event("partfile_carried", {{"pieces", run.def.boundary_pieces}});
    return StepResult::ok();
}

}  // namespace

StepResult step_stage(JobRun& run) {
    if (run.ledger.staged) return StepResult::ok();
    auto src = run.source();
    if (!src.ok()) return StepResult::failed(src.take_error());
    auto ops = src.value()->ops();
    if (!ops.ok()) return StepResult::failed(ops.take_error());
    nlohmann::json aux = nlohmann::json::array({{{"name", "resource.torrent"}, {"data_b64", base64_encode(run.metainfo)}}});
    if (run.def.partfile == plan::PartfileNeed::carry_source) {
        StepResult carried = carry_partfile(run, *src.value(), *ops.value());
        if (carried.kind != StepResult::next) return carried;
        aux.push_back({{"name", "partfile"}, {"present", true}});
    }
    nlohmann::json args = {{"job_dir", job_dir(run.def.route.source_path, run.def.id)},
                           {"source_base", run.def.source_save_path},
                           {"files", files_arg(run.def.files)},
                           {"verify_transit", run.def.verify_transit},
                           {"aux", aux}};
    if (!run.io.test.stage_method.empty()) args["method"] = run.io.test.stage_method;
    if (run.budgets.max_bytes) {
        std::uint64_t used = run.session_bytes();
        args["budget_bytes"] = *run.budgets.max_bytes > used ? *run.budgets.max_bytes - used : 1;
    }
    StageSink sink(run, *ops.value());
    sink.m_base = run.session.bytes_copied;
    auto r = node::call_operation(*ops.value(), "stage", args, &sink);
    if (!r.ok()) return StepResult::failed(r.take_error());
    const nlohmann::json& c = r.value();
    run.session.bytes_linked += c.value("bytes_linked", std::uint64_t{0}) + c.value("bytes_reflinked", std::uint64_t{0});
    run.session.bytes_copied += c.value("bytes_copied", std::uint64_t{0});
    if (!r.value().value("complete", false)) {
        (void)run.save();
        if (auto stop = run.should_stop()) return *stop;
        std::string why = r.value().value("stopped", "");
        return StepResult::stopped(why == "budget" ? "budget" : "interrupt",
                                   why == "budget" ? fmt::format("budget reached ({} copied this run)", format_size(run.session.bytes_copied))
                                                   : "interrupted (Ctrl-C)");
    }
    run.ledger.staged = true;
    (void)run.event("staged", {{"bytes_linked", c.value("bytes_linked", std::uint64_t{0})}, {"bytes_copied", c.value("bytes_copied", std::uint64_t{0})}, {"manifest_xxh3", r.value().value("manifest_xxh3", "")}});
    run.log(fmt::format("archctl: staged {} files on {} ({} linked, {} copied)", run.def.files.size(), run.def.source,
                        format_size(c.value("bytes_linked", std::uint64_t{0})), format_size(c.value("bytes_copied", std::uint64_t{0}))));
    return StepResult::ok();
}

}  // namespace archctl::jobs
