// stage (source node): build the job directory of docs/design.md "Step 1: stage".
//
// Per file (in source-inode order; the order changes nothing else): hard link, else reflink,
// else copy (the copy hashes xxh3-128 in the same pass); a linked or cloned file is not read
// unless verify_transit asks for one hashing read. Each result is journaled (append-only) with
// the evidence a rerun checks: size, inode, mtime of the staged file and of its source. Records
// a rerun can rebuild from evidence (a link, an adopted link, a hash added to a reused record)
// are buffered and written and fsynced once per batch (k_link_record_batch) and at the end of
// the loop, before anything after it: a crash loses at most the unwritten batch, and a rerun
// adopts each of those links from its inode (same inode as its source) without reading a byte.
// Copies and clones go to a temp name, are fsynced, journaled (flushing every buffered record
// before theirs), then renamed into place (a rename keeps the inode, so the record stays valid).
// While a copy is written, its written part is pushed to the disk behind it (write-behind), so
// the final fsync finds little left. A budget or cancel stop lands between chunks: the partial
// copy is fsynced and journaled with its length, and a rerun resumes it after re-hashing that
// prefix. A copy holds the free-space floor (min_free) of the job directory's filesystem: one
// that would cross it is not started, one that reaches it stops at a chunk boundary like a
// budget stop ("disk"), and so does one that finds the filesystem full.
// Then the auxiliary files, manifest.json (atomically) and READY, last.
//
// Crash points: stage.job_dir, stage.linked, stage.reflinked, stage.copied, stage.renamed,
// stage.partial, stage.aux, stage.manifest, stage.ready (plus lib/base's journal.synced and
//
// The request, the job directory, its journal and the manifest are here; one file's staging is
// lib/node/server/stage_file.cpp, and what both halves share lib/node/server/stage_run.hpp.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/journal.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/server/source_stamps.hpp"
#include "lib/node/server/stage_run.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {
namespace {

using namespace stage_run;

// The request (lib/node/wire/ops.hpp) checked and decoded into what the stage works with.
Result<StageArgs> parse_args(const json& raw) {
    auto request = raw.get<StageRequest>();
    StageArgs a;
    a.job_dir = request.job_dir;
    a.source_base = request.source_base;
    a.method = request.method;
    a.verify_transit = request.verify_transit;
    a.budget_bytes = request.budget_bytes.value_or(0);
    a.min_free = request.min_free;
    a.layout = request.layout;
    std::map<std::uint32_t, bool> seen;
    for (auto& f : request.files) {
        SourceFile sf;
        sf.index = f.index;
        sf.path = std::move(f.path);
        sf.size = f.size;
        ARCHCTL_TRY_ASSIGN(sf.components, split_relative(sf.path));
        if (seen[sf.index]) return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid stage request: file index {} listed twice", sf.index));
        seen[sf.index] = true;
        a.files.push_back(std::move(sf));
    }
    for (const auto& x : request.aux) {
        AuxSpec spec;
        spec.name = x.name;
        ARCHCTL_TRY_STATUS(check_aux_name(spec.name));
        if (x.data_b64) {
            auto data = base64_decode(*x.data_b64);
            if (!data.ok()) return Error(ErrorCode::BAD_REQUEST, data.error().message);
            spec.data = std::move(data).value();
        } else if (!x.present) {
            return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid auxiliary file '{}': needs data_b64 or present", spec.name));
        }
        a.aux.push_back(std::move(spec));
    }
    return a;
}

Status make_dir_in(int dirfd, const char* name, const std::string& display) {
    if (::mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST) return errno_error("cannot create directory", display, errno);
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dirfd, display));
    return {};
}

Result<UniqueFd> open_job_subdir(int job, const char* name, const std::string& display) {
    ARCHCTL_TRY_STATUS(make_dir_in(job, name, display));
    std::vector<std::string> comps{name};
    return open_dir_below(job, comps, display);
}

Status load_journal(Stager& s) {
    std::string path = fd_path(s.job.get(), k_stage_journal_name);
    auto contents = read_journal(path, k_stage_journal_kind);
    if (!contents.ok() && !contents.error().is(ErrorCode::NOT_FOUND)) return contents.take_error();
    if (contents.ok())
        for (auto& rec : contents.value().records)
            if (rec.contains("i")) s.journaled[rec.at("i").get<std::uint32_t>()] = rec;
    ARCHCTL_TRY_ASSIGN(JournalWriter w, JournalWriter::open(path, k_stage_journal_kind, 1, SyncPolicy::buffered, k_link_record_batch));
    s.journal.emplace(std::move(w));
    return {};
}

