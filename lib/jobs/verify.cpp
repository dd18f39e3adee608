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
            return Error(ErrorCode::QB_TIMEOUT, fmt::format("qBittorrent did not list torrent '{}' within {} s", id.substr(0, 12), limit.count()));
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
        if (infos.empty()) return Error(ErrorCode::QB_GONE, fmt::format("torrent '{}' disappeared during its recheck", id.substr(0, 12)));
        qb::RunState s = infos[0].run_state;
        if (s == qb::RunState::downloading || s == qb::RunState::metadata)
            return Error(ErrorCode::DOWNLOAD_ATTEMPT, fmt::format("qBittorrent tried to download torrent '{}' (state {})", id.substr(0, 12), infos[0].state),
                         "archctl never downloads; the job failed before commit");
        if (s == qb::RunState::checking) { saw_checking = true; continue; }
        bool settled = saw_checking || infos[0].progress >= 1.0 || clock.steady() - begun > std::chrono::seconds(4);
        if (s == qb::RunState::error) return Error(ErrorCode::QB_ERROR, fmt::format("qBittorrent reports an error for '{}'", id.substr(0, 12)));
        if (settled && s == qb::RunState::stopped) return client.files(id);
        if (clock.steady() - begun > std::chrono::minutes(30))
            return Error(ErrorCode::QB_TIMEOUT, fmt::format("the recheck of '{}' did not finish", id.substr(0, 12)));
    }
}

