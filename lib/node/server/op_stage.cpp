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
// atomic.* points).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/wire/ops_transfer.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

// Link records are written and synced in large batches (and before the manifest): a link whose
// record was lost is adopted again from its inode without reading a byte. Copies sync their
// record at once.
constexpr unsigned k_link_record_batch = 16384;
// Progress of small files is offered every this many files (OpContext throttles it further).
constexpr std::uint64_t k_progress_every_files = 256;

enum class MethodChoice { automatic, hardlink, reflink, copy };

struct SourceFile {
    std::uint32_t index = 0;
    std::string path;
    std::vector<std::string> components;
    std::uint64_t size = 0;
};

struct AuxSpec {
    std::string name;
    std::optional<std::string> data;  // decoded; nullopt = already present in a/
};

struct StageArgs {
    std::string job_dir;
    std::string source_base;
    std::vector<SourceFile> files;
    MethodChoice method = MethodChoice::automatic;
    bool verify_transit = false;
    std::uint64_t budget_bytes = 0;  // copied bytes allowed in this request; 0 = no limit
    std::vector<AuxSpec> aux;
    std::uint64_t min_free = 0;      // free-space floor of the job directory; 0 = none
};

struct Counters {
    std::uint64_t files_linked = 0, files_reflinked = 0, files_copied = 0, files_reused = 0;
    std::uint64_t bytes_linked = 0, bytes_reflinked = 0, bytes_copied = 0, bytes_hashed = 0;
    std::uint64_t bytes_done = 0, files_done = 0;
};

// The request (lib/node/wire/ops.hpp) checked and decoded into what the stage works with.
Result<StageArgs> parse_args(const json& raw) {
    auto request = raw.get<StageRequest>();
    StageArgs a;
    a.job_dir = request.job_dir;
    a.source_base = request.source_base;
    const std::string& method = request.method;
    if (method == "auto") a.method = MethodChoice::automatic;
    else if (method == "hardlink") a.method = MethodChoice::hardlink;
    else if (method == "reflink") a.method = MethodChoice::reflink;
    else if (method == "copy") a.method = MethodChoice::copy;
    else return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid stage method '{}': use auto, hardlink, reflink or copy", method));
    a.verify_transit = request.verify_transit;
    a.budget_bytes = request.budget_bytes.value_or(0);
    a.min_free = request.min_free;
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

// Everything one stage run works with.
struct Stager {
    OpContext& ctx;
    const StageArgs& args;
    DirCache sources;
    UniqueFd job;
    UniqueFd payload;
    std::string job_display;
    std::map<std::uint32_t, json> journaled;  // latest record per index
    std::optional<JournalWriter> journal;
    Counters counters;
    std::vector<ManifestFile> staged;  // in staging order; sorted by index for the manifest
    bool link_fails_across = false;  // EXDEV seen once: skip further link attempts in auto mode
    std::uint64_t bytes_total = 0;
    std::vector<struct stat> source_stats;  // by position in args.files, from the preflight
    std::uint64_t floor_free = 0, floor_need = 0;  // what a "disk" stop saw

    std::string staged_display(std::uint32_t index) const { return fmt::format("{}/{}", job_display, payload_name(index)); }
    std::string source_display(const SourceFile& f) const { return fmt::format("{}/{}", args.source_base, f.path); }

    void report(const std::string& current, std::uint64_t in_flight = 0) {
        Progress p;
        p.bytes = counters.bytes_done + in_flight;
        p.bytes_copied = counters.bytes_copied;
        p.files = counters.files_done;
        p.files_total = args.files.size();
        p.bytes_total = bytes_total;
        p.current = current;
        ctx.progress(p);
    }
};

// One source file: its preflight stat, opened only when its bytes are needed (a hard link
// without verify_transit never opens it).
struct Source {
    const Stager& stager;
    const SourceFile& file;
    int dir = -1;
    struct stat st {};
    UniqueFd fd;

    std::string display() const { return stager.source_display(file); }

    Result<int> open() {
        if (fd.valid()) return fd.get();
        struct stat now {};
        ARCHCTL_TRY_ASSIGN(fd, open_regular(dir, file.components.back(), display(), &now));
        if (now.st_ino != st.st_ino || now.st_dev != st.st_dev || now.st_size != st.st_size)
            return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot stage '{}': the file changed while it was staged", display()));
        return fd.get();
    }
};

Result<int> source_dir(Stager& s, const SourceFile& f) {
    return s.sources.dir(std::span<const std::string>(f.components.data(), f.components.size() - 1));
}

// Every listed file must be a regular file of the listed size before anything is written.
Status preflight_sources(Stager& s) {
    s.source_stats.reserve(s.args.files.size());
    for (const auto& f : s.args.files) {
        ARCHCTL_TRY_ASSIGN(int dir, source_dir(s, f));
        struct stat st_buf {};
        if (::fstatat(dir, f.components.back().c_str(), &st_buf, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st_buf.st_mode) &&
            static_cast<std::uint64_t>(st_buf.st_size) == f.size) {
            s.source_stats.push_back(st_buf);  // the common case, without formatting a name
            continue;
        }
        std::string display = s.source_display(f);
        ARCHCTL_TRY_ASSIGN(auto st, stat_in(dir, f.components.back(), display));
        if (!st) return Error(ErrorCode::NOT_FOUND, fmt::format("cannot stage '{}': the source file does not exist", display));
        if (S_ISLNK(st->st_mode))
            return Error(ErrorCode::PATH_SYMLINK, fmt::format("refusing path '{}': it is a symlink", display),
                         "archctl never follows symlinks below a node root");
        if (!S_ISREG(st->st_mode))
            return Error(ErrorCode::NOT_REGULAR, fmt::format("refusing path '{}': it is a {}, not a regular file", display,
                                                    file_type_name(st->st_mode)));
        if (static_cast<std::uint64_t>(st->st_size) != f.size)
            return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot stage '{}': size is {}, the request expects {}", display,
                                                       st->st_size, f.size));
        s.source_stats.push_back(*st);
    }
    return {};
}

