// One file of a stage (lib/node/server/op_stage.cpp says what the operation does and its crash
// points): hard link, else reflink, else copy with xxh3 in the same pass, each journaled with the
// evidence a rerun checks, a resumable partial copy at a budget, cancel or free-space stop.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/node/server/source_stamps.hpp"
#include "lib/node/server/stage_run.hpp"

namespace archctl::node::stage_run {
namespace {

Result<int> source_dir(Stager& s, const SourceFile& f) {
    return s.sources.dir(std::span<const std::string>(f.components.data(), f.components.size() - 1));
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
    if (f.size >= k_chunk_bytes || s.counters.files_done % k_progress_every_files == 0) s.report(payload_name(f.index, s.args.layout));
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

std::string temp_name(std::uint32_t index) { return stage_temp_name(index); }

// A journaled result whose evidence still holds (possibly after finishing its rename).
Result<bool> reuse_journaled(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    auto it = s.journaled.find(f.index);
    if (it == s.journaled.end() || !it->second.contains("m")) return false;
    const json& rec = it->second;
    std::string name = std::to_string(f.index);
    ARCHCTL_TRY_ASSIGN(auto final_st, stat_in(s.dir, name, s.staged_display(f.index)));
    if (!final_st && rec.at("m") != "hardlink") {
        ARCHCTL_TRY_ASSIGN(auto tmp_st, stat_in(s.dir, temp_name(f.index), s.staged_display(f.index)));
        if (tmp_st && matches_record(rec, *tmp_st) && same_source(rec, src)) {
            if (::renameat(s.dir, temp_name(f.index).c_str(), s.dir, name.c_str()) != 0)
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
    ARCHCTL_TRY_ASSIGN(auto st, stat_in(s.dir, name, s.staged_display(f.index)));
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
    if (::unlinkat(s.dir, name.c_str(), 0) != 0)
        return errno_error("cannot remove stale staged file", s.staged_display(f.index), errno);
    return false;
}

// Hard link; false when the filesystem refuses (other device, no link support).
Result<bool> stage_link(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    std::string name = std::to_string(f.index);
    const char* leaf = f.components.back().c_str();
    int rc = ::linkat(source.dir, leaf, s.dir, name.c_str(), 0);
    if (rc != 0 && errno == EEXIST) {
        ARCHCTL_TRY_ASSIGN(bool adopted, adopt_or_clear(s, f, source));
        if (adopted) return true;
        rc = ::linkat(source.dir, leaf, s.dir, name.c_str(), 0);
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
    if (::fstatat(s.dir, name.c_str(), &st_buf, AT_SYMLINK_NOFOLLOW) == 0) st = st_buf;
    else if (errno != ENOENT) return errno_error("cannot stat", s.staged_display(f.index), errno);
    if (!st || st->st_ino != src.st_ino || st->st_dev != src.st_dev) {
        ::unlinkat(s.dir, name.c_str(), 0);
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
    if (::renameat(s.dir, temp_name(f.index).c_str(), s.dir, name.c_str()) != 0)
        return errno_error("cannot rename staged file", s.staged_display(f.index), errno);
    crash_point("stage.renamed");
    return {};
}

Result<UniqueFd> create_temp(Stager& s, const SourceFile& f, const struct stat& src) {
    std::string tmp = temp_name(f.index);
    ::unlinkat(s.dir, tmp.c_str(), 0);
    UniqueFd fd(::openat(s.dir, tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, src.st_mode & 0777));
    if (!fd.valid()) return errno_error("cannot create staged file", s.staged_display(f.index), errno);
    return fd;
}

Result<bool> stage_reflink(Stager& s, const SourceFile& f, Source& source) {
    const struct stat& src = source.st;
    ARCHCTL_TRY_ASSIGN(UniqueFd tmp, create_temp(s, f, src));
    ARCHCTL_TRY_ASSIGN(int src_fd, source.open());
    ARCHCTL_TRY_ASSIGN(bool cloned, try_reflink(src_fd, tmp.get(), s.staged_display(f.index)));
    if (!cloned) {
        ::unlinkat(s.dir, temp_name(f.index).c_str(), 0);
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
    auto tmp = stat_in(s.dir, temp_name(f.index), s.staged_display(f.index));
    if (!tmp.ok() || !tmp.value() || !S_ISREG(tmp.value()->st_mode)) return std::nullopt;
    std::uint64_t have = rec.at("partial").get<std::uint64_t>();
    if (!same_source(rec, src) || rec.value("ino", std::uint64_t{0}) != tmp.value()->st_ino ||
        static_cast<std::uint64_t>(tmp.value()->st_size) < have || have > f.size)
        return std::nullopt;
    return have;
}

// Whether writing `need` more bytes into the job directory keeps its filesystem at or above the
// floor (0: whether they fit); records what it saw when not. A filesystem that does not say its
// free space is not judged.
bool above_floor(Stager& s, int fd, std::uint64_t need) {
    auto free = free_bytes_of(fd);
    if (!free || leaves_floor(*free, need, s.args.min_free)) return true;
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
        tmp.reset(::openat(s.dir, temp_name(f.index).c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
        if (!tmp.valid()) return errno_error("cannot reopen partial copy", display, errno);
        if (::ftruncate(tmp.get(), static_cast<off_t>(*prefix)) != 0) return errno_error("cannot truncate partial copy", display, errno);
        ARCHCTL_TRY_ASSIGN(CopyOutcome h, hash_range(tmp.get(), *prefix, hasher, {}, display));
        s.counters.bytes_hashed += h.bytes;
        offset = h.bytes;
    } else {
        if (!above_floor(s, s.dir, f.size)) return Stop::disk;
        ARCHCTL_TRY_ASSIGN(tmp, create_temp(s, f, src));
    }
    if (offset && !above_floor(s, s.dir, f.size - std::min(f.size, offset))) return Stop::disk;
    Stop stop = Stop::none;
    std::uint64_t in_file = offset;
    ChunkGate gate = [&](std::uint64_t chunk) {
        s.counters.bytes_copied += chunk;
        in_file += chunk;
        s.report(payload_name(f.index, s.args.layout), in_file);
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
        s.floor_free = free_bytes_of(s.dir).value_or(0);
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

}  // namespace

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

Result<Stop> stage_one(Stager& s, const SourceFile& f, const struct stat& preflight) {
    ARCHCTL_TRY_ASSIGN(s.dir, s.payload.dir_of(f.index, true));
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

}  // namespace archctl::node::stage_run
