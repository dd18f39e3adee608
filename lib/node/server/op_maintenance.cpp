// chmod_readable, cleanup and unlink_owned: the operations that end a job or a placement.
//
// chmod_readable: a+rx on the resource's directories below the save path, a+r on its files;
//   owner, write bits and special bits are kept (docs/design.md "Step 4: verify").
// cleanup: removes only job-owned staging artifacts — payload and auxiliary files named by the
//   manifest or the stage journal, READY, the manifest, the journal, temp files archctl itself
//   writes — then rmdir of the emptied directories; anything else is kept and reported, and so
//   is every file the keep rule keeps (`referenced`: paths other torrents reference now). With
//   save_path it also drops this job's merge record.
// unlink_owned (evict, docs/design.md "Evict"): unlinks only the given paths that no other torrent
//   references and that are still what was recorded (the keep rule, lib/node/server/keep_rule.hpp;
//   other hard links are allowed), then non-recursive rmdir from the deepest
//   owned directory upward, keeping any directory with unknown content.
//
// Crash points: chmod.applied, cleanup.unlinked, cleanup.rmdir, unlink_owned.unlinked,
// unlink_owned.rmdir.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/journal.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/keep_rule.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/source_stamps.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_cleanup.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

// The names in a directory; none when it cannot be listed.
std::vector<std::string> list_names(int dirfd) {
    auto names = list_dir(dirfd, "");
    return names.ok() ? std::move(names).value() : std::vector<std::string>{};
}

// Syncthing's temp file of `target` (a pull of it that did not finish): ".syncthing.<target>.tmp"
// or "~syncthing~<target>.tmp".
bool is_syncthing_temp_of(const std::string& name, const std::string& target) {
    return name == syncthing_temp_name(target) || name == "~syncthing~" + target + ".tmp";
}

bool is_atomic_temp_of(const std::string& name, const std::string& target) {
    return name.rfind("." + target + ".tmp.", 0) == 0;
}

Status set_mode_bits(int fd, mode_t add, const std::string& display, bool& changed) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno_error("cannot stat", display, errno);
    mode_t wanted = (st.st_mode & 07777) | add;
    changed = wanted != (st.st_mode & 07777);
    if (changed && ::fchmod(fd, wanted) != 0) return errno_error("cannot chmod", display, errno);
    return {};
}

}  // namespace

Result<json> op_chmod_readable(OpContext& ctx, json args) {
    auto request = args.get<ChmodReadableRequest>();
    const std::string& base = request.base;
    ARCHCTL_TRY_ASSIGN(UniqueFd base_fd, ctx.roots().open_dir(base));
    DirCache dirs(base_fd.get(), base);
    std::set<std::string> dirs_done;
    ChmodReadableResult out;
    for (const auto& rel : request.paths) {
        ARCHCTL_TRY_ASSIGN(std::vector<std::string> comps, split_relative(rel));
        for (std::size_t depth = 1; depth < comps.size(); ++depth) {
            std::span<const std::string> prefix(comps.data(), depth);
            std::string key = join_path(prefix);
            if (!dirs_done.insert(key).second) continue;
            auto fd = dirs.dir(prefix);
            if (!fd.ok()) {
                if (fd.error().is(ErrorCode::NOT_FOUND)) break;
                return fd.take_error();
            }
            bool changed = false;
            ARCHCTL_TRY_STATUS(set_mode_bits(fd.value(), 0555, fmt::format("{}/{}", base, key), changed));
            out.dirs_changed += changed ? 1 : 0;
        }
        std::string display = fmt::format("{}/{}", base, rel);
        auto parent = dirs.dir(std::span<const std::string>(comps.data(), comps.size() - 1));
        if (!parent.ok() && !parent.error().is(ErrorCode::NOT_FOUND)) return parent.take_error();
        auto file = parent.ok() ? open_regular(parent.value(), comps.back(), display) : Result<UniqueFd>(Error(ErrorCode::NOT_FOUND, ""));
        if (!file.ok()) {
            if (!file.error().is(ErrorCode::NOT_FOUND)) return file.take_error();
            out.missing.push_back(rel);
            continue;
        }
        bool changed = false;
        ARCHCTL_TRY_STATUS(set_mode_bits(file.value().get(), 0444, display, changed));
        out.files_changed += changed ? 1 : 0;
    }
    crash_point("chmod.applied");
    return json(out);
}