// The journal line of a finished file (one per file: formatted directly, not built as a json
// tree). xxh3 is lowercase hex or empty (null).
std::string done_record(std::uint32_t index, StageMethod m, const struct stat& staged, const struct stat& src, const std::string& xxh3) {
    return fmt::format(R"({{"i":{},"m":"{}","size":{},"ino":{},"mtime":{},"src_ino":{},"src_mtime":{},"x":{}}})", index,
                       method_name(m), static_cast<std::uint64_t>(staged.st_size), static_cast<std::uint64_t>(staged.st_ino),
                       mtime_ns(staged), static_cast<std::uint64_t>(src.st_ino), mtime_ns(src),
                       xxh3.empty() ? std::string("null") : fmt::format("\"{}\"", xxh3));
}

bool same_source(const json& rec, const struct stat& src) {
    return rec.value("src_ino", std::uint64_t{0}) == static_cast<std::uint64_t>(src.st_ino) &&
           rec.value("src_mtime", std::int64_t{0}) == mtime_ns(src);
}

bool matches_record(const json& rec, const struct stat& st) {
    return S_ISREG(st.st_mode) && rec.value("size", std::uint64_t{0}) == static_cast<std::uint64_t>(st.st_size) &&
           rec.value("ino", std::uint64_t{0}) == static_cast<std::uint64_t>(st.st_ino) &&
           rec.value("mtime", std::int64_t{0}) == mtime_ns(st);
}

// Appends one record; sync_now makes it (and every buffered link record before it) durable.
Status record(Stager& s, std::string_view line, bool sync_now) {
    ARCHCTL_TRY_STATUS(s.journal->append_line(line));
    if (sync_now) ARCHCTL_TRY_STATUS(s.journal->flush());
    return {};
}

Status finish_file(Stager& s, const SourceFile& f, StageMethod m, const std::string& xxh3) {
    s.staged.push_back(ManifestFile{f.index, f.path, f.size, xxh3, m});
    s.counters.bytes_done += f.size;
    ++s.counters.files_done;
    if (f.size >= k_chunk_bytes || s.counters.files_done % k_progress_every_files == 0) s.report(payload_name(f.index));
    return {};
}

// One hashing read of an already-staged (linked/cloned) file, for verify_transit.
Result<std::string> hash_whole(Stager& s, Source& source) {
    ARCHCTL_TRY_ASSIGN(int fd, source.open());
    Xxh3Hasher h;
    ARCHCTL_TRY_ASSIGN(CopyOutcome o, hash_range(fd, source.file.size, h, {}, source.display()));
    s.counters.bytes_hashed += o.bytes;
    return h.hex_digest();
}

