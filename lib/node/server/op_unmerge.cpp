// unmerge (target node): before a commit, take back exactly what this job's merge placed
// (op_merge.cpp), as its merge record says (lib/node/server/merge_journal.hpp).
//
// unmerge takes back each file whose intent it holds, unless the keep rule
// (lib/node/server/keep_rule.hpp) keeps it: `referenced` (the paths other torrents reference, read by
// the caller right before) wins over everything; a file replaced, resized or linked elsewhere
// since merge stays. It also takes back the '.!qB' name of every file this job merged
// (op_adopt_incomplete.cpp): this job's inode there (under the keep rule) or an allocation that
// appeared after the merge. Answer: removed paths, kept [{path, reason, code}] (files and
// non-empty directories), and the pre-existing paths, which are never removed.
//
// Crash points: unmerge.unlinked, unmerge.rmdir, unmerge.done.

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/keep_rule.hpp"
#include "lib/node/server/merge_journal.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {

using nlohmann::json;

namespace {

// removed, kept (files this job placed that the keep rule keeps, and non-empty directories),
// preexisting (files that were there before the merge: never removed).
using Removal = UnmergeResult;

// Takes back qBittorrent's incomplete name of a file this job placed (<path>.!qB): this job's
// own file moved there (op_adopt_incomplete, or qBittorrent's rename of it), unless the keep
// rule keeps it; or the empty or all-zero file qBittorrent allocated there after the merge
// because this job selected the file. Anything else there stays.
Status unmerge_suffixed(int dir, const std::string& name, const std::string& dest, const json& pre, const json& intent,
                        const std::set<std::string>& referenced, Removal& out) {
    std::string suffixed_name = name + k_incomplete_suffix;
    std::string shown = dest + k_incomplete_suffix;
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir, suffixed_name, shown));
    if (!st) return {};
    auto ino = intent.at("ino").get<std::uint64_t>();
    auto size = intent.value("size", std::uint64_t{0});
    if (st->st_ino == ino) {
        OwnedPath owned{shown, std::nullopt, ino};
        if (intent.contains("size")) owned.size = size;
        KeepVerdict verdict = keep_verdict(owned, *st, referenced, OtherLinks::keep_file);
        if (verdict.keep()) {
            out.kept.push_back(kept_entry(shown, verdict));
            return {};
        }
    } else {
        bool allocated = !referenced.count(dest) && !referenced.count(shown);
        if (allocated) {
            ARCHCTL_TRY_ASSIGN(allocated, qb_allocation(dir, suffixed_name, shown, pre, *st, size));
        }
        if (!allocated) {
            out.kept.push_back(KeptEntry{shown, "it holds bytes this job did not place", KeptCode::not_owned});
            return {};
        }
    }
    if (::unlinkat(dir, suffixed_name.c_str(), 0) != 0) return errno_error("cannot remove", shown, errno);
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dir, dest));
    crash_point("unmerge.unlinked");
    out.removed.push_back(shown);
    return {};
}

// Takes back one delta path: the file this job placed there is unlinked unless the keep rule
// (lib/node/server/keep_rule.hpp) says it stays. A pre-existing file is only reported.
Status unmerge_file(const RootSet& roots, const std::string& save_path, const json& pre, const json& intent,
                    const std::set<std::string>& referenced, const std::string& job_id, Removal& out) {
    std::string rel = pre.at("path").get<std::string>();
    std::string dest = fmt::format("{}/{}", save_path, rel);
    auto parent = roots.open_parent(dest);
    if (!parent.ok()) {
        if (parent.error().is(ErrorCode::NOT_FOUND)) return {};
        return parent.take_error();
    }
    int dir = parent.value().dir.get();
    bool preexisting = pre.at("state") == "preexisting";
    if (!preexisting) ::unlinkat(dir, merge_temp_name(job_id, pre.at("i").get<std::uint32_t>()).c_str(), 0);
    if (!preexisting && !intent.is_null()) ARCHCTL_TRY_STATUS(unmerge_suffixed(dir, parent.value().name, dest, pre, intent, referenced, out));
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir, parent.value().name, dest));
    if (!st) return {};
    if (preexisting) {
        out.preexisting.push_back(dest);
        return {};
    }
    if (intent.is_null()) return {};  // the job never moved a file there; whatever is there is not its own
    OwnedPath owned{dest, std::nullopt, intent.at("ino").get<std::uint64_t>()};
    if (intent.contains("size")) owned.size = intent.at("size").get<std::uint64_t>();
    // A file merge moved into place has one link; another one means it is used elsewhere.
    KeepVerdict verdict = keep_verdict(owned, *st, referenced, OtherLinks::keep_file);
    if (verdict.keep()) {
        out.kept.push_back(kept_entry(dest, verdict));
        return {};
    }
    if (::unlinkat(dir, parent.value().name.c_str(), 0) != 0) return errno_error("cannot remove", dest, errno);
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dir, dest));
    crash_point("unmerge.unlinked");
    out.removed.push_back(dest);
    return {};
}

Status remove_created_dirs(const RootSet& roots, const json& dirs, Removal& out) {
    std::vector<std::string> sorted = dirs.get<std::vector<std::string>>();
    std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
        return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    for (const auto& d : sorted) {
        auto parent = roots.open_parent(d);
        if (!parent.ok()) continue;
        if (::unlinkat(parent.value().dir.get(), parent.value().name.c_str(), AT_REMOVEDIR) != 0) {
            if (errno == ENOTEMPTY || errno == EEXIST)
                out.kept.push_back(KeptEntry{d, "directory is not empty", KeptCode::not_empty});
            else if (errno != ENOENT) return errno_error("cannot remove directory", d, errno);
            continue;
        }
        crash_point("unmerge.rmdir");
        out.removed.push_back(d);
    }
    return {};
}

}  // namespace

Result<json> op_unmerge(OpContext& ctx, json args) {
    auto request = args.get<UnmergeRequest>();
    const std::string& save_path = request.save_path;
    ARCHCTL_TRY_ASSIGN(std::string record_path, merge_record_path_for(ctx.roots(), request.record_path, request.job_dir, save_path));
    std::set<std::string> referenced(request.referenced.begin(), request.referenced.end());
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok() && !parent.error().is(ErrorCode::NOT_FOUND)) return parent.take_error();
    std::optional<MergeState> state;
    if (parent.ok()) {
        ARCHCTL_TRY_ASSIGN(state, load_merge_record(fd_path(parent.value().dir.get(), parent.value().name)));
    }
    if (!state) return json(UnmergeResult{UnmergeRecord::absent, {}, {}, {}});
    std::string job_id = job_id_of(state->pre.value("job_dir", std::string("job")));
    Removal removal;
    for (const auto& pre : state->pre.at("pre")) {
        auto intent = state->intents.find(pre.at("i").get<std::uint32_t>());
        const json& recorded = intent == state->intents.end() ? json() : intent->second;
        ARCHCTL_TRY_STATUS(unmerge_file(ctx.roots(), save_path, pre, recorded, referenced, job_id, removal));
    }
    ARCHCTL_TRY_STATUS(remove_created_dirs(ctx.roots(), state->pre.at("dirs"), removal));
    if (::unlinkat(parent.value().dir.get(), parent.value().name.c_str(), 0) != 0 && errno != ENOENT)
        return errno_error("cannot remove merge record", record_path, errno);
    crash_point("unmerge.done");
    removal.record = UnmergeRecord::removed;
    return json(removal);
}

}  // namespace archctl::node
