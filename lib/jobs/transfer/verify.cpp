// Step 4, verify (the commit point): the target qBittorrent rechecks the union; success advances
// the placement generation.


#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/signals.hpp"
#include "lib/clients/qbittorrent/share_limits.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/state/placements.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs::transfer {
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
    for (const auto& f : run.def.union_files) files.push_back({f.index, f.at_target(), f.size});
    ARCHCTL_TRY_ASSIGN(auto stats, evidence::stat_files(dst, run.def.target_save_path, files, run.def.file_count));
    return evidence::stamps_of(stats);
}

}  // namespace

// Started, and seen started (job_run.hpp).
Status start_and_confirm(JobRun& run, qb::Api& tqb) {
    const std::string& id = run.def.qb_id;
    ARCHCTL_TRY_STATUS(tqb.start({id}));
    auto last_start = run.clock().steady();
    const auto deadline = last_start + std::chrono::seconds(15);
    for (;;) {
        ARCHCTL_TRY_ASSIGN(auto infos, tqb.torrents({id}));
        if (infos.empty() || qb::is_started(infos[0].run_state)) return {};
        auto now = run.clock().steady();
        if (now > deadline) {
            run.log(fmt::format("archctl: warning: qBittorrent on '{}' shows torrent {} {} after it was started; start it there",
                                run.def.target, id.substr(0, 12), infos[0].state));
            return {};
        }
        if (infos[0].run_state == qb::RunState::stopped && now - last_start > std::chrono::seconds(2)) {
            ARCHCTL_TRY_STATUS(tqb.start({id}));
            last_start = now;
        }
        run.clock().sleep_for(std::chrono::milliseconds(200));
    }
}

namespace {

// The source torrent's category and tags, read live from the source's qBittorrent (by the qB id
// the job uses, else by any alias: a v1-only source torrent has its own id).
Result<std::pair<std::string, std::vector<std::string>>> source_labels(JobRun& run) {
    ARCHCTL_TRY_ASSIGN(NodeHandle * src, run.source());
    ARCHCTL_TRY_ASSIGN(auto infos, src->qb().torrents({run.def.qb_id}));
    if (infos.empty()) {
        ARCHCTL_TRY_ASSIGN(auto all, src->qb().all_torrents());
        for (const auto& t : all)
            for (const auto& alias : run.def.aliases)
                if (t.infohash_v1 == alias || t.infohash_v2 == alias) {
                    infos.push_back(t);
                    break;
                }
    }
    if (infos.empty()) return std::pair<std::string, std::vector<std::string>>{};
    return std::pair{infos[0].category, infos[0].tags};
}

// The category and tags a new target gets: the source's, through the target node's labels
// setting (dropped, or the category mapped); the category is created on the target without a
// save path when it is missing, so automatic management never moves the files.
Result<std::pair<std::string, std::vector<std::string>>> target_labels(JobRun& run, NodeHandle& dst) {
    const config::NodeConfig& node = dst.config();
    if (node.labels == config::LabelsPolicy::drop) return std::pair<std::string, std::vector<std::string>>{};
    ARCHCTL_TRY_ASSIGN(auto labels, source_labels(run));
    auto& [category, tags] = labels;
    if (auto mapped = node.category_map.find(category); !category.empty() && mapped != node.category_map.end()) category = mapped->second;
    if (category.empty()) return labels;
    ARCHCTL_TRY_ASSIGN(auto categories, dst.qb().categories());
    bool exists = std::any_of(categories.begin(), categories.end(), [&](const auto& c) { return c.first == category; });
    if (!exists) {
        Status created = dst.qb().create_category(category, "");
        // Created in the meantime by someone else: it exists, which is all the add needs.
        if (!created.ok() && !created.error().is(ErrorCode::QB_CONFLICT)) return created.take_error();
        if (created.ok()) ARCHCTL_TRY_STATUS(run.event("category_created", {{"node", run.def.target}, {"category", category}}));
    }
    return labels;
}

// A torrent this job added keeps its own share limits of none (unless the target node leaves it
// to the global ones): qBittorrent's global limits would otherwise stop or remove the copy, with
// its files, once it seeds.
Status protect_from_share_limits(JobRun& run, NodeHandle& dst, const qb::TorrentInfo& listed) {
    if (dst.config().share_limits != config::ShareLimitsPolicy::none) return {};
    if (listed.ratio_limit != -1 || listed.seeding_time_limit != -1 || listed.inactive_seeding_time_limit != -1)
        ARCHCTL_TRY_STATUS(dst.qb().clear_share_limits({listed.id}));
    if (auto global = dst.share_limits(); global.ok() && global->any())
        run.log(fmt::format("archctl: {}'s global share limits ({}) do not apply to torrent {}: its own limits are none", run.def.target,
                            global->text(), listed.id.substr(0, 12)));
    return {};
}

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
        // save path before torrents/add (docs/torrent-format.md "A carried part file on a new target").
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
        add.layout = run.def.target_layout == torrent::ContentLayout::no_subfolder ? qb::ContentLayout::no_subfolder
                     : run.def.target_layout == torrent::ContentLayout::subfolder  ? qb::ContentLayout::subfolder
                                                                                   : qb::ContentLayout::original;
        if (!run.ledger.target_tag.empty()) add.tags = {run.ledger.target_tag};
        ARCHCTL_TRY_ASSIGN(auto labels, target_labels(run, dst));
        add.category = labels.first;
        for (const auto& tag : labels.second)
            if (std::find(add.tags.begin(), add.tags.end(), tag) == add.tags.end()) add.tags.push_back(tag);
        add.no_share_limits = dst.config().share_limits == config::ShareLimitsPolicy::none;
        ARCHCTL_TRY_STATUS(tqb.add(add));
        ARCHCTL_TRY_STATUS(run.event("target_added", {{"node", run.def.target},
                                                      {"save_path", run.def.target_save_path},
                                                      {"tag", run.ledger.target_tag},
                                                      {"category", labels.first},
                                                      {"tags", labels.second},
                                                      {"share_limits", add.no_share_limits ? "none" : "global"}}));
        crash_point("verify.added");
    }
    ARCHCTL_TRY_ASSIGN(auto listed, wait_listed(run.clock(), tqb, id, std::chrono::seconds(60)));
    return protect_from_share_limits(run, dst, listed);
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
    return tqb.stop({run.def.qb_id});
}