Result<std::vector<ManifestAux>> stage_aux(Stager& s) {
    std::vector<ManifestAux> out;
    if (s.args.aux.empty()) return out;
    ARCHCTL_TRY_ASSIGN(UniqueFd aux_dir, open_job_subdir(s.job.get(), k_aux_dir, s.job_display + "/" + k_aux_dir));
    for (const auto& spec : s.args.aux) {
        std::string display = fmt::format("{}/{}/{}", s.job_display, k_aux_dir, spec.name);
        if (spec.data) {
            auto existing = read_small_in(aux_dir.get(), spec.name, display);
            if (!existing.ok() || existing.value() != *spec.data) {
                ARCHCTL_TRY_STATUS(write_atomic_in(aux_dir.get(), spec.name, *spec.data, display));
                crash_point("stage.aux");
            }
        }
        struct stat st {};
        ARCHCTL_TRY_ASSIGN(UniqueFd fd, open_regular(aux_dir.get(), spec.name, display, &st));
        Xxh3Hasher h;
        ARCHCTL_TRY_ASSIGN(CopyOutcome o, hash_range(fd.get(), static_cast<std::uint64_t>(st.st_size), h, {}, display));
        out.push_back(ManifestAux{spec.name, o.bytes, h.hex_digest()});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

bool same_request(const Manifest& m, const StageArgs& a) {
    if (m.files.size() != a.files.size() || m.layout != a.layout) return false;
    std::map<std::uint32_t, const SourceFile*> by_index;
    for (const auto& f : a.files) by_index[f.index] = &f;
    for (const auto& f : m.files) {
        auto it = by_index.find(f.index);
        if (it == by_index.end() || it->second->path != f.path || it->second->size != f.size) return false;
    }
    return true;
}

StageCounters counters_of(const Counters& c) {
    StageCounters out;
    out.files_linked = c.files_linked;
    out.files_reflinked = c.files_reflinked;
    out.files_copied = c.files_copied;
    out.files_reused = c.files_reused;
    out.bytes_linked = c.bytes_linked;
    out.bytes_reflinked = c.bytes_reflinked;
    out.bytes_copied = c.bytes_copied;
    out.bytes_hashed = c.bytes_hashed;
    out.files_done = c.files_done;
    out.bytes_done = c.bytes_done;
    return out;
}

StageResult finished(const Counters& c, bool already_ready, std::string manifest_xxh3) {
    StageResult r;
    r.complete = true;
    r.already_ready = already_ready;
    r.manifest_xxh3 = std::move(manifest_xxh3);
    r.counters = counters_of(c);
    return r;
}

// READY present: the stage finished earlier; the manifest must describe this same request.
Result<std::optional<json>> finished_earlier(Stager& s) {
    ARCHCTL_TRY_ASSIGN(auto ready, stat_in(s.job.get(), k_ready_name, s.job_display + "/" + k_ready_name));
    if (!ready) return std::optional<json>();
    ARCHCTL_TRY_ASSIGN(std::string text, read_small_in(s.job.get(), k_manifest_name, s.job_display + "/" + k_manifest_name));
    auto parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded()) return Error(ErrorCode::CORRUPT, fmt::format("invalid manifest '{}/{}'", s.job_display, k_manifest_name));
    ARCHCTL_TRY_ASSIGN(Manifest m, Manifest::from_json(parsed));
    if (!same_request(m, s.args))
        return Error(ErrorCode::JOB_MISMATCH, fmt::format("cannot stage into '{}': it holds a finished job with other files", s.job_display));
    Counters c;
    c.files_done = m.files.size();
    for (const auto& f : m.files) c.bytes_done += f.size;
    return std::optional<json>(finished(c, true, xxh3_128_hex(text)));
}

Result<json> write_manifest(Stager& s, std::vector<ManifestAux> aux) {
    Manifest m;
    m.job = s.job_display.substr(s.job_display.rfind('/') + 1);
    m.layout = s.args.layout;
    std::sort(s.staged.begin(), s.staged.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    m.files = std::move(s.staged);
    m.aux = std::move(aux);
    std::string text = m.to_text();
    ARCHCTL_TRY_STATUS(write_atomic_in(s.job.get(), k_manifest_name, text, s.job_display + "/" + k_manifest_name));
    crash_point("stage.manifest");
    std::string digest = xxh3_128_hex(text);
    ARCHCTL_TRY_STATUS(write_atomic_in(s.job.get(), k_ready_name, json{{"manifest_xxh3", digest}}.dump() + "\n",
                                       s.job_display + "/" + k_ready_name));
    crash_point("stage.ready");
    return json(finished(s.counters, false, digest));
}

// Positions of the files shard by shard (each shard directory is made and synced once), in the
// order of their source inodes within a shard: consecutive links then touch neighbouring inodes
// (one inode-table block for many files) and copies read in on-disk order, whatever order the
// request lists them in. The order of staging changes nothing else: records are by index, the
// manifest is sorted, and a stop leaves a set of staged files either way.
std::vector<std::size_t> staging_order(const StageArgs& args, const std::vector<struct stat>& stats) {
    std::vector<std::size_t> order(stats.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const bool sharded = args.layout == PayloadLayout::sharded;
    auto shard = [&](std::size_t i) { return sharded ? shard_of(args.files[i].index) : 0u; };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tuple(shard(a), stats[a].st_dev, stats[a].st_ino) < std::tuple(shard(b), stats[b].st_dev, stats[b].st_ino);
    });
    return order;
}

}  // namespace

