// merge (target node): move received files into the qB save path (docs/design.md "Step 3: merge").
//
// merge first removes this job's temp files a stopped or failed run may have left beside the
// destinations, then records, durably and before any change, the pre-merge state of every
// delta path and the directories the job will create (lib/node/server/merge_journal.hpp); a
// different-size or non-regular entry at a delta path is a conflict that changes nothing. It then
// moves each received file into place with rename(RENAME_NOREPLACE) out of the route folder (one
// filesystem, and the received file has no other link), else copies it into a temp file beside
// the destination (hashing in the same pass, checked against the manifest's xxh3 when it has
// one), renames that into place and removes the received file. A placed file therefore never
// shares an inode with anything in a Syncthing folder (docs/torrent-format.md "Hard links through
// Syncthing"). A same-size regular file already at a delta path is reused untouched (provenance
// "preexisting"). Every move is preceded by an intent record with the inode that will appear at
// the destination, so a rerun (or unmerge, op_unmerge.cpp) recognises the job's own files.
//
// Durability costs a few fsyncs per batch of files, not three per file (a 100,000-file torrent
// merged at ~500 files/s with one fsync for each intent, destination and received directory):
// before a batch of k_intent_batch files is moved, the intents of every file in it that will be
// renamed are appended and synced at once; the directories its renames changed (destinations and
// received shards) are synced when the batch ends, before the next one starts and before merge
// answers. An intent whose rename a crash cut off, or that was lost with an unsynced directory,
// names a file still in the route folder: the rerun renames it again. A copy keeps its own order
// (temp file synced, intent synced, rename, directory synced).
//
// The free-space floor (`min_free`) holds for every copy: a copy that would take the
// destination's filesystem below it is not started, and one that reaches it (something else
// writes there too) stops at the next chunk boundary; a copy that finds the filesystem full
// stops the same way. The merge then answers stopped "disk" with the free space it saw, and the
// temp file of that copy is gone. Every failure of a copy removes its temp file as well.
//
// Crash points: merge.recorded, merge.intent, merge.placed, merge.received_removed (plus
// lib/base's journal.synced).

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/journal.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/merge_journal.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/payload_dirs.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

// Where a copy stopped at the free-space floor.
struct FloorStop {
    std::uint64_t free_bytes = 0;
    std::uint64_t need_bytes = 0;  // what the copy still had to write
    std::string path;
};

struct Merger {
    OpContext& ctx;
    DirCache* dirs = nullptr;  // destination directories below the save path's root
    std::string save_path;
    std::string job_dir;
    std::string job_id;
    PayloadDirs payload;  // job/p and its shards (absent when every file was placed and the dir is gone)
    std::map<std::uint32_t, std::string> manifest_hashes;
    JournalWriter* journal = nullptr;
    MergeState state;
    std::uint64_t min_free = 0;  // 0: no floor
    std::optional<FloorStop> floor;
    std::uint64_t bytes_copied = 0, bytes_renamed = 0;
    // Directories renames changed since the last sync_moved(): destination directories (their
    // components below the root) and received files (one index per shard).
    std::set<std::vector<std::string>> moved_into;
    std::set<std::uint32_t> moved_from;  // the first index of each shard (flat: 0 for p/ itself)
};

// Files per batch whose rename intents are synced at once.
constexpr std::size_t k_intent_batch = 4096;

// Syncs the directories the renames since the last call changed.
Status sync_moved(Merger& m) {
    for (const auto& comps : m.moved_into) {
        ARCHCTL_TRY_ASSIGN(int dir, m.dirs->dir(comps));
        ARCHCTL_TRY_STATUS(fsync_fd_dir(dir, m.save_path));
    }
    m.moved_into.clear();
    for (std::uint32_t index : m.moved_from) {
        ARCHCTL_TRY_ASSIGN(int dir, m.payload.dir_of(index));
        if (dir >= 0) ARCHCTL_TRY_STATUS(fsync_fd_dir(dir, m.job_dir));
    }
    m.moved_from.clear();
    return {};
}