// The selection, set explicitly: every file of the union normal; on a new target every other
// file skipped (an existing target's other files keep the priorities its owner gave them).
// qBittorrent may have left a union file at 0 on add (its "Excluded file names"), so nothing is
// assumed from the add. Returns the union files this moved from 0 to selected while qBittorrent
// holds them incomplete: the ones it gives its incomplete name when that setting is on.
Result<std::vector<std::uint32_t>> select_union(JobRun& run, qb::Api& tqb) {
    const std::string& id = run.def.qb_id;
    ARCHCTL_TRY_ASSIGN(auto before, tqb.files(id));
    std::vector<std::uint32_t> newly;
    for (const auto& f : before)
        if (run.def.union_set.contains(f.index) && f.priority == 0 && f.progress < 1.0) newly.push_back(f.index);
    ARCHCTL_TRY_STATUS(tqb.set_file_priority(id, run.def.union_set.indices(), qb::FilePriority::normal));
    torrent::Selection skipped = run.def.union_set.complement(run.def.file_count);
    if (run.def.new_target && !skipped.empty()) ARCHCTL_TRY_STATUS(tqb.set_file_priority(id, skipped.indices(), qb::FilePriority::skip));
    return newly;
}

// The 'Excluded file names' pattern of qBittorrent's preferences that matches a component of
// `path` (qBittorrent compares patterns case-insensitively with file and folder names).
std::optional<std::string> excluded_pattern(const nlohmann::json& prefs, const std::string& path) {
    if (!prefs.is_object() || !prefs.value("excluded_file_names_enabled", false)) return std::nullopt;
    std::string patterns = prefs.value("excluded_file_names", std::string());
    std::vector<std::string> components;
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t slash = path.find('/', start);
        if (slash == std::string::npos) slash = path.size();
        components.push_back(path.substr(start, slash - start));
        start = slash + 1;
    }
    std::size_t start = 0;
    while (start <= patterns.size()) {
        std::size_t end = patterns.find('\n', start);
        if (end == std::string::npos) end = patterns.size();
        std::string pattern = patterns.substr(start, end - start);
        while (!pattern.empty() && (pattern.back() == '\r' || pattern.back() == ' ')) pattern.pop_back();
        while (!pattern.empty() && pattern.front() == ' ') pattern.erase(0, 1);
        if (!pattern.empty())
            for (const auto& c : components)
                if (::fnmatch(pattern.c_str(), c.c_str(), FNM_CASEFOLD) == 0) return pattern;
        start = end + 1;
    }
    return std::nullopt;
}