std::string temp_name(std::uint32_t index) { return fmt::format(".{}.part", index); }

// A journaled result whose evidence still holds (possibly after finishing its rename).
Result<bool> reuse_journaled(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    auto it = s.journaled.find(f.index);
    if (it == s.journaled.end() || !it->second.contains("m")) return false;
    const json& rec = it->second;
    std::string name = std::to_string(f.index);
    ARCHCTL_TRY_ASSIGN(auto final_st, stat_in(s.payload.get(), name, s.staged_display(f.index)));
    if (!final_st && rec.at("m") != "hardlink") {
        ARCHCTL_TRY_ASSIGN(auto tmp_st, stat_in(s.payload.get(), temp_name(f.index), s.staged_display(f.index)));
        if (tmp_st && matches_record(rec, *tmp_st) && same_source(rec, src)) {
            if (::renameat(s.payload.get(), temp_name(f.index).c_str(), s.payload.get(), name.c_str()) != 0)
                return errno_error("cannot rename staged file", s.staged_display(f.index), errno);
            crash_point("stage.renamed");
            final_st = tmp_st;
        }
    }
    if (!final_st || !matches_record(rec, *final_st) || !same_source(rec, src)) return false;
    StageMethod m = *parse_method(rec.at("m").get<std::string>());
    std::string xxh3 = rec.at("x").is_string() ? rec.at("x").get<std::string>() : "";
    if (s.args.verify_transit && xxh3.empty()) {
        ARCHCTL_TRY_ASSIGN(xxh3, hash_whole(s, source));
        ARCHCTL_TRY_STATUS(record(s, done_record(f.index, m, *final_st, src, xxh3), false));
    }
    ++s.counters.files_reused;
    ARCHCTL_TRY_STATUS(finish_file(s, f, m, xxh3));
    return true;
}

// An entry already at the staged name without a valid record: a link made before its record
// reached the journal is adopted (same inode as the source); anything else is removed.
Result<bool> adopt_or_clear(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    std::string name = std::to_string(f.index);
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(s.payload.get(), name, s.staged_display(f.index)));
    if (!st) return false;
    if (S_ISREG(st->st_mode) && st->st_ino == src.st_ino && st->st_dev == src.st_dev) {
        std::string xxh3;
        if (s.args.verify_transit) {
            ARCHCTL_TRY_ASSIGN(xxh3, hash_whole(s, source));
        }
        ARCHCTL_TRY_STATUS(record(s, done_record(f.index, StageMethod::hardlink, *st, src, xxh3), false));
        ++s.counters.files_reused;
        ARCHCTL_TRY_STATUS(finish_file(s, f, StageMethod::hardlink, xxh3));
        return true;
    }
    if (::unlinkat(s.payload.get(), name.c_str(), 0) != 0)
        return errno_error("cannot remove stale staged file", s.staged_display(f.index), errno);
    return false;
}

// Hard link; false when the filesystem refuses (other device, no link support).
Result<bool> stage_link(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    std::string name = std::to_string(f.index);
    const char* leaf = f.components.back().c_str();
    int rc = ::linkat(source.dir, leaf, s.payload.get(), name.c_str(), 0);
    if (rc != 0 && errno == EEXIST) {
        ARCHCTL_TRY_ASSIGN(bool adopted, adopt_or_clear(s, f, source));
        if (adopted) return true;
        rc = ::linkat(source.dir, leaf, s.payload.get(), name.c_str(), 0);
    }
    if (rc != 0) {
        int err = errno;
        if (err == EXDEV || err == EPERM || err == EMLINK || err == EOPNOTSUPP) {
            if (err == EXDEV) s.link_fails_across = true;
            return false;
        }
        return errno_error("cannot hard-link into the job", s.staged_display(f.index), err);
    }
    struct stat st_buf {};
    std::optional<struct stat> st;
    if (::fstatat(s.payload.get(), name.c_str(), &st_buf, AT_SYMLINK_NOFOLLOW) == 0) st = st_buf;
    else if (errno != ENOENT) return errno_error("cannot stat", s.staged_display(f.index), errno);
    if (!st || st->st_ino != src.st_ino || st->st_dev != src.st_dev) {
        ::unlinkat(s.payload.get(), name.c_str(), 0);
        return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot stage '{}': the file was replaced while it was linked", s.source_display(f)));
    }
    crash_point("stage.linked");
    std::string xxh3;
    if (s.args.verify_transit) {
        ARCHCTL_TRY_ASSIGN(xxh3, hash_whole(s, source));
    }
    ARCHCTL_TRY_STATUS(record(s, done_record(f.index, StageMethod::hardlink, *st, src, xxh3), false));
    ++s.counters.files_linked;
    s.counters.bytes_linked += f.size;
    ARCHCTL_TRY_STATUS(finish_file(s, f, StageMethod::hardlink, xxh3));
    return true;
}