namespace {

// New target: the torrent added stopped (after the part file it needs), its skipped files set to
// priority 0. The intent is durable before the add, so a crash right after it is still
// recognised as this job's torrent on the rerun; a torrent there this job did not add is
// someone else's and never adopted.
Status add_new_target(JobRun& run, NodeHandle& dst) {
    qb::Api& tqb = dst.qb();
    const std::string& id = run.def.qb_id;
    if (!run.ledger.target_added) {
        run.ledger.target_added = true;
        run.ledger.target_tag = job_tag(run.def.id);
        ARCHCTL_TRY_STATUS(run.save());
    }
    ARCHCTL_TRY_ASSIGN(auto present, tqb.torrents({id}));
    if (!present.empty() && target_owner(run.ledger, run.def.id, present[0].tags) != TargetOwner::this_job)
        return stale(fmt::format("the target '{}' (it now has the torrent, not added by this job)", run.def.target), run);
    if (present.empty() && run.def.partfile == plan::PartfileNeed::carry_source) {
        // libtorrent reads the slot table when the torrent is added: the part file must be in the
        // save path before torrents/add (flow-facts §1.3).
        ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
        std::string partfile = run.def.target_save_path + "/" + torrent::partfile_name(id);
        auto placed = node::Ops(*transport).partfile_copy(
            {.from = job_dir(run.def.route.target_path, run.def.id) + "/" + node::aux_path(node::k_partfile_aux),
             .to = partfile,
             .create_parents = true,
             .replace = false,
             .check = node::qb_partfile_check(run.def.piece_count, run.def.piece_length),
             .min_free = run.env.budgets.min_free});
        // The floor and an outage are stops, not a verdict on the part file.
        if (!placed.ok() && (placed.error().is(ErrorCode::DISK_INSUFFICIENT) || is_outage(placed.error()))) return placed.take_error();
        if (!placed.ok())
            return Error(ErrorCode::PARTFILE_UNSUPPORTED, fmt::format("PARTFILE_UNSUPPORTED: job {}: cannot place the part file on '{}': {}",
                                                                      run.def.id, run.def.target, placed.error().message));
        ARCHCTL_TRY_STATUS(run.event("partfile_placed", {{"path", partfile}}));
    }
    if (present.empty()) {
        qb::AddTorrent add;
        add.metainfo = run.metainfo;
        add.save_path = run.def.target_save_path;
        add.start = qb::AddStart::stopped;
        if (!run.ledger.target_tag.empty()) add.tags = {run.ledger.target_tag};
        ARCHCTL_TRY_STATUS(tqb.add(add));
        ARCHCTL_TRY_STATUS(
            run.event("target_added", {{"node", run.def.target}, {"save_path", run.def.target_save_path}, {"tag", run.ledger.target_tag}}));
        crash_point("verify.added");
    }
    ARCHCTL_TRY_STATUS(wait_listed(run.clock(), tqb, id, std::chrono::seconds(60)));
    torrent::Selection skipped = run.def.union_set.complement(run.def.file_count);
    if (!skipped.empty()) ARCHCTL_TRY_STATUS(tqb.set_file_priority(id, skipped.indices(), qb::FilePriority::skip));
    return {};
}

// Existing target: its baseline recorded, then stopped with the delta selected. The intent is
// durable before the first change, so a rerun after a crash knows the target differs from its
// plan because of this job.
Status touch_existing_target(JobRun& run, qb::Api& tqb) {
    ARCHCTL_TRY_STATUS(record_baseline(run));
    if (!run.ledger.target_touched) {
        run.ledger.target_touched = true;
        ARCHCTL_TRY_STATUS(run.save());
        ARCHCTL_TRY_STATUS(run.event("target_touched", {{"node", run.def.target}}));
    }
    ARCHCTL_TRY_STATUS(tqb.stop({run.def.qb_id}));
    return tqb.set_file_priority(run.def.qb_id, run.def.delta.indices(), qb::FilePriority::normal);
}

// ", a pre-existing file merge kept: its bytes are not the torrent's" for a delta file that was
// on the target before the job (merge provenance "preexisting"), else "".
std::string preexisting_note(const JobRun& run, std::uint32_t index) {
    for (const auto& p : run.ledger.merge_provenance)
        if (p.value("index", std::uint32_t{0}) == index && p.value("provenance", "") == "preexisting")
            return ", a pre-existing file on the target that merge kept: its bytes are not the torrent's";
    return "";
}

// Every file of the union selected and at 100% after the recheck.
Status check_verified(const JobRun& run, const std::vector<qb::TorrentFile>& files) {
    std::vector<std::string> short_files;
    for (const auto& f : files)
        if (run.def.union_set.contains(f.index) && (f.priority == 0 || f.progress < 1.0))
            short_files.push_back(fmt::format("{} {} ({:.1f}%{})", f.index, f.name, f.progress * 100, preexisting_note(run, f.index)));
    if (short_files.empty()) return {};
    return Error(ErrorCode::VERIFY_FAILED,
                 fmt::format("the recheck on '{}' did not verify {} file(s): {}", run.def.target, short_files.size(), fmt::join(short_files, "; ")),
                 "nothing was committed; the target was restored");
}

// The commit: a new placement generation with each verified file as the disk shows it now
// (device, inode, size, mtime) — evict later counts an archive file only while a fresh stat
// still shows this.
Status commit(JobRun& run, NodeHandle& dst) {
    Resource res;
    res.identity = run.def.identity;
    auto view = read_placement(dst, res);
    if (!view.ok() || !view.value()) return Error(ErrorCode::STALE_STATE, "the target placement vanished after its recheck");
    ARCHCTL_TRY_ASSIGN(auto stamps, committed_stamps(run, dst));
    state::PlacementStore placements(run.env.state_dir);
    ARCHCTL_TRY_ASSIGN(std::uint64_t gen, placements.advance(run.def.aliases, run.def.target, fingerprint(*view.value()), run.def.id,
                                                             {{"qb_id", run.def.qb_id},
                                                              {"save_path", run.def.target_save_path},
                                                              {"union", run.def.union_set.to_string()},
                                                              {"stamps", plan::stamps_to_json(stamps)}}));
    run.ledger.committed = true;
    run.ledger.generation = gen;
    ARCHCTL_TRY_STATUS(run.save());
    ARCHCTL_TRY_STATUS(run.event("committed", {{"node", run.def.target}, {"generation", gen}, {"union", run.def.union_set.to_string()}}));
    crash_point("verify.committed");
    run.log(fmt::format("archctl: verified {} files on {} (generation {})", run.def.union_files.size(), run.def.target, gen));
    return {};
}

// After the commit: the files readable, the add's tag dropped (its proof of ownership has served
// its purpose), and the torrent started when it is new or was running before.
Status start_target(JobRun& run, NodeHandle& dst) {
    qb::Api& tqb = dst.qb();
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::ChmodReadableRequest readable{.base = run.def.target_save_path, .paths = {}};
    for (const auto& f : run.def.union_files) readable.paths.push_back(f.path);
    ARCHCTL_TRY_STATUS(node::Ops(*transport).chmod_readable(readable));
    if (!run.ledger.target_tag.empty()) ARCHCTL_TRY_STATUS(tqb.delete_tags({run.ledger.target_tag}));
    bool start = run.def.new_target || run.ledger.target_baseline.value("started", false);
    if (start) ARCHCTL_TRY_STATUS(tqb.start({run.def.qb_id}));
    run.ledger.started_target = true;
    ARCHCTL_TRY_STATUS(run.save());
    return run.event(start ? "target_started" : "target_restored");
}

}  // namespace

StepResult step_verify(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    if (!run.ledger.committed) {
        if (run.def.new_target) {
            Status added = add_new_target(run, *dst);
            if (!added.ok() && added.error().is(ErrorCode::DISK_INSUFFICIENT))
                return StepResult::stopped("disk", fmt::format("the part file does not fit on '{}' above the floor: {}", run.def.target,
                                                               added.error().message));
            ARCHCTL_TRY_STATUS(std::move(added));
        }
        if (!run.def.new_target) ARCHCTL_TRY_STATUS(touch_existing_target(run, dst->qb()));
        ARCHCTL_TRY_ASSIGN(auto files, recheck_and_wait(run.clock(), dst->qb(), run.def.qb_id));
        ARCHCTL_TRY_STATUS(check_verified(run, files));
        // The source is checked once more right before the commit; after it, a change there no
        // longer undoes anything.
        ARCHCTL_TRY_STATUS(check_source(run));
        ARCHCTL_TRY_STATUS(commit(run, *dst));
    }
    if (!run.ledger.started_target) ARCHCTL_TRY_STATUS(start_target(run, *dst));
    return StepResult::ok();
}

}  // namespace archctl::jobs