// Read back before the recheck: every union file selected and, on a new target, every other
// file skipped. A file qBittorrent keeps unselected is reported with its reason when its
// preferences give one.
Status check_selection(JobRun& run, qb::Api& tqb) {
    ARCHCTL_TRY_ASSIGN(auto files, tqb.files(run.def.qb_id));
    std::vector<const qb::TorrentFile*> unselected, selected_extra;
    for (const auto& f : files) {
        bool want = run.def.union_set.contains(f.index);
        if (want && f.priority == 0) unselected.push_back(&f);
        if (!want && run.def.new_target && f.priority > 0) selected_extra.push_back(&f);
    }
    if (!unselected.empty()) {
        nlohmann::json prefs = nlohmann::json::object();
        if (auto p = tqb.preferences(); p.ok()) prefs = p.value();
        const qb::TorrentFile& f = *unselected.front();
        std::string more = unselected.size() > 1 ? fmt::format(" (and {} more file(s))", unselected.size() - 1) : std::string();
        if (auto pattern = excluded_pattern(prefs, f.name))
            return Error(ErrorCode::VERIFY_FAILED,
                         fmt::format("qBittorrent on '{}' keeps file {} '{}' unselected: it matches its 'Excluded file names' pattern '{}'{}",
                                     run.def.target, f.index, f.name, *pattern, more),
                         "remove the pattern in qBittorrent (Options > Downloads > Excluded file names), or leave the file out with --files");
        return Error(ErrorCode::VERIFY_FAILED,
                     fmt::format("qBittorrent on '{}' keeps file {} '{}' unselected (priority 0) after archctl selected it{}", run.def.target,
                                 f.index, f.name, more),
                     "check the torrent's file priorities in qBittorrent, or leave the file out with --files");
    }
    if (!selected_extra.empty())
        return Error(ErrorCode::VERIFY_FAILED,
                     fmt::format("qBittorrent on '{}' keeps file {} '{}' selected after archctl skipped it", run.def.target,
                                 selected_extra.front()->index, selected_extra.front()->name),
                     "nothing was committed; the target was restored");
    return {};
}

bool incomplete_ext_on(qb::Api& tqb) {
    auto prefs = tqb.preferences();
    return prefs.ok() && prefs.value().is_object() && prefs.value().value("incomplete_files_ext", false);
}

// qBittorrent's "Append .!qB extension to incomplete files": a file moved from 0 to selected
// while incomplete gets its incomplete name, asynchronously, and qBittorrent allocates an
// empty or all-zero file under it. Before the recheck, each such file this job merged is moved
// to that name (replacing only what qBittorrent allocated), so the recheck reads the merged
// bytes whichever way qBittorrent's rename went. Returns the files now at their incomplete name.
Result<std::vector<std::uint32_t>> adopt_incomplete_names(JobRun& run, NodeHandle& dst, const std::vector<std::uint32_t>& newly) {
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t i : newly)
        if (run.def.delta.contains(i)) candidates.push_back(i);
    if (candidates.empty() || !incomplete_ext_on(dst.qb())) return std::vector<std::uint32_t>{};
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::AdoptIncompleteRequest request{.save_path = run.def.target_save_path,
                                         .job_dir = job_dir(run.def.route.target_path, run.def.id),
                                         .record_path = std::nullopt,
                                         .suffix = node::k_incomplete_suffix,
                                         .indices = candidates,
                                         .adopt = true};
    // qBittorrent 4.5 allocates the incomplete name within a fraction of a second on an
    // existing torrent, and not at all for a torrent not yet checked (a new target): the wait is
    // short. A rename qBittorrent makes later moves the merged file itself, or leaves the
    // recheck short, which fails the job before the commit.
    auto deadline = run.clock().steady() + std::chrono::seconds(3);
    for (;;) {
        ARCHCTL_TRY_ASSIGN(auto r, node::Ops(*transport).adopt_incomplete(request));
        if (r.plain.empty() || run.clock().steady() > deadline) {
            ARCHCTL_TRY_STATUS(run.event("incomplete_names", {{"suffixed", r.suffixed}, {"plain", r.plain}, {"foreign", r.foreign}}));
            return r.suffixed;
        }
        run.clock().sleep_for(std::chrono::milliseconds(200));
    }
}

