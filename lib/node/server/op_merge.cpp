// merge / unmerge (target node): move received files into the qB save path (docs/design.md "Step 3: merge")
// and, before a commit, take back exactly what this job placed.
//
// merge first removes this job's temp files a stopped or failed run may have left beside the
// destinations, then records, durably and before any change, the pre-merge state of every
// delta path and the directories the job will create; a different-size or non-regular entry at
// a delta path is a conflict that changes nothing. It then moves each received file into place with
// rename(RENAME_NOREPLACE) out of the route folder (one filesystem, and the received file has no
// other link), else copies it into a temp file beside the destination (hashing in the same pass,
// checked against the manifest's xxh3 when it has one), renames that into place and removes the
// received file. A placed file therefore never shares an inode with anything in a Syncthing
// folder (docs/torrent-format.md "Hard links through Syncthing"). A same-size regular file already
// at a delta path is reused untouched
// (provenance "preexisting"). Every move is preceded by an intent record with the inode that
// will appear at the destination, so a rerun (or unmerge) recognises the job's own files.
//
// The free-space floor (`min_free`) holds for every copy: a copy that would take the
// destination's filesystem below it is not started, and one that reaches it (something else
// writes there too) stops at the next chunk boundary; a copy that finds the filesystem full
// stops the same way. The merge then answers stopped "disk" with the free space it saw, and the
// temp file of that copy is gone. Every failure of a copy removes its temp file as well.
//
// merge_record (read-only) says whether the job's record exists and which delta files are at
// their destinations now (the intent's inode is there, or a pre-existing file is reused): the
// evidence a lost ledger is rebuilt from.
//
// unmerge takes back each file whose intent it holds, unless the keep rule
// (lib/node/server/keep_rule.hpp) keeps it: `referenced` (the paths other torrents reference, read by
// the caller right before) wins over everything; a file replaced, resized or linked elsewhere
// since merge stays. Answer: removed paths, kept [{path, reason, code}] (files and non-empty
// directories), and the pre-existing paths, which are never removed.
//
// adopt_incomplete serves qBittorrent's "Append .!qB extension to incomplete files": a file
// qBittorrent selects while incomplete is renamed to '<path>.!qB' asynchronously and an empty or
// all-zero file is allocated under that name. Before the recheck, each listed file this job
// merged is moved over that allocation (only over an allocation: a '.!qB' file that was there
// before the merge, or holds any non-zero byte, is never touched); with adopt=false it only
// reports where each file is. unmerge takes back the '.!qB' name of every file this job merged:
// this job's inode there (under the keep rule) or an allocation that appeared after the merge.
//
// The record is a journal at `record_path`, by default `<root>/.archctl/merge-<job-id>.jsonl`
// under the root that holds the save path (outside every Syncthing folder).
//
// Crash points: merge.recorded, merge.intent, merge.placed, merge.received_removed, merge.adopted,
// unmerge.unlinked, unmerge.rmdir, unmerge.done (plus lib/base's journal.synced).

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/journal.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/server/keep_rule.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

constexpr const char* k_merge_journal_kind = "archctl-merge";

struct DeltaFile {
    std::uint32_t index = 0;
    std::string path;
    std::vector<std::string> components;
    std::uint64_t size = 0;
};

std::string job_id_of(const std::string& job_dir) { return job_dir.substr(job_dir.rfind('/') + 1); }

Result<std::vector<DeltaFile>> parse_files(const std::vector<FileEntry>& files) {
    std::vector<DeltaFile> out;
    for (const auto& f : files) {
        DeltaFile d;
        d.index = f.index;
        d.path = f.path;
        d.size = f.size;
        ARCHCTL_TRY_ASSIGN(d.components, split_relative(d.path));
        out.push_back(std::move(d));
    }
    return out;
}

// The record's node path: explicit, or <root holding save_path>/.archctl/merge-<job>.jsonl.
Result<std::string> record_path_for(const RootSet& roots, const std::optional<std::string>& record_path,
                                    const std::optional<std::string>& job_dir, const std::string& save_path) {
    if (record_path) return *record_path;
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(save_path));
    if (!job_dir) return Error(ErrorCode::BAD_REQUEST, "invalid arguments: job_dir or record_path is required");
    std::string job = job_id_of(*job_dir);
    ARCHCTL_TRY_STATUS(split_relative(job));
    std::string root = roots.paths()[loc.root];
    return merge_record_path(root, job);
}

