// Steps 4–5 of a job: verify (the commit point) and cleanup; and compensation before commit.

#include <thread>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/jobs/resolve.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs {
namespace {

namespace qb = clients::qbittorrent;

Result<qb::TorrentInfo> wait_listed(qb::Client& client, const std::string& id, std::chrono::seconds limit) {
    auto deadline = real_clock().steady() + limit;
    for (;;) {
        ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
        if (!infos.empty() && qb::parse_run_state(infos[0].state) != qb::RunState::checking) return infos[0];
        if (!infos.empty() && infos[0].state != "checkingResumeData") return infos[0];
        if (real_clock().steady() > deadline)
            return Error("QB_TIMEOUT", fmt::format("qBittorrent did not list torrent '{}' within {} s", id.substr(0, 12), limit.count()));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

// Recheck and wait for the result. A stopped torrent must never start downloading.
Result<std::vector<qb::TorrentFile>> recheck_and_wait(qb::Client& client, const std::string& id) {
    ARCHCTL_TRY_STATUS(client.recheck({id}));
    auto begun = real_clock().steady();
    bool saw_checking = false;
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
        if (infos.empty()) return Error("QB_GONE", fmt::format("torrent '{}' disappeared during its recheck", id.substr(0, 12)));
        qb::RunState s = infos[0].run_state;
        if (s == qb::RunState::downloading || s == qb::RunState::metadata)
            return Error("DOWNLOAD_ATTEMPT", fmt::format("qBittorrent tried to download torrent '{}' (state {})", id.substr(0, 12), infos[0].state),
                         "archctl never downloads; the job failed before commit");
        if (s == qb::RunState::checking) { saw_checking = true; continue; }
        bool settled = saw_checking || infos[0].progress >= 1.0 || real_clock().steady() - begun > std::chrono::seconds(4);
        if (s == qb::RunState::error) return Error("QB_ERROR", fmt::format("qBittorrent reports an error for '{}'", id.substr(0, 12)));
        if (settled && s == qb::RunState::stopped) return client.files(id);
        if (real_clock().steady() - begun > std::chrono::minutes(30))
            return Error("QB_TIMEOUT", fmt::format("the recheck of '{}' did not finish", id.substr(0, 12)));
    }
}

std::vector<std::uint32_t> to_vec(const torrent::Selection& s) { return s.indices(); }

}  // namespace

StepResult step_verify(JobRun& run) {
    auto dst = run.target();
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    qb::Client& tqb = dst.value()->qb();
    const std::string& id = run.def.qb_id;
    if (!run.ledger.committed) {
        if (run.def.new_target) {
            // The intent is durable before the add, so a crash right after the add is still
            // recognised as this job's torrent on the rerun.
            if (!run.ledger.target_added) {
                run.ledger.target_added = true;
                Status saved = run.save();
                if (!saved.ok()) return StepResult::failed(saved.take_error());
            }
            auto present = tqb.torrents({id});
            if (!present.ok()) return StepResult::failed(present.take_error());
            if (present.value().empty() && run.def.partfile == plan::PartfileNeed::carry_source) {
                // libtorrent reads the slot table when the torrent is added: the part file must be
                // in the save path before torrents/add (flow-facts §1.3).
                auto ops = dst.value()->ops();
                if (!ops.ok()) return StepResult::failed(ops.take_error());
                auto placed = node::call_operation(*ops.value(), "partfile_copy",
                                                   {{"from", job_dir(run.def.route.target_path, run.def.id) + "/a/partfile"},
                                                    {"to", run.def.target_save_path + "/." + id + ".parts"},
                                                    {"create_parents", true},
                                                    {"expect_pieces", run.def.piece_count},
                                                    {"expect_piece_size", run.def.piece_length},
                                                    {"allow_short_last_slot", true}});
                if (!placed.ok())
                    return StepResult::failed(Error("PARTFILE_UNSUPPORTED",
                                                    fmt::format("PARTFILE_UNSUPPORTED: job {}: cannot place the part file on '{}': {}",
                                                                run.def.id, run.def.target, placed.error().message)));
                (void)run.event("partfile_placed", {{"path", run.def.target_save_path + "/." + id + ".parts"}});
            }
            if (present.value().empty()) {
                qb::AddTorrent add;
                add.metainfo = run.metainfo;
                add.save_path = run.def.target_save_path;
                add.start = qb::AddStart::stopped;
                Status added = tqb.add(add);
                if (!added.ok()) return StepResult::failed(added.take_error());
                (void)run.event("target_added", {{"node", run.def.target}, {"save_path", run.def.target_save_path}});
                crash_point("verify.added");
            }
            auto listed = wait_listed(tqb, id, std::chrono::seconds(60));
            if (!listed.ok()) return StepResult::failed(listed.take_error());
            torrent::Selection skipped = run.def.union_set.complement(run.def.file_count);
            if (!skipped.empty()) {
                Status prio = tqb.set_file_priority(id, to_vec(skipped), qb::FilePriority::skip);
                if (!prio.ok()) return StepResult::failed(prio.take_error());
            }
        } else {
            if (!run.ledger.baseline_recorded) {
                auto infos = tqb.torrents({id});
                if (!infos.ok() || infos.value().empty())
                    return StepResult::failed(Error("STALE_STATE", fmt::format("the target placement on '{}' is gone", run.def.target)));
                run.ledger.target_baseline = {{"run_state", qb::to_string(infos.value()[0].run_state)},
                                              {"started", qb::is_started(infos.value()[0].run_state)},
                                              {"selected", run.def.baseline.to_string()}};
                run.ledger.baseline_recorded = true;
                (void)run.save();
                (void)run.event("baseline_recorded", run.ledger.target_baseline);
            }
            Status stopped = tqb.stop({id});
            if (!stopped.ok()) return StepResult::failed(stopped.take_error());
            Status prio = tqb.set_file_priority(id, to_vec(run.def.delta), qb::FilePriority::normal);
            if (!prio.ok()) return StepResult::failed(prio.take_error());
        }
        auto files = recheck_and_wait(tqb, id);
        if (!files.ok()) return StepResult::failed(files.take_error());
        std::vector<std::string> short_files;
        for (const auto& f : files.value())
            if (run.def.union_set.contains(f.index) && (f.priority == 0 || f.progress < 1.0))
                short_files.push_back(fmt::format("{} {} ({:.1f}%)", f.index, f.name, f.progress * 100));
        if (!short_files.empty())
            return StepResult::failed(Error("VERIFY_FAILED",
                                            fmt::format("the recheck on '{}' did not verify {} file(s): {}", run.def.target,
                                                        short_files.size(), fmt::join(short_files, "; ")),
                                            "nothing was committed; the target was restored"));
        Resource res;
        res.identity = run.def.identity;
        auto view = read_placement(*dst.value(), res);
        if (!view.ok() || !view.value()) return StepResult::failed(Error("STALE_STATE", "the target placement vanished after its recheck"));
        state::PlacementStore placements(run.state_dir);
        auto gen = placements.advance(run.def.aliases, run.def.target, fingerprint(*view.value()), run.def.id,
                                      {{"qb_id", id}, {"save_path", run.def.target_save_path}, {"union", run.def.union_set.to_string()}});
        if (!gen.ok()) return StepResult::failed(gen.take_error());
        run.ledger.committed = true;
        run.ledger.generation = gen.value();
        Status saved = run.save();
        if (!saved.ok()) return StepResult::failed(saved.take_error());
        (void)run.event("committed", {{"node", run.def.target}, {"generation", gen.value()}, {"union", run.def.union_set.to_string()}});
        crash_point("verify.committed");
        run.log(fmt::format("archctl: verified {} files on {} (generation {})", run.def.union_files.size(), run.def.target, gen.value()));
    }
    if (!run.ledger.started_target) {
        auto ops = dst.value()->ops();
        if (!ops.ok()) return StepResult::failed(ops.take_error());
        nlohmann::json paths = nlohmann::json::array();
        for (const auto& f : run.def.union_files) paths.push_back(f.path);
        auto chmod = node::call_operation(*ops.value(), "chmod_readable", {{"base", run.def.target_save_path}, {"paths", paths}});
        if (!chmod.ok()) return StepResult::failed(chmod.take_error());
        bool start = run.def.new_target || run.ledger.target_baseline.value("started", false);
        if (start) {
            Status s = tqb.start({id});
            if (!s.ok()) return StepResult::failed(s.take_error());
        }
        run.ledger.started_target = true;
        (void)run.save();
        (void)run.event(start ? "target_started" : "target_restored");
    }
    return StepResult::ok();
}

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
    run.ledger.cleaned = true;
    (void)run.event("cleaned");
    return StepResult::ok();
}

