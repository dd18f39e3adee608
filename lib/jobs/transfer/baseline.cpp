// The baseline of an existing target (docs/design.md "Step 4: verify"): what the target was before this job
// touched it, recorded durably before merge, and restored by compensation before the commit.

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "lib/base/hash.hpp"
#include "lib/base/json_member.hpp"
#include "lib/clients/qbittorrent/maindata.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/torrent/partfile.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::jobs::transfer {
namespace {

namespace qb = clients::qbittorrent;

using torrent::sha256_hex;

std::string partfile_path(const JobDefinition& def) { return def.target_save_path + "/" + torrent::partfile_name(def.qb_id); }

// The files the target already holds (baseline selection) as node paths below the save path.
std::vector<std::string> baseline_paths(const JobDefinition& def) {
    std::vector<std::string> paths;
    for (const auto& f : def.union_files)
        if (def.baseline.contains(f.index)) paths.push_back(f.at_target());
    return paths;
}

// Digest of the target's content as qBittorrent and the disk show it: per-file size, progress
// and priority, and each baseline file's type, size, inode and mtime.
Result<std::string> content_digest(NodeHandle& dst, const JobDefinition& def, const std::vector<qb::TorrentFile>& files) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    const node::TreeColumnsRequest request{.tree = {.base = def.target_save_path, .paths = baseline_paths(def)},
                                           .columns = {"size", "ino", "mtime_ns"}};
    ARCHCTL_TRY_ASSIGN(auto tree, node::Ops(*transport).tree_columns(request));
    std::string facts;
    for (const auto& f : files) facts += fmt::format("{} {} {:.6f} {}\n", f.index, f.size, f.progress, f.priority);
    for (std::size_t i = 0; i < tree.entries.size(); ++i) {
        const node::TreeEntry& e = tree.entries[i];
        node::EntryStat st = e.stat.value_or(node::EntryStat{});
        facts += fmt::format("{} {} {} {} {}\n", request.tree.paths[i], node::to_string(e.type), st.size, st.ino, st.mtime_ns);
    }
    return sha256_hex(facts);
}

// Part file: present? size, xxh3, and a copy kept below the qB root outside the route folder.
Result<nlohmann::json> partfile_baseline(NodeHandle& dst, const JobDefinition& def) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::Ops ops(*transport);
    ARCHCTL_TRY_ASSIGN(auto tree, ops.tree({.base = def.target_save_path, .paths = {torrent::partfile_name(def.qb_id)}}));
    if (tree.entries.empty() || tree.entries[0].type != node::EntryType::file) return nlohmann::json{{"present", false}};
    std::string copy = fmt::format("{}/.archctl/baseline-{}.parts", dst.config().qb_root, def.id);
    ARCHCTL_TRY_ASSIGN(auto copied, ops.partfile_copy({.from = partfile_path(def), .to = copy, .create_parents = true, .replace = true,
                                                       .check = node::qb_partfile_check()}));
    return nlohmann::json{{"present", true}, {"size", copied.header.file_size}, {"xxh3", copied.xxh3}, {"copy", copy}};
}

std::vector<std::string> tags_of(const nlohmann::json& j) {
    std::vector<std::string> out;
    for (const auto& t : j.value("tags", nlohmann::json::array())) out.push_back(t.get<std::string>());
    return out;
}

}  // namespace

Status record_baseline(JobRun& run) {
    if (run.def.new_target || run.ledger.baseline_recorded) return {};
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    qb::Api& tqb = dst->qb();
    const std::string& id = run.def.qb_id;
    ARCHCTL_TRY_ASSIGN(auto infos, tqb.torrents({id}));
    if (infos.empty()) return stale(fmt::format("the target placement on '{}' is gone: it", run.def.target), run);
    const qb::TorrentInfo& t = infos[0];
    ARCHCTL_TRY_ASSIGN(auto files, tqb.files(id));
    qb::MainData main;
    ARCHCTL_TRY_STATUS(tqb.sync(main));
    auto object = main.torrent_objects().find(id);
    std::string category;
    if (object != main.torrent_objects().end() && object->second.contains("category") && object->second["category"].is_string())
        category = object->second["category"].get<std::string>();
    nlohmann::json per_file = nlohmann::json::array(), priorities = nlohmann::json::array();
    for (const auto& f : files) {
        per_file.push_back({{"index", f.index}, {"size", f.size}, {"progress", f.progress}});
        priorities.push_back(f.priority);
    }
    ARCHCTL_TRY_ASSIGN(std::string content, content_digest(*dst, run.def, files));
    ARCHCTL_TRY_ASSIGN(nlohmann::json partfile, partfile_baseline(*dst, run.def));
    run.ledger.target_baseline = {{"qb_id", t.id},
                                  {"run_state", qb::to_string(t.run_state)},
                                  {"started", qb::is_started(t.run_state)},
                                  {"selected", torrent::Selection::of(qb::selected_files(files)).to_string()},
                                  {"priorities", priorities},
                                  {"files", per_file},
                                  {"content", content},
                                  {"save_path", t.save_path},
                                  {"category", category},
                                  {"tags", t.tags},
                                  {"auto_tmm", t.auto_tmm},
                                  {"partfile", partfile}};
    run.ledger.baseline_recorded = true;
    ARCHCTL_TRY_STATUS(run.save());
    return run.event("baseline_recorded", run.ledger.target_baseline);
}