Error conflict(const std::string& path, const std::string& cause) {
    return Error(ErrorCode::MERGE_CONFLICT, fmt::format("cannot merge into '{}': {}", path, cause),
                 "move the conflicting entry away, or exclude the file from the job");
}

// Whether every byte of the regular file `name` in `dir` is zero (holes read as zeros): what
// qBittorrent allocates for a file it has not written yet.
Result<bool> all_zero(int dir, const std::string& name, const std::string& display) {
    UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return errno_error("cannot open", display, errno);
    std::vector<char> buf(1 << 20);
    off_t pos = 0;
    for (;;) {
        off_t data = ::lseek(fd.get(), pos, SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) return true;  // only holes from here on
            data = pos;                       // SEEK_DATA unsupported: read everything
        }
        off_t hole = ::lseek(fd.get(), data, SEEK_HOLE);
        if (hole < 0) hole = std::numeric_limits<off_t>::max();
        for (pos = data; pos < hole;) {
            ssize_t n = ::pread(fd.get(), buf.data(), static_cast<std::size_t>(std::min<off_t>(static_cast<off_t>(buf.size()), hole - pos)), pos);
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno_error("cannot read", display, errno);
            }
            if (n == 0) return true;
            if (std::any_of(buf.begin(), buf.begin() + n, [](char c) { return c != 0; })) return false;
            pos += n;
        }
    }
}

// Pre-merge state of every delta path, and the directories that do not exist yet.
struct PreState {
    json files = json::array();
    std::vector<std::string> missing_dirs;  // node paths, shallowest first
};

// How many leading components of `dirs` exist below `root_fd` as real directories.
Result<std::size_t> existing_prefix(int root_fd, const std::vector<std::string>& dirs, const std::string& root_display,
                                    std::map<std::string, std::size_t>& memo) {
    std::string key = join_path(dirs);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    UniqueFd cur(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::size_t i = 0;
    for (; i < dirs.size(); ++i) {
        std::string shown = fmt::format("{}/{}", root_display, join_path(std::span<const std::string>(dirs.data(), i + 1)));
        ARCHCTL_TRY_ASSIGN(auto st, stat_in(cur.get(), dirs[i], shown));
        if (!st) break;
        if (S_ISLNK(st->st_mode)) return symlink_error(shown);
        if (!S_ISDIR(st->st_mode)) return conflict(shown, fmt::format("a {} is where a directory is needed", file_type_name(st->st_mode)));
        UniqueFd next(::openat(cur.get(), dirs[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.valid()) return errno_error("cannot open directory", shown, errno);
        cur = std::move(next);
    }
    memo[key] = i;
    return i;
}

Result<PreState> record_pre_state(const RootSet& roots, const std::string& save_path, const std::vector<DeltaFile>& files) {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(save_path));
    int root_fd = roots.root_fd(loc.root);
    const std::string& root = roots.paths()[loc.root];
    PreState pre;
    std::map<std::string, std::size_t> memo;
    std::set<std::string> missing;
    for (const auto& f : files) {
        std::vector<std::string> dirs = loc.components;
        dirs.insert(dirs.end(), f.components.begin(), f.components.end() - 1);
        ARCHCTL_TRY_ASSIGN(std::size_t have, existing_prefix(root_fd, dirs, root, memo));
        std::string dest = fmt::format("{}/{}", save_path, f.path);
        json entry = {{"i", f.index}, {"path", f.path}, {"state", "absent"}};
        if (have == dirs.size()) {
            ARCHCTL_TRY_ASSIGN(UniqueFd dir, open_dir_below(root_fd, dirs, root));
            ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir.get(), f.components.back(), dest));
            if (st) {
                if (!S_ISREG(st->st_mode)) return conflict(dest, fmt::format("a {} is at a delta path", file_type_name(st->st_mode)));
                if (static_cast<std::uint64_t>(st->st_size) != f.size)
                    return conflict(dest, fmt::format("a file of {} bytes is there, the torrent's file has {}", st->st_size, f.size));
                entry = {{"i", f.index}, {"path", f.path}, {"state", "preexisting"},
                         {"size", static_cast<std::uint64_t>(st->st_size)}, {"ino", static_cast<std::uint64_t>(st->st_ino)}};
            }
            // qBittorrent's incomplete name of the file: whether something is there before the
            // merge decides what unmerge may take back from that name (op_adopt_incomplete).
            ARCHCTL_TRY_ASSIGN(auto suffixed, stat_in(dir.get(), f.components.back() + k_incomplete_suffix, dest + k_incomplete_suffix));
            entry["suffixed"] = suffixed ? "present" : "absent";
        } else {
            entry["suffixed"] = "absent";
        }
        for (std::size_t k = have; k < dirs.size(); ++k)
            missing.insert(fmt::format("{}/{}", root == "/" ? "" : root, join_path(std::span<const std::string>(dirs.data(), k + 1))));
        pre.files.push_back(std::move(entry));
    }
    pre.missing_dirs.assign(missing.begin(), missing.end());
    std::sort(pre.missing_dirs.begin(), pre.missing_dirs.end(), [](const std::string& a, const std::string& b) {
        auto depth = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
        return depth(a) != depth(b) ? depth(a) < depth(b) : a < b;
    });
    return pre;
}