Result<json> op_stage(OpContext& ctx, json raw) {
    ARCHCTL_TRY_ASSIGN(StageArgs args, parse_args(raw));
    raw = json();  // read into args; not held while the files are staged
    ARCHCTL_TRY_ASSIGN(RootSet::Parent route, ctx.roots().open_parent(args.job_dir));
    ARCHCTL_TRY_ASSIGN(UniqueFd base, ctx.roots().open_dir(args.source_base));
    Stager s{ctx, args, DirCache(base.get(), args.source_base), {}, PayloadDirs({}, args.job_dir, args.layout), -1, args.job_dir, {}, {}, {}, {}, false,
             0, {}};
    for (const auto& f : args.files) s.bytes_total += f.size;
    ARCHCTL_TRY_STATUS(preflight_sources(s));
    ARCHCTL_TRY_STATUS(make_dir_in(route.dir.get(), route.name.c_str(), args.job_dir));
    ARCHCTL_TRY_ASSIGN(s.job, open_dir_below(route.dir.get(), std::vector<std::string>{route.name}, args.job_dir));
    ARCHCTL_TRY_ASSIGN(auto earlier, finished_earlier(s));
    if (earlier) return std::move(*earlier);
    ARCHCTL_TRY_ASSIGN(UniqueFd payload, open_job_subdir(s.job.get(), k_payload_dir, args.job_dir + "/" + k_payload_dir));
    s.payload = PayloadDirs(std::move(payload), args.job_dir, args.layout);
    crash_point("stage.job_dir");
    ARCHCTL_TRY_STATUS(load_journal(s));
    // Before the first link: what the source's inodes look like now, outside every Syncthing
    // folder, so cleanup can undo what the far side does to them through the links.
    if (args.method != MethodChoice::reflink && args.method != MethodChoice::copy) {
        std::vector<SourceStamp> stamps;
        stamps.reserve(args.files.size());
        for (std::size_t i = 0; i < args.files.size(); ++i)
            stamps.push_back({args.files[i].index, args.files[i].path, static_cast<std::uint64_t>(s.source_stats[i].st_ino),
                              mtime_ns(s.source_stats[i]), static_cast<std::uint32_t>(s.source_stats[i].st_mode & 07777)});
        ARCHCTL_TRY_STATUS(write_source_stamps(ctx.roots(), args.source_base, route.name, stamps));
    }

    Stop stop = Stop::none;
    for (std::size_t i : staging_order(args, s.source_stats)) {
        if (ctx.cancelled()) stop = Stop::cancel;
        if (stop != Stop::none) break;
        ARCHCTL_TRY_ASSIGN(stop, stage_one(s, args.files[i], s.source_stats[i]));
    }
    ARCHCTL_TRY_STATUS(s.journal->flush());
    ARCHCTL_TRY_STATUS(s.payload.sync());
    if (stop != Stop::none) {
        StageResult result;
        result.stopped = stop;
        result.free_bytes = s.floor_free;
        result.need_bytes = s.floor_need;
        result.counters = counters_of(s.counters);
        return json(result);
    }
    ARCHCTL_TRY_ASSIGN(auto aux, stage_aux(s));
    return write_manifest(s, std::move(aux));
}

}  // namespace archctl::node