namespace {

// Put the baseline part file back when it differs (or remove one the baseline did not have).
Status restore_partfile(JobRun& run, NodeHandle& dst) {
    const nlohmann::json pf = run.ledger.target_baseline.value("partfile", nlohmann::json::object());
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::Ops ops(*transport);
    if (pf.value("present", false)) {
        ARCHCTL_TRY_ASSIGN(auto placed, ops.partfile_copy({.from = pf.value("copy", ""), .to = partfile_path(run.def), .create_parents = false,
                                                           .replace = true, .check = node::qb_partfile_check()}));
        if (!placed.already) run.record("partfile_restored", {{"path", partfile_path(run.def)}});
        return {};
    }
    ARCHCTL_TRY_ASSIGN(auto removed, ops.unlink_owned({.paths = {{partfile_path(run.def), std::nullopt, std::nullopt}}, .referenced = {},
                                                       .stop_at = run.def.target_save_path}));
    if (!removed.removed.empty()) run.record("partfile_removed", {{"path", partfile_path(run.def)}});
    return {};
}

// Tags are never changed by archctl; put back any that differ anyway.
Status restore_tags(JobRun& run, qb::Api& tqb, const qb::TorrentInfo& now) {
    std::vector<std::string> want = tags_of(run.ledger.target_baseline), add, drop;
    for (const auto& t : want)
        if (std::find(now.tags.begin(), now.tags.end(), t) == now.tags.end()) add.push_back(t);
    for (const auto& t : now.tags)
        if (std::find(want.begin(), want.end(), t) == want.end()) drop.push_back(t);
    if (!add.empty()) ARCHCTL_TRY_STATUS(tqb.add_tags({run.def.qb_id}, add));
    if (!drop.empty()) ARCHCTL_TRY_STATUS(tqb.remove_tags({run.def.qb_id}, drop));
    return {};
}

// Every file's priority and progress as recorded; what differs, named.
std::vector<std::string> differences(const nlohmann::json& baseline, const std::vector<qb::TorrentFile>& files) {
    std::vector<std::string> out;
    const auto& per_file = member_or_empty(baseline, "files");
    const auto& priorities = member_or_empty(baseline, "priorities");
    for (const auto& f : files) {
        if (f.index >= per_file.size()) continue;
        double progress = per_file[f.index].value("progress", 0.0);
        int priority = priorities[f.index].get<int>();
        if ((priority > 0) != (f.priority > 0) || std::abs(progress - f.progress) > 1e-6)
            out.push_back(fmt::format("{} {} (priority {} → {}, progress {:.1f}% → {:.1f}%)", f.index, f.name, priority, f.priority,
                                      progress * 100, f.progress * 100));
    }
    return out;
}

}  // namespace

Status restore_baseline(JobRun& run) {
    if (run.def.new_target || !run.ledger.baseline_recorded || !run.ledger.target_baseline.is_object()) return {};
    const nlohmann::json& b = run.ledger.target_baseline;
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    qb::Api& tqb = dst->qb();
    const std::string& id = run.def.qb_id;
    ARCHCTL_TRY_ASSIGN(auto infos, tqb.torrents({id}));
    if (infos.empty()) return Error(ErrorCode::RESTORE_INCOMPLETE, fmt::format("cannot restore the target on '{}': its torrent is gone", run.def.target));
    if (run.ledger.target_touched) {
        // The files this job placed are gone (unmerge ran first), so a skipped file reads its
        // boundary bytes from the part file again, and the recheck finds what was there before.
        ARCHCTL_TRY_STATUS(tqb.stop({id}));
        std::vector<std::uint32_t> skip;
        const auto& priorities = member_or_empty(b, "priorities");
        for (std::uint32_t i : run.def.delta.indices())
            if (i < priorities.size() && priorities[i].get<int>() == 0) skip.push_back(i);
        if (!skip.empty()) ARCHCTL_TRY_STATUS(tqb.set_file_priority(id, skip, qb::FilePriority::skip));
        ARCHCTL_TRY_STATUS(restore_partfile(run, *dst));
        ARCHCTL_TRY_ASSIGN(auto files, recheck_and_wait(run.clock(), tqb, id));
        auto diff = differences(b, files);
        if (!diff.empty())
            return Error(ErrorCode::RESTORE_INCOMPLETE, fmt::format("the target on '{}' differs from its baseline after restoring: {}", run.def.target,
                                                           fmt::join(diff, "; ")));
    }
    ARCHCTL_TRY_STATUS(restore_tags(run, tqb, infos[0]));
    const bool started = b.value("started", false);
    if (started) ARCHCTL_TRY_STATUS(start_and_confirm(run, tqb));
    run.ledger.target_touched = false;
    run.record("baseline_restored", {{"node", run.def.target},
                                     {"run_state", b.value("run_state", "")},
                                     {"started", started},
                                     {"selection", b.value("selected", "")},
                                     {"partfile", b.value("partfile", nlohmann::json::object()).value("present", false)}});
    return {};
}

Status drop_baseline_copy(JobRun& run) {
    if (run.def.new_target || !run.ledger.baseline_recorded || !run.ledger.target_baseline.is_object()) return {};
    const nlohmann::json pf = run.ledger.target_baseline.value("partfile", nlohmann::json::object());
    if (!pf.value("present", false)) return {};
    std::string copy = pf.value("copy", "");
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, run.target());
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst->ops());
    std::string dir = copy.substr(0, copy.rfind('/'));
    ARCHCTL_TRY_STATUS(node::Ops(*transport).unlink_owned({.paths = {{copy, std::nullopt, std::nullopt}}, .referenced = {}, .stop_at = dir}));
    return {};
}

}  // namespace archctl::jobs::transfer