struct MergeState {
    json pre;                                       // the first record
    std::map<std::uint32_t, json> intents;          // index → intent record
    std::set<std::uint32_t> placed;
};

Result<std::optional<MergeState>> load_record(const std::string& record_fd_path) {
    auto contents = read_journal(record_fd_path, k_merge_journal_kind);
    if (!contents.ok()) {
        if (contents.error().is(ErrorCode::NOT_FOUND)) return std::optional<MergeState>();
        return contents.take_error();
    }
    MergeState s;
    for (auto& rec : contents.value().records) {
        if (rec.contains("pre")) s.pre = rec;
        else if (rec.contains("intent")) s.intents[rec.at("intent").get<std::uint32_t>()] = rec;
        else if (rec.contains("placed")) s.placed.insert(rec.at("placed").get<std::uint32_t>());
    }
    if (s.pre.is_null()) return std::optional<MergeState>();  // crashed before the pre-state landed
    return std::optional<MergeState>(std::move(s));
}

// Where a copy stopped at the free-space floor.
struct FloorStop {
    std::uint64_t free_bytes = 0;
    std::uint64_t need_bytes = 0;  // what the copy still had to write
    std::string path;
};

struct Merger {
    OpContext& ctx;
    std::string save_path;
    std::string job_dir;
    std::string job_id;
    UniqueFd payload;  // job/p (may be invalid when every file was placed and the dir is gone)
    std::map<std::uint32_t, std::string> manifest_hashes;
    JournalWriter* journal = nullptr;
    MergeState state;
    std::uint64_t min_free = 0;  // 0: no floor
    std::optional<FloorStop> floor;
    std::uint64_t bytes_copied = 0, bytes_renamed = 0;
};

// Whether writing `need` more bytes on the filesystem of `fd` keeps it at or above the floor;
// records the stop when not. A filesystem that does not say its free space is not judged.
bool above_floor(Merger& m, int fd, std::uint64_t need, const std::string& path) {
    if (!m.min_free) return true;
    auto free = free_bytes_of(fd);
    if (!free || *free >= m.min_free + need) return true;
    m.floor = FloorStop{*free, need, path};
    return false;
}

std::string temp_name(const Merger& m, std::uint32_t index) { return merge_temp_name(m.job_id, index); }

Status append(Merger& m, const json& rec, bool sync_now) {
    ARCHCTL_TRY_STATUS(m.journal->append(rec));
    if (sync_now) ARCHCTL_TRY_STATUS(m.journal->flush());
    return {};
}

