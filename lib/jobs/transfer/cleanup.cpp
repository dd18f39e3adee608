// Step 5, cleanup: remove the job's staging on both nodes (docs/design.md "Step 5: cleanup"). Right before each
// node's cleanup, the paths that node's torrents reference below the job directory are read
// fresh: a staged file some torrent uses is kept (lib/node/server/keep_rule.hpp) and recorded.

#include <chrono>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs::transfer {
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
    ARCHCTL_TRY_ASSIGN(auto disk, evidence::stat_files(*src, run.def.source_files_path(), files, run.def.file_count));
    std::vector<std::uint32_t> restamped;
    for (const auto& f : files) {
        plan::FileStamp& was = stamps->at(f.index);
        const plan::DiskFile& now = disk[f.index];
        if (now.on_disk != plan::OnDisk::file || now.stamp.ctime_ns == was.ctime_ns) continue;
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

// The far side changed source inodes through the staged links (a `touch` on its copy of a staged
// file travels back as a metadata change) and cleanup put the stage's stamps back: said on the log
// and as a `source_restored` event, with the first files by name.
Status record_restored(JobRun& run, const node::CleanupResult& r) {
    if (!r.replaced.empty())
        run.log(fmt::format("archctl: job {}: {} source file{} on '{}' no longer the inode the stage linked (first: {}); left as {}", run.def.id,
                            r.replaced.size(), r.replaced.size() == 1 ? " is" : "s are", run.def.source, r.replaced.front(),
                            r.replaced.size() == 1 ? "it is" : "they are"));
    if (r.restored.empty()) return {};
    constexpr std::size_t k_listed = 100;
    nlohmann::json files = nlohmann::json::array();
    for (std::size_t i = 0; i < r.restored.size() && i < k_listed; ++i) files.push_back(r.restored[i]);
    run.log(fmt::format("archctl: job {}: the far side of route {} changed the metadata of {} source file{} on '{}' through the staged "
                        "links (first: {}); restored",
                        run.def.id, run.def.route.id, r.restored.size(), r.restored.size() == 1 ? "" : "s", run.def.source,
                        r.restored.front().path));
    return run.event("source_restored", {{"node", run.def.source}, {"count", r.restored.size()}, {"files", files}});
}

}  // namespace

// Syncthing may bring an emptied staging directory back for a moment: a pull of the job that was
// under way when cleanup removed the files makes their parent directory again. Both sides scan
// the job's prefix now (the deletions are indexed at once, not after the watcher's delay), and a
// job directory that is still or again there is cleaned again — the job's own names and
// Syncthing's temp files of them, never anything else — for a few seconds at most.
Status settle_staging(JobRun& run) {
    constexpr int k_rounds = 8;
    constexpr auto k_pause = std::chrono::milliseconds(750);
    const std::pair<std::string, std::string> sides[] = {{run.def.source, run.def.route.source_path}, {run.def.target, run.def.route.target_path}};
    for (int round = 0; round < k_rounds; ++round) {
        bool left = false;
        for (const auto& [node_name, folder] : sides) {
            ARCHCTL_TRY_ASSIGN(NodeHandle * node, run.env.nodes.get(node_name));
            (void)node->st().scan(run.def.route.id, {run.def.id});
            ARCHCTL_TRY_ASSIGN(node::Transport * transport, node->ops());
            node::Ops ops(*transport);
            const std::string dir = job_dir(folder, run.def.id);
            ARCHCTL_TRY_ASSIGN(auto tree, ops.tree({.base = folder, .paths = {run.def.id}}));
            if (tree.entries.empty() || tree.entries[0].type == node::EntryType::absent) continue;
            if (tree.entries[0].type != node::EntryType::dir) continue;  // not archctl's to remove; the cleanup said so
            left = true;
            // The referenced paths are read fresh, as for the first pass.
            ARCHCTL_TRY_ASSIGN(auto used, evidence::referenced_paths_below(*node, dir));
            node::CleanupRequest again{.job_dir = dir, .referenced = {}, .save_path = std::nullopt, .source_base = std::nullopt, .files = {}, .aux = {}};
            for (const auto& p : used.paths)
                if (evidence::path_at_or_below(p, dir)) again.referenced.push_back(p);
            for (const auto& f : run.def.files) again.files.push_back(f.index);
            again.aux = {node::k_torrent_aux, node::k_partfile_aux};
            ARCHCTL_TRY_STATUS(ops.cleanup(again));
        }
        if (!left) return {};
        run.clock().sleep_for(k_pause);
    }
    return {};
}

StepResult step_cleanup(JobRun& run) {
    if (run.ledger.cleaned) return StepResult::ok();
    nlohmann::json kept_all = nlohmann::json::array();
    for (auto [node_name, folder] : {std::pair{run.def.source, run.def.route.source_path}, std::pair{run.def.target, run.def.route.target_path}}) {
        auto node = run.env.nodes.get(node_name);
        if (!node.ok()) return StepResult::failed(node.take_error());
        auto transport = node.value()->ops();
        if (!transport.ok()) return StepResult::failed(transport.take_error());
        std::string dir = job_dir(folder, run.def.id);
        auto used = evidence::referenced_paths_below(*node.value(), dir);
        if (!used.ok()) return StepResult::failed(used.take_error());
        node::CleanupRequest request{.job_dir = dir, .referenced = {}, .save_path = std::nullopt, .source_base = std::nullopt, .files = {}, .aux = {}};
        for (const auto& p : used.value().paths)
            if (evidence::path_at_or_below(p, dir)) request.referenced.push_back(p);
        if (node_name == run.def.target) request.save_path = run.def.target_save_path;  // drops the merge record
        if (node_name == run.def.source) request.source_base = run.def.source_files_path();  // restores what came through the links
        for (const auto& f : run.def.files) request.files.push_back(f.index);
        request.aux = {node::k_torrent_aux, node::k_partfile_aux};
        auto r = node::Ops(*transport.value()).cleanup(request);
        if (!r.ok()) return StepResult::failed(r.take_error());
        if (node_name == run.def.source) ARCHCTL_TRY_STATUS(record_restored(run, r.value()));
        for (const auto& kept : r.value().kept) {
            nlohmann::json k = kept;
            // Files the keep rule kept; unknown content and directories are only reported.
            if (kept.code != node::KeptCode::none && kept.code != node::KeptCode::not_empty) run.note_kept(node_name, k, "cleanup");
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
    if (Status settled = settle_staging(run); !settled.ok())
        run.log(fmt::format("archctl: warning: job {}: staging directories may be left in route folder {}: {}", run.def.id,
                            run.def.route.id, settled.error().message));
    ARCHCTL_TRY_STATUS(restamp_source(run));
    run.ledger.cleaned = true;
    ARCHCTL_TRY_STATUS(run.event("cleaned", {{"kept", kept_all}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