namespace {

// Names below the job directory that the stage (or merge) of this job wrote.
struct Owned {
    std::set<std::string> payload;  // names in p/ (flat) or in its shards
    std::set<std::string> aux;      // names in a/
};

Owned owned_names(int job, const std::string& job_dir, const CleanupRequest& request) {
    Owned o;
    for (std::uint32_t i : request.files) o.payload.insert(std::to_string(i));
    for (const auto& a : request.aux) o.aux.insert(a);
    auto text = read_small_in(job, k_manifest_name, job_dir + "/" + k_manifest_name);
    if (text.ok()) {
        auto parsed = json::parse(text.value(), nullptr, false);
        if (!parsed.is_discarded())
            if (auto m = Manifest::from_json(parsed); m.ok()) {
                for (const auto& f : m.value().files) o.payload.insert(std::to_string(f.index));
                for (const auto& a : m.value().aux) o.aux.insert(a.name);
            }
    }
    auto journal = read_journal(fd_path(job, k_stage_journal_name), k_stage_journal_kind);
    if (journal.ok())
        for (const auto& rec : journal.value().records)
            if (rec.contains("i")) {
                std::string i = std::to_string(rec.at("i").get<std::uint32_t>());
                o.payload.insert(i);
                o.payload.insert("." + i + ".part");
            }
    return o;
}

struct Sweep {
    std::set<std::string> referenced;  // paths other torrents reference (the caller's snapshot)
    std::vector<std::string> removed;
    std::vector<KeptEntry> kept;
};

Status unlink_in(int dirfd, const std::string& name, const std::string& display, Sweep& sweep) {
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(dirfd, name, display));
    if (!st) return {};
    // A staged payload file is a link of the source's file: other links are expected.
    KeepVerdict verdict = keep_verdict(OwnedPath{display, std::nullopt, std::nullopt}, *st, sweep.referenced, OtherLinks::allowed);
    if (verdict.keep()) {
        sweep.kept.push_back(kept_entry(display, verdict));
        return {};
    }
    if (::unlinkat(dirfd, name.c_str(), 0) != 0) {
        // Syncthing may propagate the target's move-out as a delete of this very staged link
        // between the stat and the unlink: gone is what cleanup wants.
        if (errno == ENOENT) return {};
        return errno_error("cannot remove", display, errno);
    }
    crash_point("cleanup.unlinked");
    sweep.removed.push_back(display);
    return {};
}

Status remove_dir_if_empty(int parent, const std::string& name, const std::string& display, Sweep& sweep);

bool is_number(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Removes the job's own names in `sub` of `job` (kept by the keep rule, or when they are not the
// job's). With `shards`, a directory with a number for its name is a shard of the payload (either
// layout, job_layout.hpp: the request need not say which the job used): swept the same way, then
// removed when empty.
Status sweep_subdir(int job, const char* sub, const std::set<std::string>& owned, const std::string& job_dir, Sweep& sweep,
                    bool shards = false) {
    std::string display = fmt::format("{}/{}", job_dir, sub);
    auto dir = open_dir_below(job, std::vector<std::string>{sub}, job_dir);
    if (!dir.ok()) {
        if (dir.error().is(ErrorCode::NOT_FOUND)) return {};
        // Something else took the directory's place (a symlink, a file): never followed, never removed.
        if (dir.error().is(ErrorCode::PATH_SYMLINK) || dir.error().is(ErrorCode::NOT_A_DIRECTORY)) {
            sweep.kept.push_back(KeptEntry{display, "not the directory archctl staged: " + dir.error().message, KeptCode::none});
            return {};
        }
        return dir.take_error();
    }
    for (const auto& name : list_names(dir.value().get())) {
        std::string shown = fmt::format("{}/{}", display, name);
        struct stat st {};
        if (shards && is_number(name) && ::fstatat(dir.value().get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode)) {
            ARCHCTL_TRY_STATUS(sweep_subdir(dir.value().get(), name.c_str(), owned, display, sweep));
            ARCHCTL_TRY_STATUS(remove_dir_if_empty(dir.value().get(), name, shown, sweep));
            continue;
        }
        bool mine = owned.count(name) > 0 || std::any_of(owned.begin(), owned.end(), [&](const std::string& o) {
                        return is_atomic_temp_of(name, o) || is_syncthing_temp_of(name, o);
                    });
        if (mine) {
            ARCHCTL_TRY_STATUS(unlink_in(dir.value().get(), name, shown, sweep));
        } else {
            sweep.kept.push_back(KeptEntry{shown, "not a file of this job", KeptCode::none});
        }
    }
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dir.value().get(), display));
    return {};
}