// false when the kernel refuses the rename across mounts (EXDEV): the caller copies instead.
Result<bool> move_by_rename(Merger& m, const DeltaFile& f, int dest_dir, const struct stat& received) {
    json intent = {{"intent", f.index}, {"how", "rename"}, {"ino", static_cast<std::uint64_t>(received.st_ino)}, {"size", f.size}};
    ARCHCTL_TRY_STATUS(append(m, intent, true));
    m.state.intents[f.index] = intent;
    crash_point("merge.intent");
    std::string name = std::to_string(f.index);
    if (::renameat2(m.payload.get(), name.c_str(), dest_dir, f.components.back().c_str(), RENAME_NOREPLACE) != 0) {
        if (errno == EXDEV) return false;  // the intent's inode never reaches the destination
        return errno_error("cannot move received file into", fmt::format("{}/{}", m.save_path, f.path), errno);
    }
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dest_dir, m.save_path));
    ARCHCTL_TRY_STATUS(fsync_fd_dir(m.payload.get(), m.job_dir));
    crash_point("merge.placed");
    m.bytes_renamed += f.size;
    return true;
}

enum class Placed { done, cancelled, floor };

Result<Placed> move_by_copy(Merger& m, const DeltaFile& f, int dest_dir, int received_fd) {
    std::string dest = fmt::format("{}/{}", m.save_path, f.path);
    TempFile tmp(dest_dir, temp_name(m, f.index));
    ::unlinkat(dest_dir, tmp.name().c_str(), 0);
    if (!above_floor(m, dest_dir, f.size, dest)) return Placed::floor;
    UniqueFd out(::openat(dest_dir, tmp.name().c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!out.valid()) {
        int err = errno;
        if (err == EEXIST) tmp.placed();  // not ours to remove: something else made it in between
        return errno_error("cannot create temp file for", dest, err);
    }
    Xxh3Hasher hasher;
    std::uint64_t written = 0;
    ChunkGate gate = [&](std::uint64_t chunk) {
        m.bytes_copied += chunk;
        written += chunk;
        if (m.ctx.cancelled()) return false;
        // The space the rest of this file needs is allocated as it is written: what is left
        // must still fit above the floor (a concurrent writer may have taken it).
        return above_floor(m, out.get(), f.size - std::min(f.size, written), dest);
    };
    auto copied = copy_and_hash(received_fd, out.get(), 0, hasher, gate, dest);
    if (!copied.ok()) {
        // A full filesystem (no floor, or something else filled it) is a stop like the floor:
        // nothing is lost, and the next run copies again once there is room.
        if (!copied.error().is(ErrorCode::DISK_INSUFFICIENT)) return copied.take_error();
        m.floor = FloorStop{free_bytes_of(dest_dir).value_or(0), f.size - std::min(f.size, written), dest};
        return Placed::floor;
    }
    const CopyOutcome& c = copied.value();
    if (c.stopped) return m.floor ? Placed::floor : Placed::cancelled;
    m.floor.reset();  // a floor seen at the last chunk applies to the next file
    const std::string& expected = m.manifest_hashes[f.index];
    if (c.bytes != f.size || (!expected.empty() && hasher.hex_digest() != expected))
        return Error(ErrorCode::TRANSIT_MISMATCH, fmt::format("cannot merge '{}': the received file differs from the staged one", dest));
    if (::fsync(out.get()) != 0) return errno_error("cannot fsync", dest, errno);
    struct stat st {};
    ::fstat(out.get(), &st);
    json intent = {{"intent", f.index}, {"how", "copy"}, {"ino", static_cast<std::uint64_t>(st.st_ino)}, {"size", f.size}};
    ARCHCTL_TRY_STATUS(append(m, intent, true));
    m.state.intents[f.index] = intent;
    crash_point("merge.intent");
    if (::renameat2(dest_dir, tmp.name().c_str(), dest_dir, f.components.back().c_str(), RENAME_NOREPLACE) != 0)
        return errno_error("cannot rename into", dest, errno);
    tmp.placed();
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dest_dir, m.save_path));
    crash_point("merge.placed");
    return Placed::done;
}

