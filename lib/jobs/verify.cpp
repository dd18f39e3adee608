// Step 4, verify (the commit point): the target qBittorrent rechecks the union; success advances
// the placement generation.


#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/jobs/archive_evidence.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/jobs/resolve.hpp"
#include "lib/node/job_layout.hpp"
#include "lib/node/ops.hpp"
#include "lib/state/placements.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs {
namespace {

namespace qb = clients::qbittorrent;

Result<qb::TorrentInfo> wait_listed(Clock& clock, qb::Api& client, const std::string& id, std::chrono::seconds limit) {
    auto deadline = clock.steady() + limit;
    for (;;) {
        ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
        if (!infos.empty() && qb::parse_run_state(infos[0].state) != qb::RunState::checking) return infos[0];
        if (!infos.empty() && infos[0].state != "checkingResumeData") return infos[0];
        if (clock.steady() > deadline)
            return Error("QB_TIMEOUT", fmt::format("qBittorrent did not list torrent '{}' within {} s", id.substr(0, 12), limit.count()));
        clock.sleep_for(std::chrono::milliseconds(200));
    }
}

// The target's stat of every file of the union, right after its recheck verified them.
Result<std::map<std::uint32_t, plan::FileStamp>> committed_stamps(JobRun& run, NodeHandle& dst) {
    std::vector<plan::CoverageFile> files;
    for (const auto& f : run.def.union_files) files.push_back({f.index, f.path, f.size});
    ARCHCTL_TRY_ASSIGN(auto stats, stat_files(dst, run.def.target_save_path, files, run.def.file_count));
    return stamps_of(stats);
}

}  // namespace

// A stopped torrent must never start downloading.
Result<std::vector<qb::TorrentFile>> recheck_and_wait(Clock& clock, qb::Api& client, const std::string& id) {
    ARCHCTL_TRY_STATUS(client.recheck({id}));
    auto begun = clock.steady();
    bool saw_checking = false;
    for (;;) {
        clock.sleep_for(std::chrono::milliseconds(200));
        ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
        if (infos.empty()) return Error("QB_GONE", fmt::format("torrent '{}' disappeared during its recheck", id.substr(0, 12)));
        qb::RunState s = infos[0].run_state;
        if (s == qb::RunState::downloading || s == qb::RunState::metadata)
            return Error("DOWNLOAD_ATTEMPT", fmt::format("qBittorrent tried to download torrent '{}' (state {})", id.substr(0, 12), infos[0].state),
                         "archctl never downloads; the job failed before commit");
        if (s == qb::RunState::checking) { saw_checking = true; continue; }
        bool settled = saw_checking || infos[0].progress >= 1.0 || clock.steady() - begun > std::chrono::seconds(4);
        if (s == qb::RunState::error) return Error("QB_ERROR", fmt::format("qBittorrent reports an error for '{}'", id.substr(0, 12)));
        if (settled && s == qb::RunState::stopped) return client.files(id);
        if (clock.steady() - begun > std::chrono::minutes(30))
            return Error("QB_TIMEOUT", fmt::format("the recheck of '{}' did not finish", id.substr(0, 12)));
    }
}