// Whether `intent` is a rename of the received inode `ino` (recorded by this run's batch or an
// earlier run).
bool is_rename_intent(const Merger& m, std::uint32_t index, std::uint64_t ino) {
    auto it = m.state.intents.find(index);
    return it != m.state.intents.end() && it->second.at("how") == "rename" && it->second.at("ino").get<std::uint64_t>() == ino;
}

// Whether writing `need` more bytes on the filesystem of `fd` keeps it at or above the floor
// (0: whether they fit); records the stop when not. A filesystem that does not say its free
// space is not judged.
bool above_floor(Merger& m, int fd, std::uint64_t need, const std::string& path) {
    auto free = free_bytes_of(fd);
    if (!free || leaves_floor(*free, need, m.min_free)) return true;
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
Result<bool> move_by_rename(Merger& m, const DeltaFile& f, const std::vector<std::string>& dest_comps, int dest_dir, int received_dir,
                            const struct stat& received) {
    if (!is_rename_intent(m, f.index, static_cast<std::uint64_t>(received.st_ino))) {
        json intent = {{"intent", f.index}, {"how", "rename"}, {"ino", static_cast<std::uint64_t>(received.st_ino)}, {"size", f.size}};
        ARCHCTL_TRY_STATUS(append(m, intent, true));
        m.state.intents[f.index] = intent;
        crash_point("merge.intent");
    }
    std::string name = std::to_string(f.index);
    if (::renameat2(received_dir, name.c_str(), dest_dir, f.components.back().c_str(), RENAME_NOREPLACE) != 0) {
        if (errno == EXDEV) return false;  // the intent's inode never reaches the destination
        return errno_error("cannot move received file into", fmt::format("{}/{}", m.save_path, f.path), errno);
    }
    m.moved_into.insert(dest_comps);
    m.moved_from.insert(m.payload.layout() == PayloadLayout::sharded ? shard_of(f.index) * k_shard_files : 0);
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
    ARCHCTL_TRY_ASSIGN(int dir, m.payload.dir_of(f.index));
    if (dir < 0) return {};
    if (::unlinkat(dir, std::to_string(f.index).c_str(), 0) != 0 && errno != ENOENT)
        return errno_error("cannot remove received file", m.payload.display(f.index), errno);
    crash_point("merge.received_removed");
    return {};
}

Result<Placed> place_one(Merger& m, const DeltaFile& f, const json& pre, const std::vector<std::string>& dest_comps, int dest_dir) {
    if (pre.at("state") == "preexisting") return Placed::done;
    std::string dest = fmt::format("{}/{}", m.save_path, f.path);
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(dest_dir, f.components.back(), dest));
    auto intent = m.state.intents.find(f.index);
    if (st) {
        bool ours = intent != m.state.intents.end() && intent->second.at("ino").get<std::uint64_t>() == st->st_ino;
        if (!ours) return merge_conflict(dest, "an entry appeared there after the merge recorded it as absent");
        if (intent->second.at("how") == "copy") ARCHCTL_TRY_STATUS(drop_received(m, f));
        return Placed::done;
    }
    std::string received_display = m.payload.display(f.index);
    ARCHCTL_TRY_ASSIGN(int received_dir, m.payload.dir_of(f.index));
    if (received_dir < 0) return Error(ErrorCode::NOT_RECEIVED, fmt::format("cannot merge '{}': '{}' has not arrived", dest, received_display));
    struct stat rs {};
    ARCHCTL_TRY_ASSIGN(UniqueFd received, open_regular(received_dir, std::to_string(f.index), received_display, &rs));
    if (static_cast<std::uint64_t>(rs.st_size) != f.size)
        return Error(ErrorCode::NOT_RECEIVED, fmt::format("cannot merge '{}': '{}' has {} bytes, expected {}", dest, received_display,
                                                 rs.st_size, f.size));
    struct stat ds {};
    ::fstat(dest_dir, &ds);
    if (ds.st_dev == rs.st_dev && rs.st_nlink == 1) {
        ARCHCTL_TRY_ASSIGN(bool moved, move_by_rename(m, f, dest_comps, dest_dir, received_dir, rs));
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

// The job's merge record, open for appending: read back when a run got that far, else started
// with the pre-state (durable before the merge changes anything).
struct OpenedRecord {
    JournalWriter journal;
    MergeState state;
    bool fresh = false;  // this run recorded the pre-state
};

Result<OpenedRecord> open_record(const RootSet& roots, const MergeRequest& request, const std::vector<DeltaFile>& files,
                                 const std::string& record_path) {
    auto parent = roots.open_parent(record_path);
    std::optional<MergeState> loaded;
    if (parent.ok()) {
        ARCHCTL_TRY_ASSIGN(loaded, load_merge_record(fd_path(parent.value().dir.get(), parent.value().name)));
    }
    const bool fresh = !loaded;
    if (fresh) {
        ARCHCTL_TRY_ASSIGN(PreState pre, record_pre_state(roots, request.save_path, files));  // conflicts change nothing
        // The record's directory may itself be new; it is archctl's own, outside the save path.
        std::vector<std::string> created;
        ARCHCTL_TRY_ASSIGN(parent, roots.open_parent(record_path, CreateDirs::yes, &created));
        loaded = MergeState{};
        loaded->pre = {{"pre", std::move(pre.files)}, {"dirs", pre.missing_dirs}, {"save_path", request.save_path}, {"job_dir", request.job_dir}};
    }
    ARCHCTL_TRY_ASSIGN(JournalWriter journal, JournalWriter::open(fd_path(parent.value().dir.get(), parent.value().name),
                                                                  k_merge_journal_kind, 1, SyncPolicy::batched, 256));
    if (fresh) {
        ARCHCTL_TRY_STATUS(journal.append(loaded->pre));
        ARCHCTL_TRY_STATUS(journal.flush());
        crash_point("merge.recorded");
    }
    return OpenedRecord{std::move(journal), std::move(*loaded), fresh};
}

// The answer of a merge that stopped at a file (cancel, or disk at the floor).
// The destination directory of `f`: its components below the save path's root.
std::vector<std::string> dest_components(const LocatedPath& loc, const DeltaFile& f) {
    std::vector<std::string> comps = loc.components;
    comps.insert(comps.end(), f.components.begin(), f.components.end() - 1);
    return comps;
}

// Appends, and syncs at once, the rename intents of the files in [begin, end) that place_one will
// move by rename: not preexisting, the destination absent, the received file of the expected
// size with no other link, on the destination's filesystem. Anything else is left to place_one,
// which records its own intent (and a rename refused across mounts becomes a copy with one).
Status record_rename_intents(Merger& m, const std::vector<DeltaFile>& files, std::size_t begin, std::size_t end,
                             const PreByIndex& pre_of, const LocatedPath& loc, std::vector<std::string>& created) {
    std::size_t recorded = 0;
    for (std::size_t i = begin; i < end; ++i) {
        const DeltaFile& f = files[i];
        auto pre = pre_of.find(f.index);
        if (pre == pre_of.end() || pre->second->at("state") == "preexisting") continue;
        ARCHCTL_TRY_ASSIGN(int dest_dir, m.dirs->dir(dest_components(loc, f), CreateDirs::yes, &created));
        struct stat ds {}, st {}, rs {};
        if (::fstatat(dest_dir, f.components.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) continue;
        if (::fstat(dest_dir, &ds) != 0) continue;
        ARCHCTL_TRY_ASSIGN(int received_dir, m.payload.dir_of(f.index));
        if (received_dir < 0 || ::fstatat(received_dir, std::to_string(f.index).c_str(), &rs, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(rs.st_mode) || rs.st_nlink != 1 || rs.st_dev != ds.st_dev || static_cast<std::uint64_t>(rs.st_size) != f.size) continue;
        if (is_rename_intent(m, f.index, static_cast<std::uint64_t>(rs.st_ino))) continue;
        json intent = {{"intent", f.index}, {"how", "rename"}, {"ino", static_cast<std::uint64_t>(rs.st_ino)}, {"size", f.size}};
        ARCHCTL_TRY_STATUS(append(m, intent, false));
        m.state.intents[f.index] = std::move(intent);
        ++recorded;
    }
    if (recorded == 0) return {};
    ARCHCTL_TRY_STATUS(m.journal->flush());
    crash_point("merge.intent");
    return {};
}

Result<json> stopped_merge(Merger& m, const std::string& record_path, Stop why) {
    ARCHCTL_TRY_STATUS(sync_moved(m));
    ARCHCTL_TRY_STATUS(m.journal->flush());
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
}

}  // namespace

Result<json> op_merge(OpContext& ctx, json args) {
    auto request = args.get<MergeRequest>();
    args = json();  // read into request; not held while the files are merged
    const std::string& save_path = request.save_path;
    const std::string& job_dir = request.job_dir;
    ARCHCTL_TRY_ASSIGN(std::vector<DeltaFile> files, parse_delta_files(request.files));
    std::vector<FileEntry>().swap(request.files);  // read into `files`
    ARCHCTL_TRY_ASSIGN(std::string record_path, merge_record_path_for(ctx.roots(), request.record_path, job_dir, save_path));
    ARCHCTL_TRY_ASSIGN(UniqueFd job, ctx.roots().open_dir(job_dir));
    Merger m{ctx, nullptr, save_path, job_dir, job_id_of(job_dir), PayloadDirs({}, job_dir, request.layout), manifest_hashes(job.get(), job_dir),
             nullptr, {}, request.min_free, {}, 0, 0, {}, {}};
    sweep_temps(ctx.roots(), save_path, m.job_id, files);
    if (auto p = open_dir_below(job.get(), std::vector<std::string>{k_payload_dir}, job_dir); p.ok())
        m.payload = PayloadDirs(std::move(p).value(), job_dir, request.layout);
    ARCHCTL_TRY_ASSIGN(OpenedRecord record, open_record(ctx.roots(), request, files, record_path));
    m.journal = &record.journal;
    m.state = std::move(record.state);
    const PreByIndex pre_of = pre_by_index(m.state);

    ARCHCTL_TRY_ASSIGN(LocatedPath loc, ctx.roots().locate(save_path));
    DirCache dirs(ctx.roots().root_fd(loc.root), ctx.roots().paths()[loc.root]);
    m.dirs = &dirs;
    std::vector<std::string> created;
    MergeResult out;
    out.record_path = record_path;
    Progress progress;
    progress.files_total = files.size();
    for (std::size_t i = 0; i < files.size(); ++i) {
        const DeltaFile& f = files[i];
        if (i % k_intent_batch == 0) {
            ARCHCTL_TRY_STATUS(sync_moved(m));
            ARCHCTL_TRY_STATUS(record_rename_intents(m, files, i, std::min(files.size(), i + k_intent_batch), pre_of, loc, created));
        }
        if (ctx.cancelled()) return stopped_merge(m, record_path, Stop::cancel);
        auto pre = pre_of.find(f.index);
        if (pre == pre_of.end())
            return Error(ErrorCode::BAD_REQUEST, fmt::format("cannot merge file {}: it is not in this job's merge record '{}'", f.index, record_path));
        const std::vector<std::string> dir_comps = dest_components(loc, f);
        ARCHCTL_TRY_ASSIGN(int dest_dir, dirs.dir(dir_comps, CreateDirs::yes, &created));
        ARCHCTL_TRY_ASSIGN(Placed placed, place_one(m, f, *pre->second, dir_comps, dest_dir));
        if (placed == Placed::cancelled) return stopped_merge(m, record_path, Stop::cancel);
        if (placed == Placed::floor) return stopped_merge(m, record_path, Stop::disk);
        if (!m.state.placed.count(f.index)) {
            ARCHCTL_TRY_STATUS(append(m, {{"placed", f.index}}, false));
            m.state.placed.insert(f.index);
        }
        out.provenance.push_back(provenance(m, f, *pre->second));
        ++progress.files;
        progress.bytes += f.size;
        progress.bytes_copied = m.bytes_copied;
        ctx.progress(progress);
    }
    ARCHCTL_TRY_STATUS(sync_moved(m));
    ARCHCTL_TRY_STATUS(record.journal.flush());
    out.complete = true;
    out.dirs_created = m.state.pre.at("dirs").get<std::vector<std::string>>();
    out.bytes_copied = m.bytes_copied;
    out.bytes_renamed = m.bytes_renamed;
    m.state = MergeState();  // the record as read (~45 MB at 100,000 files) goes before the answer is built; pre_of is not read again
    return json(out);
}

}  // namespace archctl::node