// Removes the received copy once its copy is in place (the route folder then carries a delete).
Status drop_received(Merger& m, const DeltaFile& f) {
    if (!m.payload.valid()) return {};
    if (::unlinkat(m.payload.get(), std::to_string(f.index).c_str(), 0) != 0 && errno != ENOENT)
        return errno_error("cannot remove received file", fmt::format("{}/{}", m.job_dir, payload_name(f.index)), errno);
    crash_point("merge.received_removed");
    return {};
}

Result<Placed> place_one(Merger& m, const DeltaFile& f, const json& pre, int dest_dir) {
    if (pre.at("state") == "preexisting") return Placed::done;
    std::string dest = fmt::format("{}/{}", m.save_path, f.path);
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(dest_dir, f.components.back(), dest));
    auto intent = m.state.intents.find(f.index);
    if (st) {
        bool ours = intent != m.state.intents.end() && intent->second.at("ino").get<std::uint64_t>() == st->st_ino;
        if (!ours) return conflict(dest, "an entry appeared there after the merge recorded it as absent");
        if (intent->second.at("how") == "copy") ARCHCTL_TRY_STATUS(drop_received(m, f));
        return Placed::done;
    }
    std::string received_display = fmt::format("{}/{}", m.job_dir, payload_name(f.index));
    if (!m.payload.valid()) return Error(ErrorCode::NOT_RECEIVED, fmt::format("cannot merge '{}': '{}' has not arrived", dest, received_display));
    struct stat rs {};
    ARCHCTL_TRY_ASSIGN(UniqueFd received, open_regular(m.payload.get(), std::to_string(f.index), received_display, &rs));
    if (static_cast<std::uint64_t>(rs.st_size) != f.size)
        return Error(ErrorCode::NOT_RECEIVED, fmt::format("cannot merge '{}': '{}' has {} bytes, expected {}", dest, received_display,
                                                 rs.st_size, f.size));
    struct stat ds {};
    ::fstat(dest_dir, &ds);
    if (ds.st_dev == rs.st_dev && rs.st_nlink == 1) {
        ARCHCTL_TRY_ASSIGN(bool moved, move_by_rename(m, f, dest_dir, rs));
        if (moved) return Placed::done;
    }
    ARCHCTL_TRY_ASSIGN(Placed p, move_by_copy(m, f, dest_dir, received.get()));
    if (p == Placed::done) ARCHCTL_TRY_STATUS(drop_received(m, f));
    return p;
}

// Removes the temp files a stopped or failed earlier run of this job left beside the
// destinations (one per delta file: its name holds the job id and the file index).
void sweep_temps(const RootSet& roots, const std::string& save_path, const std::string& job_id, const std::vector<DeltaFile>& files) {
    for (const auto& f : files) {
        auto parent = roots.open_parent(fmt::format("{}/{}", save_path, f.path));
        if (parent.ok()) ::unlinkat(parent.value().dir.get(), merge_temp_name(job_id, f.index).c_str(), 0);
    }
}

MergedFile provenance(const Merger& m, const DeltaFile& f, const json& pre) {
    MergedFile entry{f.index, f.path, "", "", 0};
    if (pre.at("state") == "preexisting") {
        entry.provenance = "preexisting";
        entry.how = "none";
        entry.ino = pre.at("ino").get<std::uint64_t>();
    } else {
        const json& intent = m.state.intents.at(f.index);
        entry.provenance = "created";
        entry.how = intent.at("how").get<std::string>();
        entry.ino = intent.at("ino").get<std::uint64_t>();
    }
    return entry;
}

std::map<std::uint32_t, std::string> manifest_hashes(int job_fd, const std::string& job_dir) {
    std::map<std::uint32_t, std::string> out;
    auto text = read_small_in(job_fd, k_manifest_name, job_dir + "/" + k_manifest_name);
    if (!text.ok()) return out;
    auto parsed = json::parse(text.value(), nullptr, false);
    if (parsed.is_discarded()) return out;
    auto m = Manifest::from_json(parsed);
    if (m.ok())
        for (const auto& f : m.value().files) out[f.index] = f.xxh3;
    return out;
}

}  // namespace