StepResult step_verify(JobRun& run) {
    auto dst = run.target();
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    qb::Api& tqb = dst.value()->qb();
    const std::string& id = run.def.qb_id;
    if (!run.ledger.committed) {
        if (run.def.new_target) {
            // The intent is durable before the add, so a crash right after the add is still
            // recognised as this job's torrent on the rerun.
            if (!run.ledger.target_added) {
                run.ledger.target_added = true;
                run.ledger.target_tag = job_tag(run.def.id);
                Status saved = run.save();
                if (!saved.ok()) return StepResult::failed(saved.take_error());
            }
            auto present = tqb.torrents({id});
            if (!present.ok()) return StepResult::failed(present.take_error());
            // A torrent there that this job did not add is someone else's: never adopted.
            if (!present.value().empty() &&
                target_owner(run.ledger, run.def.id, present.value()[0].tags) != TargetOwner::this_job)
                return StepResult::failed(
                    stale(fmt::format("the target '{}' (it now has the torrent, not added by this job)", run.def.target), run));
            if (present.value().empty() && run.def.partfile == plan::PartfileNeed::carry_source) {
                // libtorrent reads the slot table when the torrent is added: the part file must be
                // in the save path before torrents/add (flow-facts §1.3).
                auto transport = dst.value()->ops();
                if (!transport.ok()) return StepResult::failed(transport.take_error());
                std::string partfile = run.def.target_save_path + "/" + torrent::partfile_name(id);
                auto placed = node::Ops(*transport.value())
                                  .partfile_copy({.from = job_dir(run.def.route.target_path, run.def.id) + "/" + node::aux_path(node::k_partfile_aux),
                                                  .to = partfile,
                                                  .create_parents = true,
                                                  .replace = false,
                                                  .check = node::qb_partfile_check(run.def.piece_count, run.def.piece_length)});
                if (!placed.ok())
                    return StepResult::failed(Error("PARTFILE_UNSUPPORTED",
                                                    fmt::format("PARTFILE_UNSUPPORTED: job {}: cannot place the part file on '{}': {}",
                                                                run.def.id, run.def.target, placed.error().message)));
                (void)run.event("partfile_placed", {{"path", partfile}});
            }
            if (present.value().empty()) {
                qb::AddTorrent add;
                add.metainfo = run.metainfo;
                add.save_path = run.def.target_save_path;
                add.start = qb::AddStart::stopped;
                if (!run.ledger.target_tag.empty()) add.tags = {run.ledger.target_tag};
                Status added = tqb.add(add);
                if (!added.ok()) return StepResult::failed(added.take_error());
                (void)run.event("target_added",
                                {{"node", run.def.target}, {"save_path", run.def.target_save_path}, {"tag", run.ledger.target_tag}});
                crash_point("verify.added");
            }
            auto listed = wait_listed(run.clock(), tqb, id, std::chrono::seconds(60));
            if (!listed.ok()) return StepResult::failed(listed.take_error());
            torrent::Selection skipped = run.def.union_set.complement(run.def.file_count);
            if (!skipped.empty()) {
                Status prio = tqb.set_file_priority(id, skipped.indices(), qb::FilePriority::skip);
                if (!prio.ok()) return StepResult::failed(prio.take_error());
            }
        } else {
            Status baseline = record_baseline(run);
            if (!baseline.ok()) return StepResult::failed(baseline.take_error());
            // The intent is durable before the first change, so a rerun after a crash knows the
            // target differs from its plan because of this job.
            if (!run.ledger.target_touched) {
                run.ledger.target_touched = true;
                Status saved = run.save();
                if (!saved.ok()) return StepResult::failed(saved.take_error());
                (void)run.event("target_touched", {{"node", run.def.target}});
            }
            Status stopped = tqb.stop({id});
            if (!stopped.ok()) return StepResult::failed(stopped.take_error());
            Status prio = tqb.set_file_priority(id, run.def.delta.indices(), qb::FilePriority::normal);
            if (!prio.ok()) return StepResult::failed(prio.take_error());
        }
        auto files = recheck_and_wait(run.clock(), tqb, id);
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
        // The source is checked once more right before the commit; after it, a change there
        // no longer undoes anything.
        Status source = check_source(run);
        if (!source.ok()) return StepResult::failed(source.take_error());
        Resource res;
        res.identity = run.def.identity;
        auto view = read_placement(*dst.value(), res);
        if (!view.ok() || !view.value()) return StepResult::failed(Error("STALE_STATE", "the target placement vanished after its recheck"));
        // The commit records each verified file as the disk shows it now (device, inode, size,
        // mtime): evict later counts an archive file only while a fresh stat still shows this.
        auto stamps = committed_stamps(run, *dst.value());
        if (!stamps.ok()) return StepResult::failed(stamps.take_error());
        state::PlacementStore placements(run.state_dir);
        auto gen = placements.advance(run.def.aliases, run.def.target, fingerprint(*view.value()), run.def.id,
                                      {{"qb_id", id},
                                       {"save_path", run.def.target_save_path},
                                       {"union", run.def.union_set.to_string()},
                                       {"stamps", plan::stamps_to_json(stamps.value())}});
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
        auto transport = dst.value()->ops();
        if (!transport.ok()) return StepResult::failed(transport.take_error());
        node::ChmodReadableRequest readable{.base = run.def.target_save_path, .paths = {}};
        for (const auto& f : run.def.union_files) readable.paths.push_back(f.path);
        auto chmod = node::Ops(*transport.value()).chmod_readable(readable);
        if (!chmod.ok()) return StepResult::failed(chmod.take_error());
        // The add's proof of ownership has served its purpose: the placement is committed.
        if (!run.ledger.target_tag.empty()) {
            Status untagged = tqb.delete_tags({run.ledger.target_tag});
            if (!untagged.ok()) return StepResult::failed(untagged.take_error());
        }
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

}  // namespace archctl::jobs