// Makes the temp copy durable, journals it, then renames it into place.
Status commit_temp(Stager& s, const SourceFile& f, int tmp_fd, const struct stat& src, StageMethod m, const std::string& xxh3) {
    struct timespec times[2] = {src.st_atim, src.st_mtim};
    ::futimens(tmp_fd, times);
    if (::fsync(tmp_fd) != 0) return errno_error("cannot fsync staged file", s.staged_display(f.index), errno);
    struct stat st {};
    if (::fstat(tmp_fd, &st) != 0) return errno_error("cannot stat staged file", s.staged_display(f.index), errno);
    ARCHCTL_TRY_STATUS(record(s, done_record(f.index, m, st, src, xxh3), true));
    crash_point(m == StageMethod::copy ? "stage.copied" : "stage.reflinked");
    std::string name = std::to_string(f.index);
    if (::renameat(s.payload.get(), temp_name(f.index).c_str(), s.payload.get(), name.c_str()) != 0)
        return errno_error("cannot rename staged file", s.staged_display(f.index), errno);
    crash_point("stage.renamed");
    return {};
}

Result<UniqueFd> create_temp(Stager& s, const SourceFile& f, const struct stat& src) {
    std::string tmp = temp_name(f.index);
    ::unlinkat(s.payload.get(), tmp.c_str(), 0);
    UniqueFd fd(::openat(s.payload.get(), tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, src.st_mode & 0777));
    if (!fd.valid()) return errno_error("cannot create staged file", s.staged_display(f.index), errno);
    return fd;
}

Result<bool> stage_reflink(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    ARCHCTL_TRY_ASSIGN(UniqueFd tmp, create_temp(s, f, src));
    ARCHCTL_TRY_ASSIGN(int src_fd, source.open());
    ARCHCTL_TRY_ASSIGN(bool cloned, try_reflink(src_fd, tmp.get(), s.staged_display(f.index)));
    if (!cloned) {
        ::unlinkat(s.payload.get(), temp_name(f.index).c_str(), 0);
        return false;
    }
    std::string xxh3;
    if (s.args.verify_transit) {
        ARCHCTL_TRY_ASSIGN(xxh3, hash_whole(s, source));
    }
    ARCHCTL_TRY_STATUS(commit_temp(s, f, tmp.get(), src, StageMethod::reflink, xxh3));
    ++s.counters.files_reflinked;
    s.counters.bytes_reflinked += f.size;
    ARCHCTL_TRY_STATUS(finish_file(s, f, StageMethod::reflink, xxh3));
    return true;
}

// A cleanly stopped partial copy that can be continued: its temp file and length.
std::optional<std::uint64_t> resumable_prefix(Stager& s, const SourceFile& f, const struct stat& src) {
    auto it = s.journaled.find(f.index);
    if (it == s.journaled.end() || !it->second.contains("partial")) return std::nullopt;
    const json& rec = it->second;
    auto tmp = stat_in(s.payload.get(), temp_name(f.index), s.staged_display(f.index));
    if (!tmp.ok() || !tmp.value() || !S_ISREG(tmp.value()->st_mode)) return std::nullopt;
    std::uint64_t have = rec.at("partial").get<std::uint64_t>();
    if (!same_source(rec, src) || rec.value("ino", std::uint64_t{0}) != tmp.value()->st_ino ||
        static_cast<std::uint64_t>(tmp.value()->st_size) < have || have > f.size)
        return std::nullopt;
    return have;
}

// Whether writing `need` more bytes into the job directory keeps its filesystem at or above the
// floor; records what it saw when not. A filesystem that does not say its free space is not judged.
bool above_floor(Stager& s, int fd, std::uint64_t need) {
    if (!s.args.min_free) return true;
    auto free = free_bytes_of(fd);
    if (!free || *free >= s.args.min_free + need) return true;
    s.floor_free = *free;
    s.floor_need = need;
    return false;
}