Result<json> op_merge(OpContext& ctx, const json& args) {
    auto request = args.get<MergeRequest>();
    const std::string& save_path = request.save_path;
    const std::string& job_dir = request.job_dir;
    ARCHCTL_TRY_ASSIGN(std::vector<DeltaFile> files, parse_files(request.files));
    ARCHCTL_TRY_ASSIGN(std::string record_path, record_path_for(ctx.roots(), request.record_path, job_dir, save_path));
    ARCHCTL_TRY_ASSIGN(UniqueFd job, ctx.roots().open_dir(job_dir));
    Merger m{ctx, save_path, job_dir, job_id_of(job_dir), {}, manifest_hashes(job.get(), job_dir), nullptr, {}, request.min_free, {}, 0, 0};
    sweep_temps(ctx.roots(), save_path, m.job_id, files);
    if (auto p = open_dir_below(job.get(), std::vector<std::string>{k_payload_dir}, job_dir); p.ok()) m.payload = std::move(p).value();

    // The record's directory may itself be new; it is archctl's own, outside the save path.
    std::vector<std::string> ignored;
    auto record_parent = ctx.roots().open_parent(record_path);
    std::optional<MergeState> loaded;
    if (record_parent.ok()) {
        ARCHCTL_TRY_ASSIGN(loaded, load_record(fd_path(record_parent.value().dir.get(), record_parent.value().name)));
    }
    bool fresh = !loaded;
    if (fresh) {
        ARCHCTL_TRY_ASSIGN(PreState pre, record_pre_state(ctx.roots(), save_path, files));  // conflicts change nothing
        ARCHCTL_TRY_ASSIGN(record_parent, ctx.roots().open_parent(record_path, CreateDirs::yes, &ignored));
        MergeState s;
        s.pre = {{"pre", pre.files}, {"dirs", pre.missing_dirs}, {"save_path", save_path}, {"job_dir", job_dir}};
        loaded = std::move(s);
    }
    ARCHCTL_TRY_ASSIGN(JournalWriter journal, JournalWriter::open(fd_path(record_parent.value().dir.get(), record_parent.value().name),
                                                                  k_merge_journal_kind, 1, SyncPolicy::batched, 256));
    m.journal = &journal;
    m.state = std::move(*loaded);
    if (fresh) {
        ARCHCTL_TRY_STATUS(append(m, m.state.pre, true));
        crash_point("merge.recorded");
    }
    std::map<std::uint32_t, json> pre_by_index;
    for (const auto& p : m.state.pre.at("pre")) pre_by_index[p.at("i").get<std::uint32_t>()] = p;

    ARCHCTL_TRY_ASSIGN(LocatedPath loc, ctx.roots().locate(save_path));
    DirCache dirs(ctx.roots().root_fd(loc.root), ctx.roots().paths()[loc.root]);
    MergeResult out;
    out.record_path = record_path;
    auto stopped = [&](const char* why) -> Result<json> {
        ARCHCTL_TRY_STATUS(journal.flush());
        MergeResult r;
        r.stopped = why;
        r.record_path = record_path;
        r.bytes_copied = m.bytes_copied;
        if (m.floor) {
            r.free_bytes = m.floor->free_bytes;
            r.need_bytes = m.floor->need_bytes;
            r.stopped_at = m.floor->path;
        }
        return json(r);
    };
    Progress progress;
    progress.files_total = files.size();
    for (const auto& f : files) {
        if (ctx.cancelled()) return stopped("cancel");
        auto pre = pre_by_index.find(f.index);
        if (pre == pre_by_index.end())
            return Error(ErrorCode::BAD_REQUEST, fmt::format("cannot merge file {}: it is not in this job's merge record '{}'", f.index, record_path));
        std::vector<std::string> dir_comps = loc.components;
        dir_comps.insert(dir_comps.end(), f.components.begin(), f.components.end() - 1);
        ARCHCTL_TRY_ASSIGN(int dest_dir, dirs.dir(dir_comps, CreateDirs::yes, &ignored));
        ARCHCTL_TRY_ASSIGN(Placed placed, place_one(m, f, pre->second, dest_dir));
        if (placed == Placed::cancelled) return stopped("cancel");
        if (placed == Placed::floor) return stopped("disk");
        if (!m.state.placed.count(f.index)) {
            ARCHCTL_TRY_STATUS(append(m, {{"placed", f.index}}, false));
            m.state.placed.insert(f.index);
        }
        out.provenance.push_back(provenance(m, f, pre->second));
        ++progress.files;
        progress.bytes += f.size;
        progress.bytes_copied = m.bytes_copied;
        ctx.progress(progress);
    }
    ARCHCTL_TRY_STATUS(journal.flush());
    out.complete = true;
    out.dirs_created = m.state.pre.at("dirs").get<std::vector<std::string>>();
    out.bytes_copied = m.bytes_copied;
    out.bytes_renamed = m.bytes_renamed;
    return json(out);
}