Status remove_dir_if_empty(int parent, const std::string& name, const std::string& display, Sweep& sweep) {
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0) {
        crash_point("cleanup.rmdir");
        sweep.removed.push_back(display);
        return {};
    }
    if (errno == ENOENT || errno == ENOTDIR) return {};  // gone, or not a directory (kept by the sweep)
    if (errno == ENOTEMPTY || errno == EEXIST) {
        sweep.kept.push_back(KeptEntry{display, "directory is not empty", KeptCode::none});
        return {};
    }
    return errno_error("cannot remove directory", display, errno);
}

Status drop_merge_record(const RootSet& roots, const std::string& save_path, const std::string& job_id, Sweep& sweep) {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(save_path));
    std::string root = roots.paths()[loc.root];
    std::string record = merge_record_path(root, job_id);
    auto parent = roots.open_parent(record);
    if (!parent.ok()) return parent.error().is(ErrorCode::NOT_FOUND) ? Status{} : Status(parent.take_error());
    return unlink_in(parent.value().dir.get(), parent.value().name, record, sweep);
}

std::string job_id_of_dir(const std::string& job_dir) {
    auto slash = job_dir.find_last_of('/');
    return slash == std::string::npos ? job_dir : job_dir.substr(slash + 1);
}

// Puts back the source metadata the stage recorded, where the far side changed it through a
// staged link (source_stamps.hpp).
Status restore_stamps(OpContext& ctx, const std::string& source_base, const std::string& job_id, CleanupResult& out) {
    ARCHCTL_TRY_ASSIGN(RestoreReport report, restore_source_stamps(ctx.roots(), source_base, job_id));
    out.restored = std::move(report.restored);
    out.replaced = std::move(report.replaced);
    return {};
}

}  // namespace

Result<json> op_cleanup(OpContext& ctx, json args) {
    auto request = args.get<CleanupRequest>();
    const std::string& job_dir = request.job_dir;
    Sweep sweep;
    auto route = ctx.roots().open_parent(job_dir);
    if (!route.ok()) {
        if (!route.error().is(ErrorCode::NOT_FOUND)) return route.take_error();
        CleanupResult absent{JobDirEnd::absent, {}, {}, {}, {}};
        if (request.source_base) ARCHCTL_TRY_STATUS(restore_stamps(ctx, *request.source_base, job_id_of_dir(job_dir), absent));
        return json(absent);
    }
    const std::string job_id = route.value().name;
    sweep.referenced.insert(request.referenced.begin(), request.referenced.end());
    if (request.save_path) ARCHCTL_TRY_STATUS(drop_merge_record(ctx.roots(), *request.save_path, job_id, sweep));
    auto job = open_dir_below(route.value().dir.get(), std::vector<std::string>{job_id}, job_dir);
    if (!job.ok()) {
        if (!job.error().is(ErrorCode::NOT_FOUND)) return job.take_error();
        CleanupResult absent{JobDirEnd::absent, sweep.removed, sweep.kept, {}, {}};
        if (request.source_base) ARCHCTL_TRY_STATUS(restore_stamps(ctx, *request.source_base, job_id, absent));
        return json(absent);
    }
    int jfd = job.value().get();
    Owned owned = owned_names(jfd, job_dir, request);
    ARCHCTL_TRY_STATUS(sweep_subdir(jfd, k_payload_dir, owned.payload, job_dir, sweep, true));
    ARCHCTL_TRY_STATUS(sweep_subdir(jfd, k_aux_dir, owned.aux, job_dir, sweep));
    ARCHCTL_TRY_STATUS(remove_dir_if_empty(jfd, k_payload_dir, job_dir + "/" + k_payload_dir, sweep));
    ARCHCTL_TRY_STATUS(remove_dir_if_empty(jfd, k_aux_dir, job_dir + "/" + k_aux_dir, sweep));
    // The journal goes last: until then it still names every payload file.
    for (const char* name : {k_ready_name, k_manifest_name, k_stage_journal_name}) {
        for (const auto& entry : list_names(jfd))
            if (is_atomic_temp_of(entry, name) || is_syncthing_temp_of(entry, name))
                ARCHCTL_TRY_STATUS(unlink_in(jfd, entry, job_dir + "/" + entry, sweep));
        ARCHCTL_TRY_STATUS(unlink_in(jfd, name, job_dir + "/" + name, sweep));
    }
    std::set<std::string> known = {k_payload_dir, k_aux_dir};
    for (const auto& entry : list_names(jfd))
        if (!known.count(entry)) sweep.kept.push_back(KeptEntry{job_dir + "/" + entry, "not a file of this job", KeptCode::none});
    ARCHCTL_TRY_STATUS(fsync_fd_dir(jfd, job_dir));
    ARCHCTL_TRY_STATUS(remove_dir_if_empty(route.value().dir.get(), job_id, job_dir, sweep));
    ARCHCTL_TRY_STATUS(fsync_fd_dir(route.value().dir.get(), job_dir));
    bool gone = !path_exists(fd_path(route.value().dir.get(), job_id));
    CleanupResult out{gone ? JobDirEnd::removed : JobDirEnd::kept, sweep.removed, sweep.kept, {}, {}};
    // The staged links are gone: nothing the far side does reaches the source's inodes any more.
    if (request.source_base) ARCHCTL_TRY_STATUS(restore_stamps(ctx, *request.source_base, job_id, out));
    return json(out);
}