// After the recheck verified them, qBittorrent gives the files their final names back
// (asynchronously); the commit stamps the final names, so it waits until no file this job
// merged is under its incomplete name. Asked whenever this run moved a file to that name or
// qBittorrent has the setting on (a rerun after a crash between the two does not know what
// the first run moved).
Status wait_final_names(JobRun& run, NodeHandle& dst, const std::vector<std::uint32_t>& suffixed) {
    if (run.def.delta.empty() || (suffixed.empty() && !incomplete_ext_on(dst.qb()))) return {};
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::AdoptIncompleteRequest request{.save_path = run.def.target_save_path,
                                         .job_dir = job_dir(run.def.route.target_path, run.def.id),
                                         .record_path = std::nullopt,
                                         .suffix = node::k_incomplete_suffix,
                                         .indices = run.def.delta.indices(),
                                         .adopt = false};
    auto deadline = run.clock().steady() + std::chrono::seconds(60);
    for (;;) {
        ARCHCTL_TRY_ASSIGN(auto r, node::Ops(*transport).adopt_incomplete(request));
        if (r.suffixed.empty()) return {};
        if (run.clock().steady() > deadline)
            return Error(ErrorCode::QB_TIMEOUT,
                         fmt::format("qBittorrent on '{}' did not give {} verified file(s) their names back from '{}' within 60 s",
                                     run.def.target, r.suffixed.size(), node::k_incomplete_suffix),
                         "nothing was committed; the target was restored");
        run.clock().sleep_for(std::chrono::milliseconds(200));
    }
}

// ", a pre-existing file merge kept: its bytes are not the torrent's" for a delta file that was
// on the target before the job (merge provenance "preexisting"), else "".
std::string preexisting_note(const JobRun& run, std::uint32_t index) {
    for (const auto& p : run.ledger.merge_provenance)
        if (p.index == index && p.provenance == "preexisting")
            return ", a pre-existing file on the target that merge kept: its bytes are not the torrent's";
    return "";
}

// Every file of the union selected and at 100% after the recheck.
Status check_verified(const JobRun& run, const std::vector<qb::TorrentFile>& files) {
    std::vector<std::string> short_files;
    for (const auto& f : files)
        if (run.def.union_set.contains(f.index) && f.priority == 0)
            short_files.push_back(fmt::format("{} {} not selected (priority 0)", f.index, f.name));
        else if (run.def.union_set.contains(f.index) && f.progress < 1.0)
            short_files.push_back(fmt::format("{} {} ({:.1f}%{})", f.index, f.name, f.progress * 100, preexisting_note(run, f.index)));
    if (short_files.empty()) return {};
    return Error(ErrorCode::VERIFY_FAILED,
                 fmt::format("the recheck on '{}' did not verify {} file(s): {}", run.def.target, short_files.size(), fmt::join(short_files, "; ")),
                 "nothing was committed; the target was restored");
}

// a+rx on the union's directories and a+r on its files (owner, write and special bits kept);
// the node changes only what lacks them, so a second call changes no ctime.
Status make_readable(JobRun& run, NodeHandle& dst) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, dst.ops());
    node::ChmodReadableRequest readable{.base = run.def.target_save_path, .paths = {}};
    for (const auto& f : run.def.union_files) readable.paths.push_back(f.at_target());
    ARCHCTL_TRY_STATUS(node::Ops(*transport).chmod_readable(readable));
    return {};
}