Result<json> op_merge_record(OpContext& ctx, const json& args) {
    auto request = args.get<MergeRecordRequest>();
    ARCHCTL_TRY_ASSIGN(std::string record_path, record_path_for(ctx.roots(), request.record_path, request.job_dir, request.save_path));
    MergeRecordResult out{"absent", record_path, {}, {}};
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok()) {
        if (parent.error().is(ErrorCode::NOT_FOUND)) return json(out);
        return parent.take_error();
    }
    ARCHCTL_TRY_ASSIGN(std::optional<MergeState> state, load_record(fd_path(parent.value().dir.get(), parent.value().name)));
    if (!state) return json(out);
    out.record = "present";
    for (const auto& pre : state->pre.at("pre")) {
        auto index = pre.at("i").get<std::uint32_t>();
        out.files.push_back(index);
        std::string dest = fmt::format("{}/{}", request.save_path, pre.at("path").get<std::string>());
        auto dir = ctx.roots().open_parent(dest);
        if (!dir.ok()) {
            if (dir.error().is(ErrorCode::NOT_FOUND)) continue;
            return dir.take_error();
        }
        ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir.value().dir.get(), dir.value().name, dest));
        auto intent = state->intents.find(index);
        if (!st && intent != state->intents.end()) {  // moved to qBittorrent's incomplete name
            ARCHCTL_TRY_ASSIGN(st, stat_in(dir.value().dir.get(), dir.value().name + k_incomplete_suffix, dest + k_incomplete_suffix));
        }
        if (!st || !S_ISREG(st->st_mode)) continue;
        bool placed = pre.at("state") == "preexisting"
                          ? pre.value("ino", std::uint64_t{0}) == st->st_ino
                          : intent != state->intents.end() && intent->second.at("ino").get<std::uint64_t>() == st->st_ino;
        if (placed) out.placed.push_back(index);
    }
    return json(out);
}