Result<Stop> stage_copy(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    std::string display = s.staged_display(f.index);
    Xxh3Hasher hasher;
    std::uint64_t offset = 0;
    UniqueFd tmp;
    if (auto prefix = resumable_prefix(s, f, src)) {
        tmp.reset(::openat(s.payload.get(), temp_name(f.index).c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
        if (!tmp.valid()) return errno_error("cannot reopen partial copy", display, errno);
        if (::ftruncate(tmp.get(), static_cast<off_t>(*prefix)) != 0) return errno_error("cannot truncate partial copy", display, errno);
        ARCHCTL_TRY_ASSIGN(CopyOutcome h, hash_range(tmp.get(), *prefix, hasher, {}, display));
        s.counters.bytes_hashed += h.bytes;
        offset = h.bytes;
    } else {
        if (!above_floor(s, s.payload.get(), f.size)) return Stop::disk;
        ARCHCTL_TRY_ASSIGN(tmp, create_temp(s, f, src));
    }
    if (offset && !above_floor(s, s.payload.get(), f.size - std::min(f.size, offset))) return Stop::disk;
    Stop stop = Stop::none;
    std::uint64_t in_file = offset;
    ChunkGate gate = [&](std::uint64_t chunk) {
        s.counters.bytes_copied += chunk;
        in_file += chunk;
        s.report(payload_name(f.index), in_file);
        if (s.ctx.cancelled()) stop = Stop::cancel;
        else if (s.args.budget_bytes && s.counters.bytes_copied >= s.args.budget_bytes) stop = Stop::budget;
        else if (!above_floor(s, tmp.get(), f.size - std::min(f.size, in_file))) stop = Stop::disk;
        return stop == Stop::none;
    };
    ARCHCTL_TRY_ASSIGN(int src_fd, source.open());
    auto outcome = copy_and_hash(src_fd, tmp.get(), offset, hasher, gate, s.source_display(f));
    if (!outcome.ok()) {
        if (!outcome.error().is(ErrorCode::DISK_INSUFFICIENT)) return outcome.take_error();
        // A full filesystem is a stop like the floor: keep what the chunks the gate saw wrote
        // (a rerun truncates the temp file to that length and goes on from there).
        stop = Stop::disk;
        s.floor_free = free_bytes_of(s.payload.get()).value_or(0);
        s.floor_need = f.size - std::min(f.size, in_file);
        outcome = CopyOutcome{in_file - offset, true};
    }
    const CopyOutcome& copied = outcome.value();
    if (copied.stopped) {
        if (::fsync(tmp.get()) != 0) return errno_error("cannot fsync partial copy", display, errno);
        struct stat st {};
        ::fstat(tmp.get(), &st);
        json partial = {{"i", f.index}, {"partial", offset + copied.bytes}, {"ino", static_cast<std::uint64_t>(st.st_ino)},
                        {"src_ino", static_cast<std::uint64_t>(src.st_ino)}, {"src_mtime", mtime_ns(src)}};
        ARCHCTL_TRY_STATUS(record(s, partial.dump(), true));
        crash_point("stage.partial");
        return stop;
    }
    if (offset + copied.bytes != f.size)
        return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot stage '{}': read {} bytes, expected {}", s.source_display(f),
                                                   offset + copied.bytes, f.size));
    std::string xxh3 = hasher.hex_digest();
    ARCHCTL_TRY_STATUS(commit_temp(s, f, tmp.get(), src, StageMethod::copy, xxh3));
    ++s.counters.files_copied;
    ARCHCTL_TRY_STATUS(finish_file(s, f, StageMethod::copy, xxh3));
    return Stop::none;
}