// The commit: a new placement generation with each verified file as the disk shows it now
// (device, inode, size, mtime, ctime) — evict later counts an archive file only while a fresh stat
// still shows this.
Status commit(JobRun& run, NodeHandle& dst) {
    evidence::Resource res;
    res.identity = run.def.identity;
    auto view = evidence::read_placement(dst, res);
    if (!view.ok() || !view.value()) return Error(ErrorCode::STALE_STATE, "the target placement vanished after its recheck");
    // The files readable before they are stamped: a chmod changes a file's ctime, and a stamp
    // taken before it would no longer prove the file.
    ARCHCTL_TRY_STATUS(make_readable(run, dst));
    ARCHCTL_TRY_ASSIGN(auto stamps, committed_stamps(run, dst));
    state::PlacementStore placements(run.env.state_dir);
    ARCHCTL_TRY_ASSIGN(std::uint64_t gen, placements.advance(run.def.aliases, run.def.target, evidence::fingerprint(*view.value()), run.def.id,
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

// An existing target the node's global share limits would remove (with or without its files)
// or stop gets its own limits of none once it holds this job's files, unless the target node
// leaves torrents to the global limits. Limits the torrent has of its own are its owner's choice
// and stay (evict does not count a copy they would remove).
Status protect_existing_target(JobRun& run, NodeHandle& dst) {
    if (run.def.new_target || dst.config().share_limits != config::ShareLimitsPolicy::none) return {};
    ARCHCTL_TRY_ASSIGN(auto infos, dst.qb().torrents({run.def.qb_id}));
    if (infos.empty()) return {};
    ARCHCTL_TRY_ASSIGN(auto global, dst.share_limits());
    qb::EffectiveShareLimits limits = qb::effective_share_limits(infos[0], global);
    if (!limits.global || !(limits.removes() || limits.stops())) return {};
    ARCHCTL_TRY_STATUS(dst.qb().clear_share_limits({infos[0].id}));
    return run.event("share_limits_cleared", {{"node", run.def.target}, {"was", limits.text()}});
}

// After the commit: the add's tag dropped (its proof of ownership has served
// its purpose), and the torrent started when it is new or was running before.
Status start_target(JobRun& run, NodeHandle& dst) {
    qb::Api& tqb = dst.qb();
    // The commit made the files readable before it stamped them.
    ARCHCTL_TRY_STATUS(protect_existing_target(run, dst));
    if (!run.ledger.target_tag.empty()) ARCHCTL_TRY_STATUS(tqb.delete_tags({run.ledger.target_tag}));
    bool start = run.def.new_target || run.ledger.target_baseline.value("started", false);
    if (start) ARCHCTL_TRY_STATUS(start_and_confirm(run, tqb));
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
                return target_cannot_take(run, StopReason::disk,
                                          fmt::format("the part file does not fit on '{}' above the floor: {}", run.def.target, added.error().message));
            ARCHCTL_TRY_STATUS(std::move(added));
        }
        if (!run.def.new_target) ARCHCTL_TRY_STATUS(touch_existing_target(run, dst->qb()));
        ARCHCTL_TRY_ASSIGN(auto newly, select_union(run, dst->qb()));
        ARCHCTL_TRY_STATUS(check_selection(run, dst->qb()));
        ARCHCTL_TRY_ASSIGN(auto suffixed, adopt_incomplete_names(run, *dst, newly));
        auto files = recheck_and_wait(run.clock(), dst->qb(), run.def.qb_id);
        // A stuck check is not a verdict on the files: the job waits to be resumed.
        if (!files.ok() && is_recheck_stall(files.error()))
            return StepResult::stopped(StopReason::waiting, fmt::format("on '{}': {}; {}", run.def.target, files.error().message, files.error().hint));
        // Nothing is committed before the recheck's verdict: a stop during the wait leaves the job
        // at verify, and the next run rechecks again.
        if (!files.ok() && files.error().is(ErrorCode::CANCELLED) && stop_requested())
            return StepResult::stopped(StopReason::interrupt, fmt::format("{} during the recheck on '{}'", interrupt_text(), run.def.target));
        ARCHCTL_TRY_STATUS(files.ok() ? check_verified(run, files.value()) : Status(files.take_error()));
        ARCHCTL_TRY_STATUS(wait_final_names(run, *dst, suffixed));
        // The source is checked once more right before the commit; after it, a change there no
        // longer undoes anything.
        ARCHCTL_TRY_STATUS(check_source(run));
        ARCHCTL_TRY_STATUS(commit(run, *dst));
    }
    if (!run.ledger.started_target) ARCHCTL_TRY_STATUS(start_target(run, *dst));
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