Result<json> op_adopt_incomplete(OpContext& ctx, const json& args) {
    auto request = args.get<AdoptIncompleteRequest>();
    if (request.suffix.empty() || request.suffix.find('/') != std::string::npos)
        return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid arguments: suffix '{}' is not a file name suffix", request.suffix));
    ARCHCTL_TRY_ASSIGN(std::string record_path, record_path_for(ctx.roots(), request.record_path, request.job_dir, request.save_path));
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok()) return parent.take_error();
    ARCHCTL_TRY_ASSIGN(std::optional<MergeState> state, load_record(fd_path(parent.value().dir.get(), parent.value().name)));
    if (!state) return Error(ErrorCode::NOT_FOUND, fmt::format("no merge record at '{}'", record_path));
    std::map<std::uint32_t, json> pre_by_index;
    for (const auto& p : state->pre.at("pre")) pre_by_index[p.at("i").get<std::uint32_t>()] = p;
    AdoptIncompleteResult out;
    for (std::uint32_t index : request.indices) {
        auto pre = pre_by_index.find(index);
        auto intent = state->intents.find(index);
        if (pre == pre_by_index.end() || pre->second.at("state") != "absent" || intent == state->intents.end()) {
            out.foreign.push_back(index);  // not a file this job placed
            continue;
        }
        std::string dest = fmt::format("{}/{}", request.save_path, pre->second.at("path").get<std::string>());
        auto dir = ctx.roots().open_parent(dest);
        if (!dir.ok()) {
            if (dir.error().is(ErrorCode::NOT_FOUND)) {
                out.foreign.push_back(index);
                continue;
            }
            return dir.take_error();
        }
        int dfd = dir.value().dir.get();
        const std::string& name = dir.value().name;
        std::string suffixed_name = name + request.suffix;
        auto ino = intent->second.at("ino").get<std::uint64_t>();
        auto size = intent->second.value("size", std::uint64_t{0});
        ARCHCTL_TRY_ASSIGN(auto plain, stat_in(dfd, name, dest));
        ARCHCTL_TRY_ASSIGN(auto suffixed, stat_in(dfd, suffixed_name, dest + request.suffix));
        bool plain_ours = plain && S_ISREG(plain->st_mode) && plain->st_ino == ino;
        if (suffixed && S_ISREG(suffixed->st_mode) && suffixed->st_ino == ino) {
            out.suffixed.push_back(index);
            continue;
        }
        if (!plain_ours) {
            out.foreign.push_back(index);
            continue;
        }
        if (!suffixed) {
            out.plain.push_back(index);
            continue;
        }
        // Only what qBittorrent allocated after the merge is replaced: a suffixed file that was
        // there before, is not a regular single-link file, is larger than the file, or holds
        // any non-zero byte (a real partial download) stays as it is.
        bool allocated = pre->second.value("suffixed", std::string("unknown")) == "absent" && S_ISREG(suffixed->st_mode) &&
                         suffixed->st_nlink == 1 && static_cast<std::uint64_t>(suffixed->st_size) <= size;
        if (allocated) {
            ARCHCTL_TRY_ASSIGN(allocated, all_zero(dfd, suffixed_name, dest + request.suffix));
        }
        if (!allocated) {
            out.foreign.push_back(index);
            continue;
        }
        if (!request.adopt) {
            out.pending.push_back(index);
            continue;
        }
        if (::renameat(dfd, name.c_str(), dfd, suffixed_name.c_str()) != 0)
            return errno_error("cannot move this job's file to", dest + request.suffix, errno);
        ARCHCTL_TRY_STATUS(fsync_fd_dir(dfd, dest));
        crash_point("merge.adopted");
        out.suffixed.push_back(index);
    }
    return json(out);
}

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
        bool allocated = pre.value("suffixed", std::string("unknown")) == "absent" && S_ISREG(st->st_mode) && st->st_nlink == 1 &&
                         static_cast<std::uint64_t>(st->st_size) <= size && !referenced.count(dest) && !referenced.count(shown);
        if (allocated) {
            ARCHCTL_TRY_ASSIGN(allocated, all_zero(dir, suffixed_name, shown));
        }
        if (!allocated) {
            out.kept.push_back(KeptEntry{shown, "it holds bytes this job did not place", "not_owned"});
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
                out.kept.push_back(KeptEntry{d, "directory is not empty", "not_empty"});
            else if (errno != ENOENT) return errno_error("cannot remove directory", d, errno);
            continue;
        }
        crash_point("unmerge.rmdir");
        out.removed.push_back(d);
    }
    return {};
}

}  // namespace

Result<json> op_unmerge(OpContext& ctx, const json& args) {
    auto request = args.get<UnmergeRequest>();
    const std::string& save_path = request.save_path;
    ARCHCTL_TRY_ASSIGN(std::string record_path, record_path_for(ctx.roots(), request.record_path, request.job_dir, save_path));
    std::set<std::string> referenced(request.referenced.begin(), request.referenced.end());
    auto parent = ctx.roots().open_parent(record_path);
    if (!parent.ok() && !parent.error().is(ErrorCode::NOT_FOUND)) return parent.take_error();
    std::optional<MergeState> state;
    if (parent.ok()) {
        ARCHCTL_TRY_ASSIGN(state, load_record(fd_path(parent.value().dir.get(), parent.value().name)));
    }
    if (!state) return json(UnmergeResult{"absent", {}, {}, {}});
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
    removal.record = "removed";
    return json(removal);
}

}  // namespace archctl::node