Result<Stop> stage_one(Stager& s, const SourceFile& f, const struct stat& preflight) {
    ARCHCTL_TRY_ASSIGN(int dir, source_dir(s, f));
    Source source{s, f, dir, preflight, {}};
    ARCHCTL_TRY_ASSIGN(bool reused, reuse_journaled(s, f, source));
    if (reused) return Stop::none;

    MethodChoice m = s.args.method;
    if (m == MethodChoice::automatic || m == MethodChoice::hardlink) {
        if (m == MethodChoice::hardlink || !s.link_fails_across) {
            ARCHCTL_TRY_ASSIGN(bool linked, stage_link(s, f, source));
            if (linked) return Stop::none;
        }
        if (m == MethodChoice::hardlink)
            return Error(ErrorCode::LINK_FAILED, fmt::format("cannot hard-link '{}' into '{}': the filesystem refused", s.source_display(f),
                                                    s.job_display),
                         "source and job directory must be on one filesystem; use method auto to fall back to a copy");
    }
    // A reflink or copy is renamed over whatever stale entry holds the staged name.
    if (m == MethodChoice::automatic || m == MethodChoice::reflink) {
        ARCHCTL_TRY_ASSIGN(bool cloned, stage_reflink(s, f, source));
        if (cloned) return Stop::none;
        if (m == MethodChoice::reflink)
            return Error(ErrorCode::REFLINK_UNSUPPORTED, fmt::format("cannot reflink '{}' into '{}': the filesystem refused",
                                                            s.source_display(f), s.job_display));
    }
    if (s.args.budget_bytes && s.counters.bytes_copied >= s.args.budget_bytes) return Stop::budget;
    return stage_copy(s, f, source);
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
    if (m.files.size() != a.files.size()) return false;
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
    std::sort(s.staged.begin(), s.staged.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    m.files = std::move(s.staged);
    m.aux = std::move(aux);
    std::string text = m.to_json().dump(1) + "\n";
    ARCHCTL_TRY_STATUS(write_atomic_in(s.job.get(), k_manifest_name, text, s.job_display + "/" + k_manifest_name));
    crash_point("stage.manifest");
    std::string digest = xxh3_128_hex(text);
    ARCHCTL_TRY_STATUS(write_atomic_in(s.job.get(), k_ready_name, json{{"manifest_xxh3", digest}}.dump() + "\n",
                                       s.job_display + "/" + k_ready_name));
    crash_point("stage.ready");
    return json(finished(s.counters, false, digest));
}

// Positions of the files in the order of their source inodes: consecutive links then touch
// neighbouring inodes (one inode-table block for many files) and copies read in on-disk order,
// whatever order the request lists them in. The order of staging changes nothing else: records
// are by index, the manifest is sorted, and a stop leaves a set of staged files either way.
std::vector<std::size_t> inode_order(const std::vector<struct stat>& stats) {
    std::vector<std::size_t> order(stats.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::pair(stats[a].st_dev, stats[a].st_ino) < std::pair(stats[b].st_dev, stats[b].st_ino);
    });
    return order;
}

}  // namespace

Result<json> op_stage(OpContext& ctx, const json& raw) {
    ARCHCTL_TRY_ASSIGN(StageArgs args, parse_args(raw));
    ARCHCTL_TRY_ASSIGN(RootSet::Parent route, ctx.roots().open_parent(args.job_dir));
    ARCHCTL_TRY_ASSIGN(UniqueFd base, ctx.roots().open_dir(args.source_base));
    Stager s{ctx, args, DirCache(base.get(), args.source_base), {}, {}, args.job_dir, {}, {}, {}, {}, false, 0, {}};
    for (const auto& f : args.files) s.bytes_total += f.size;
    ARCHCTL_TRY_STATUS(preflight_sources(s));
    ARCHCTL_TRY_STATUS(make_dir_in(route.dir.get(), route.name.c_str(), args.job_dir));
    ARCHCTL_TRY_ASSIGN(s.job, open_dir_below(route.dir.get(), std::vector<std::string>{route.name}, args.job_dir));
    ARCHCTL_TRY_ASSIGN(auto earlier, finished_earlier(s));
    if (earlier) return std::move(*earlier);
    ARCHCTL_TRY_ASSIGN(s.payload, open_job_subdir(s.job.get(), k_payload_dir, args.job_dir + "/" + k_payload_dir));
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
    for (std::size_t i : inode_order(s.source_stats)) {
        if (ctx.cancelled()) stop = Stop::cancel;
        if (stop != Stop::none) break;
        ARCHCTL_TRY_ASSIGN(stop, stage_one(s, args.files[i], s.source_stats[i]));
    }
    ARCHCTL_TRY_STATUS(s.journal->flush());
    ARCHCTL_TRY_STATUS(fsync_fd_dir(s.payload.get(), args.job_dir + "/" + k_payload_dir));
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
