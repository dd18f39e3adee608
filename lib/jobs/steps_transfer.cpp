// Steps 1–3 of a job: preflight, stage (source), sync (Syncthing), merge (target).

#include <cstdlib>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/jobs/resolve.hpp"

namespace archctl::jobs {
namespace {

nlohmann::json files_arg(const std::vector<JobFile>& files) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : files) a.push_back({{"index", f.index}, {"path", f.path}, {"size", f.size}});
    return a;
}

Error stale(const std::string& what, const JobRun& run) {
    return Error("STALE_STATE", fmt::format("{} changed since job {} was created", what, run.def.id),
                 "archctl never adapts silently to external changes; the job was stopped and compensated");
}

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

}  // namespace

StepResult step_preflight(JobRun& run) {
    if (run.ledger.committed) return StepResult::ok();  // only cleanup remains
    auto src = run.source();
    if (!src.ok()) return StepResult::failed(src.take_error());
    Resource res;
    res.identity = run.def.identity;
    res.name = run.def.name;
    auto view = read_placement(*src.value(), res);
    if (!view.ok()) return StepResult::failed(view.take_error());
    if (!view.value()) return StepResult::failed(stale(fmt::format("the source torrent on '{}' is gone: it", run.def.source), run));
    if (fingerprint(*view.value()) != run.def.source_fingerprint)
        return StepResult::failed(stale(fmt::format("the source placement on '{}'", run.def.source), run));
    if (run.metainfo.empty()) {
        auto exported = src.value()->qb().export_torrent(run.def.qb_id);
        if (!exported.ok()) return StepResult::failed(exported.take_error());
        run.metainfo = exported.value();
    }
    auto dst = run.target();
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    auto tview = read_placement(*dst.value(), res);
    if (!tview.ok()) return StepResult::failed(tview.take_error());
    if (run.def.new_target && tview.value() && !run.ledger.target_added)
        return StepResult::failed(stale(fmt::format("the target '{}' (it now has the torrent)", run.def.target), run));
    if (!run.def.new_target && !run.ledger.baseline_recorded) {
        if (!tview.value()) return StepResult::failed(stale(fmt::format("the target placement on '{}' is gone: it", run.def.target), run));
        if (fingerprint(*tview.value()) != run.def.target_fingerprint)
            return StepResult::failed(stale(fmt::format("the target placement on '{}'", run.def.target), run));
    }
    return StepResult::ok();
}

namespace {

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
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // qB flushes the part file on stop
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
    if (const char* forced = std::getenv("ARCHCTL_TEST_STAGE_METHOD"); forced && *forced) args["method"] = forced;
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

namespace {

// Names (relative to the route folder) that must be in the target's index before merge.
std::vector<std::string> job_names(const JobRun& run) {
    std::vector<std::string> names;
    for (const auto& f : run.def.files) names.push_back(fmt::format("{}/p/{}", run.def.id, f.index));
    names.push_back(run.def.id + "/a/resource.torrent");
    if (run.def.partfile == plan::PartfileNeed::carry_source) names.push_back(run.def.id + "/a/partfile");
    names.push_back(run.def.id + "/manifest.json");
    names.push_back(run.def.id + "/READY");
    return names;
}

}  // namespace

StepResult step_sync(JobRun& run) {
    if (run.ledger.synced) return StepResult::ok();
    auto src = run.source();
    auto dst = run.target();
    if (!src.ok()) return StepResult::failed(src.take_error());
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    // Ask the sender to scan the job prefix now instead of waiting for its watcher.
    Status scanned = src.value()->st().scan(run.def.route.id, {run.def.id});
    if (!scanned.ok()) return StepResult::failed(scanned.take_error());
    auto ops = dst.value()->ops();
    if (!ops.ok()) return StepResult::failed(ops.take_error());
    std::vector<std::string> names = job_names(run);
    std::uint64_t total = static_cast<std::uint64_t>(run.def.delta_bytes);
    std::uint64_t seen_at_start = run.ledger.bytes_present;
    auto last_floor_probe = real_clock().steady() - std::chrono::seconds(10);
    for (;;) {
        nlohmann::json indexed = nlohmann::json::array();
        for (const auto& n : names) {
            auto rec = dst.value()->st().file(run.def.route.id, n);
            if (!rec.ok()) return StepResult::failed(rec.take_error());
            if (rec.value() && rec.value()->local_is_current()) indexed.push_back(n.substr(run.def.id.size() + 1));
        }
        auto check = node::call_operation(*ops.value(), "receive_check",
                                          {{"job_dir", job_dir(run.def.route.target_path, run.def.id)},
                                           {"files", files_arg(run.def.files)},
                                           {"indexed", indexed}, {"verify_transit", run.def.verify_transit}});
        if (!check.ok()) return StepResult::failed(check.take_error());
        std::uint64_t present = check.value().value("bytes_present", std::uint64_t{0});
        if (present > run.ledger.bytes_present) {
            run.session.bytes_synced += present - std::max(run.ledger.bytes_present, seen_at_start);
            seen_at_start = present;
            run.ledger.bytes_present = present;
        }
        std::uint64_t files_done = check.value().value("files_present", std::uint64_t{0});
        run.progress("sync", 2, present, total, files_done, "");
        for (const auto& f : check.value().value("files", nlohmann::json::array()))
            if (f.value("state", "") == "mismatch")
                return StepResult::failed(Error("TRANSIT_MISMATCH", fmt::format("received file '{}' of job {} does not match the manifest{}",
                                                                                f.value("name", ""), run.def.id,
                                                                                f.contains("detail") ? ": " + f.value("detail", "") : "")));
        if (check.value().value("complete", false) && indexed.size() == names.size()) break;
        if (run.budgets.no_wait) return StepResult::stopped("waiting", "still waiting on Syncthing (--no-wait)");
        if (auto stop = run.should_stop()) return *stop;
        if (run.budgets.min_free && real_clock().steady() - last_floor_probe >= std::chrono::seconds(2)) {
            last_floor_probe = real_clock().steady();
            auto info = node::call_operation(*ops.value(), "info");
            if (info.ok())
                for (const auto& root : info.value().value("roots", nlohmann::json::array()))
                    if (run.def.route.target_path.rfind(root.value("path", ""), 0) == 0 &&
                        root.value("free_bytes", std::uint64_t{0}) < run.budgets.min_free)
                        return StepResult::stopped("disk", fmt::format("destination free space fell below the floor ({} free < {} floor)",
                                                                       format_size(root.value("free_bytes", std::uint64_t{0})),
                                                                       format_size(run.budgets.min_free)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    run.ledger.synced = true;
    (void)run.event("synced", {{"bytes", run.ledger.bytes_present}});
    return StepResult::ok();
}

StepResult step_merge(JobRun& run) {
    if (run.ledger.merged) return StepResult::ok();
    auto dst = run.target();
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    auto ops = dst.value()->ops();
    if (!ops.ok()) return StepResult::failed(ops.take_error());
    auto r = node::call_operation(*ops.value(), "merge",
                                  {{"job_dir", job_dir(run.def.route.target_path, run.def.id)},
                                   {"save_path", run.def.target_save_path}, {"files", files_arg(run.def.files)}});
    if (!r.ok()) return StepResult::failed(r.take_error());
    run.ledger.merged = true;
    run.ledger.merge_provenance = r.value().value("provenance", nlohmann::json::array());
    (void)run.event("merged", {{"provenance", run.ledger.merge_provenance}});
    return StepResult::ok();
}

}  // namespace archctl::jobs