Result<json> op_unlink_owned(OpContext& ctx, json args) {
    auto request = args.get<UnlinkOwnedRequest>();
    const std::vector<OwnedPath>& paths = request.paths;
    std::set<std::string> referenced(request.referenced.begin(), request.referenced.end());
    const std::string& stop_at = request.stop_at;
    ARCHCTL_TRY_STATUS(ctx.roots().locate(stop_at));
    // Every path is checked before the first unlink: a request refused is a request not begun.
    for (const auto& o : paths)
        if (o.path.size() <= stop_at.size() + 1 || o.path.compare(0, stop_at.size() + 1, stop_at + "/") != 0)
            return Error(ErrorCode::BAD_REQUEST, fmt::format("cannot unlink '{}': it is not below '{}'", o.path, stop_at));
    UnlinkOwnedResult out;
    auto& removed = out.removed;
    auto& kept = out.kept;
    // A failure after some unlinks says what this request had already removed (the caller's
    // intent record accounts for it; a person reading the error should not have to guess).
    auto after_removing = [&removed](Error e) {
        if (removed.empty()) return e;
        e.message += fmt::format(" (after unlinking {} path(s) of this request, the last '{}')", removed.size(), removed.back());
        return e;
    };
    std::set<std::string> dirs;
    for (const auto& o : paths) {
        for (std::string d = parent_dir(o.path); d.size() > stop_at.size(); d = parent_dir(d)) dirs.insert(d);
        auto parent = ctx.roots().open_parent(o.path);
        if (!parent.ok()) {
            if (!parent.error().is(ErrorCode::NOT_FOUND)) return after_removing(parent.take_error());
            continue;
        }
        auto st = stat_in(parent.value().dir.get(), parent.value().name, o.path);
        if (!st.ok()) return after_removing(st.take_error());
        if (!st.value()) continue;
        // A cache file may have other links (a staged link, the user's own): unlinking this
        // name leaves their data alone.
        KeepVerdict verdict = keep_verdict(o, *st.value(), referenced, OtherLinks::allowed);
        if (verdict.keep()) {
            kept.push_back(kept_entry(o.path, verdict));
            continue;
        }
        if (::unlinkat(parent.value().dir.get(), parent.value().name.c_str(), 0) != 0)
            return after_removing(errno_error("cannot unlink", o.path, errno));
        removed.push_back(o.path);
        if (Status synced = fsync_fd_dir(parent.value().dir.get(), o.path); !synced.ok()) return after_removing(synced.take_error());
        crash_point("unlink_owned.unlinked");
    }
    std::vector<std::string> ordered(dirs.begin(), dirs.end());
    std::sort(ordered.begin(), ordered.end(), [](const std::string& a, const std::string& b) {
        auto da = std::count(a.begin(), a.end(), '/'), db = std::count(b.begin(), b.end(), '/');
        return da != db ? da > db : a < b;
    });
    for (const auto& d : ordered) {
        auto parent = ctx.roots().open_parent(d);
        if (!parent.ok()) continue;
        if (::unlinkat(parent.value().dir.get(), parent.value().name.c_str(), AT_REMOVEDIR) == 0) {
            crash_point("unlink_owned.rmdir");
            removed.push_back(d);
        } else if (errno == ENOTEMPTY || errno == EEXIST) {
            kept.push_back(KeptEntry{d, "directory has other content", KeptCode::none});
        } else if (errno != ENOENT && errno != ENOTDIR) {
            return after_removing(errno_error("cannot remove directory", d, errno));
        }
    }
    return json(out);
}

}  // namespace archctl::node