Status compensate(JobRun& run, const Error& why) {
    (void)run.event("compensating", {{"reason", why.message}});
    auto dst = run.target();
    if (!dst.ok()) return dst.take_error();
    qb::Client& tqb = dst.value()->qb();
    if (run.def.new_target && run.ledger.target_added) {
        ARCHCTL_TRY_STATUS(tqb.remove({run.def.qb_id}, qb::DeleteData::no));
        run.ledger.target_added = false;
    } else if (!run.def.new_target && run.ledger.baseline_recorded) {
        ARCHCTL_TRY_STATUS(tqb.set_file_priority(run.def.qb_id, to_vec(run.def.delta), qb::FilePriority::skip));
        if (run.ledger.target_baseline.value("started", false)) ARCHCTL_TRY_STATUS(tqb.start({run.def.qb_id}));
    }
    if (run.ledger.merged) {
        ARCHCTL_TRY_ASSIGN(node::Transport * ops, dst.value()->ops());
        ARCHCTL_TRY_STATUS(node::call_operation(*ops, "unmerge",
                                                {{"job_dir", job_dir(run.def.route.target_path, run.def.id)},
                                                 {"save_path", run.def.target_save_path},
                                                 {"provenance", run.ledger.merge_provenance}})
                               .ok()
                               ? Status()
                               : Status(Error("UNMERGE_FAILED", "cannot remove the files this job placed")));
        run.ledger.merged = false;
    }
    StepResult c = step_cleanup(run);
    if (c.kind == StepResult::fail) return c.error;
    (void)run.event("compensated");
    return {};
}

}  // namespace archctl::jobs
