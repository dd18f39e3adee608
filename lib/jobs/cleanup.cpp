// Step 5, cleanup: remove the job's staging on both nodes (DESIGN.md §5). Right before each
// node's cleanup, the paths that node's torrents reference below the job directory are read
// fresh: a staged file some torrent uses is kept (lib/node/keep_rule.hpp) and recorded.

#include "lib/base/crash_point.hpp"
#include "lib/jobs/archive_evidence.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/jobs/referenced.hpp"
#include "lib/node/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs {
namespace {

// Staging hard-linked the source's files into the route folder, and the links are gone now:
// each link and unlink changed the source inodes' ctime. Where archctl recorded stamps of the
// source placement at its own commit (an archive copy an unarchive staged from), each file this
// job staged gets its new ctime — only while the rest of its stamp (device, inode, size, mtime,
// birth time) is unchanged, and only after a commit: the target's recheck then read these very
// inodes' bytes through the links. Anything else keeps its old stamp, so evict proves it by a
// piece check.
Status restamp_source(JobRun& run) {
    if (!run.ledger.committed || run.def.files.empty()) return {};
    state::PlacementStore store(run.env.state_dir);
    std::optional<state::PlacementRecord> record;
    for (const auto& alias : run.def.aliases) {
        ARCHCTL_TRY_ASSIGN(record, store.get(alias, run.def.source));
        if (record) break;
    }
    if (!record) return {};
    auto stamps = plan::stamps_from_json(record->detail.value("stamps", nlohmann::json()));
    if (!stamps.ok() || stamps->empty()) return {};
    ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
    std::vector<plan::CoverageFile> files;
    for (const auto& f : run.def.files)
        if (stamps->count(f.index)) files.push_back({f.index, f.at_source(), f.size});
    if (files.empty()) return {};
    ARCHCTL_TRY_ASSIGN(auto disk, stat_files(*src, run.def.source_files_path(), files, run.def.file_count));
    std::vector<std::uint32_t> restamped;
    for (const auto& f : files) {
        plan::FileStamp& was = stamps->at(f.index);
        const plan::DiskFile& now = disk[f.index];
        if (now.type != "file" || now.stamp.ctime_ns == was.ctime_ns) continue;
        bool same = now.stamp.dev == was.dev && now.stamp.ino == was.ino && now.stamp.size == was.size &&
                    now.stamp.mtime_ns == was.mtime_ns && (was.btime_ns == 0 || now.stamp.btime_ns == was.btime_ns);
        if (!same || was.ctime_ns == 0) continue;
        was.ctime_ns = now.stamp.ctime_ns;
        restamped.push_back(f.index);
    }
    if (restamped.empty()) return {};
    nlohmann::json detail = record->detail;
    detail["stamps"] = plan::stamps_to_json(*stamps);
    ARCHCTL_TRY_STATUS(store.update_detail(run.def.aliases, run.def.source, record->generation, detail));
    return run.event("restamped", {{"node", run.def.source}, {"files", torrent::Selection::of(std::move(restamped)).to_string()}});
}

}  // namespace

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
    ARCHCTL_TRY_STATUS(restamp_source(run));
    run.ledger.cleaned = true;
    ARCHCTL_TRY_STATUS(run.event("cleaned", {{"kept", kept_all}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs
