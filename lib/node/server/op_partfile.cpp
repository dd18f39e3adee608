// partfile_read / partfile_copy: libtorrent part files (docs/torrent-format.md "Part files",
// docs/design.md "Partfiles and piece boundaries").
//
// The header is parsed with lib/torrent/partfile.hpp, whose refusal rules apply: piece count or
// size differing from the torrent, a slot index out of range, a slot used twice, a file shorter
// than its header, and a slot that runs past the end of the file. libtorrent's part file ends
// at the last byte it wrote (docs/torrent-format.md "A part file as libtorrent writes it": 19954
// bytes = header + one slot + 2546 bytes), so a
// caller may accept exactly one short slot, the last one in the file, with
// "allow_short_last_slot": true; every other rule stays strict. Reading must only happen while
// the torrent is stopped (the caller's duty). partfile_copy writes a temp file beside the
// destination, fsyncs it and renames it into place (on the source: into the job under a
// job-local name; on the target: to <save path>/.<qB id>.parts before torrents/add). With
// min_free it first checks that the copy keeps the destination's filesystem at or above that
// floor (DISK_INSUFFICIENT otherwise, nothing written); every failure removes its temp file.
//
// partfile_build writes a part file the target needs from bytes the source holds: for each
// listed piece, the ranges of the files outside the target's selection, read from those files on
// disk (complete there) or from the source's own part file. Every piece is first assembled whole
// (the selected files' bytes too, pad bytes as zeros) and checked against its SHA-1, so a part
// file that would not verify is refused here, before anything moves. Same durability, floor
// and temp-file rules as partfile_copy. With dry_run only the check is made.
//
// Crash points: partfile.copied, partfile.built.

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/units.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "lib/torrent/partfile.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

struct OpenedPartfile {
    UniqueFd fd;
    std::uint64_t size = 0;
    torrent::PartfileHeader header;
    std::vector<std::uint32_t> short_slots;  // pieces whose slot runs past the end of the file
};

Result<OpenedPartfile> open_partfile(const RootSet& roots, const PartfileCheck& check, const std::string& path) {
    ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, roots.open_parent(path));
    OpenedPartfile p;
    struct stat st {};
    ARCHCTL_TRY_ASSIGN(p.fd, open_regular(parent.dir.get(), parent.name, path, &st));
    p.size = static_cast<std::uint64_t>(st.st_size);
    std::uint64_t want = std::min<std::uint64_t>(p.size, 8);
    std::string head(static_cast<std::size_t>(want), '\0');
    if (::pread(p.fd.get(), head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()))
        return errno_error("cannot read part file", path, errno);
    if (head.size() == 8) {
        auto u = [&](std::size_t i) { return std::uint64_t{static_cast<unsigned char>(head[i])}; };
        std::uint64_t pieces = (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
        std::uint64_t header = ((2 + pieces) * 4 + 1023) / 1024 * 1024;
        head.resize(static_cast<std::size_t>(std::min<std::uint64_t>(header, p.size)));
        if (::pread(p.fd.get(), head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()))
            return errno_error("cannot read part file", path, errno);
    }
    torrent::PartfileExpectation expect;
    expect.piece_count = check.expect_pieces;
    expect.piece_size = check.expect_piece_size;
    // Structure first; slot extents are judged below so the one permitted short slot can pass.
    ARCHCTL_TRY_ASSIGN(p.header, torrent::parse_partfile_header(head, expect));
    if (p.size < p.header.header_size)
        return Error(ErrorCode::PARTFILE_INVALID, fmt::format("cannot use part file '{}': {} bytes, shorter than its {}-byte header", path,
                                                     p.size, p.header.header_size));
    std::uint32_t last_slot = 0;
    for (std::uint32_t piece = 0; piece < p.header.piece_count; ++piece) {
        if (!p.header.slots[piece]) continue;
        last_slot = std::max(last_slot, *p.header.slots[piece]);
        if (p.header.slot_offset(piece) + p.header.piece_size > p.size) p.short_slots.push_back(piece);
    }
    bool allow_short = check.allow_short_last_slot;
    for (std::uint32_t piece : p.short_slots) {
        bool tolerated = allow_short && p.short_slots.size() == 1 && *p.header.slots[piece] == last_slot &&
                         p.header.slot_offset(piece) < p.size;
        if (!tolerated)
            return Error(ErrorCode::PARTFILE_INVALID, fmt::format("cannot use part file '{}': slot {} (piece {}) is truncated", path,
                                                         *p.header.slots[piece], piece),
                         "the part file is refused rather than guessed at; keep the source copy");
    }
    return p;
}

PartfileReadResult header_of(const OpenedPartfile& p) {
    PartfileReadResult r;
    r.piece_count = p.header.piece_count;
    r.piece_size = p.header.piece_size;
    r.header_size = p.header.header_size;
    r.used_slots = p.header.used_slots;
    for (std::uint32_t piece = 0; piece < p.header.piece_count; ++piece)
        if (p.header.slots[piece]) r.slots.push_back(PartfileSlot{piece, *p.header.slots[piece]});
    r.file_size = p.size;
    r.short_slots = p.short_slots;
    return r;
}

}  // namespace

Result<json> op_partfile_read(OpContext& ctx, const json& args) {
    auto request = args.get<PartfileReadRequest>();
    ARCHCTL_TRY_ASSIGN(OpenedPartfile p, open_partfile(ctx.roots(), request.check, request.path));
    return json(header_of(p));
}

Result<json> op_partfile_copy(OpContext& ctx, const json& args) {
    auto request = args.get<PartfileCopyRequest>();
    const std::string& from = request.from;
    const std::string& to = request.to;
    ARCHCTL_TRY_ASSIGN(OpenedPartfile p, open_partfile(ctx.roots(), request.check, from));
    std::vector<std::string> ignored;
    CreateDirs create = request.create_parents ? CreateDirs::yes : CreateDirs::no;
    ARCHCTL_TRY_ASSIGN(RootSet::Parent dest, ctx.roots().open_parent(to, create, &ignored));
    Xxh3Hasher source_hash;
    ARCHCTL_TRY_ASSIGN(CopyOutcome read, hash_range(p.fd.get(), p.size, source_hash, {}, from));
    std::string digest = source_hash.hex_digest();
    if (read.bytes != p.size) return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot copy part file '{}': it changed while it was read", from));
    ARCHCTL_TRY_ASSIGN(auto existing, stat_in(dest.dir.get(), dest.name, to));
    if (existing) {
        ARCHCTL_TRY_ASSIGN(UniqueFd efd, open_regular(dest.dir.get(), dest.name, to));
        Xxh3Hasher h;
        ARCHCTL_TRY_ASSIGN(CopyOutcome o, hash_range(efd.get(), static_cast<std::uint64_t>(existing->st_size), h, {}, to));
        if (o.bytes == p.size && h.hex_digest() == digest) return json(PartfileCopyResult{header_of(p), to, digest, true, std::nullopt});
        if (!request.replace)
            return Error(ErrorCode::PARTFILE_EXISTS, fmt::format("cannot place part file '{}': a different file is already there", to),
                         "a part file in a save path belongs to the torrent loaded there; it is never overwritten silently");
    }
    if (request.min_free) {
        auto free = free_bytes_of(dest.dir.get());
        if (free && *free < request.min_free + p.size)
            return Error(ErrorCode::DISK_INSUFFICIENT,
                         fmt::format("cannot copy part file to '{}': {} free, it needs {}, floor {} (--min-free)", to, format_size(*free),
                                     format_size(p.size), format_size(request.min_free)),
                         "free space on that filesystem, or lower the floor (--min-free, transfer.min_free)");
    }
    // Every failure below (a short write on a full disk included) removes the temp file.
    TempFile tmp(dest.dir.get(), fmt::format(".{}.archctl-tmp", dest.name));
    ::unlinkat(dest.dir.get(), tmp.name().c_str(), 0);
    UniqueFd out(::openat(dest.dir.get(), tmp.name().c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!out.valid()) {
        int err = errno;
        if (err == EEXIST) tmp.placed();  // made by someone else in between: not ours to remove
        return errno_error("cannot create", to, err);
    }
    Xxh3Hasher copy_hash;
    ARCHCTL_TRY_ASSIGN(CopyOutcome copied, copy_and_hash(p.fd.get(), out.get(), 0, copy_hash, {}, from));
    if (copied.bytes != p.size || copy_hash.hex_digest() != digest)
        return Error(ErrorCode::SOURCE_CHANGED, fmt::format("cannot copy part file '{}': it changed while it was read", from),
                     "read the part file only while its torrent is stopped");
    if (::fsync(out.get()) != 0) return errno_error("cannot fsync", to, errno);
    if (::renameat(dest.dir.get(), tmp.name().c_str(), dest.dir.get(), dest.name.c_str()) != 0) return errno_error("cannot rename into", to, errno);
    tmp.placed();
    ARCHCTL_TRY_STATUS(fsync_fd_dir(dest.dir.get(), to));
    crash_point("partfile.copied");
    return json(PartfileCopyResult{header_of(p), to, digest, false, copied.bytes});
}

namespace {

// Reads exactly `length` bytes at `offset`; fewer means the file is shorter than the range.
Status read_exact(int fd, char* out, std::uint64_t length, std::uint64_t offset, const std::string& display) {
    std::uint64_t done = 0;
    while (done < length) {
        ssize_t n = ::pread(fd, out + done, static_cast<std::size_t>(length - done), static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("cannot read", display, errno);
        }
        if (n == 0)
            return Error(ErrorCode::SOURCE_CHANGED,
                         fmt::format("cannot build part file: '{}' ends before byte {}", display, offset + length),
                         "the file is shorter than the torrent says: recheck the torrent in qBittorrent");
        done += static_cast<std::uint64_t>(n);
    }
    return {};
}

// The source files a build reads, each opened once without following a symlink.
class BuildInputs {
public:
    explicit BuildInputs(const RootSet& roots) : m_roots(roots) {}
    Result<int> file(const std::string& path) {
        auto it = m_files.find(path);
        if (it != m_files.end()) return it->second.get();
        ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, m_roots.open_parent(path));
        ARCHCTL_TRY_ASSIGN(UniqueFd fd, open_regular(parent.dir.get(), parent.name, path));
        int raw = fd.get();
        m_files.emplace(path, std::move(fd));
        return raw;
    }

private:
    const RootSet& m_roots;
    std::map<std::string, UniqueFd> m_files;
};

Error bad_build(const std::string& why) {
    return Error(ErrorCode::BAD_REQUEST, fmt::format("invalid partfile_build request: {}", why));
}

// Where each listed piece goes: one slot per piece that keeps any bytes, in request order.
struct BuildLayout {
    std::vector<std::optional<std::uint32_t>> slot_of;  // by piece
    std::vector<std::uint32_t> slotted;                 // by slot: its piece
    std::uint64_t header_size = 0, total = 0;

    std::uint64_t offset_of(std::uint32_t piece, std::uint64_t at, std::uint32_t piece_size) const {
        return header_size + std::uint64_t{*slot_of[piece]} * piece_size + at;
    }
};

Result<BuildLayout> layout_build(const PartfileBuildRequest& request) {
    if (request.piece_size == 0 || request.piece_count == 0) return bad_build("piece_count and piece_size must be positive");
    if (!request.dry_run && request.to.empty()) return bad_build("'to' is required");
    BuildLayout l;
    l.slot_of.resize(request.piece_count);
    std::vector<bool> listed(request.piece_count, false);
    for (const auto& piece : request.pieces) {
        if (piece.piece >= request.piece_count) return bad_build(fmt::format("piece {} is out of range", piece.piece));
        if (listed[piece.piece]) return bad_build(fmt::format("piece {} is listed twice", piece.piece));
        listed[piece.piece] = true;
        if (piece.length == 0 || piece.length > request.piece_size)
            return bad_build(fmt::format("piece {} has length {}", piece.piece, piece.length));
        bool keeps = false;
        for (const auto& r : piece.ranges) {
            if (r.at + r.length > piece.length)
                return bad_build(fmt::format("a range of piece {} ends at {}, past the piece", piece.piece, r.at + r.length));
            if (r.from_partfile && !r.keep) return bad_build("a range read from the part file must be kept");
            if (r.from_partfile && !request.source_partfile) return bad_build("a range is read from the part file but none is given");
            keeps = keeps || (r.keep && r.length > 0);
        }
        if (keeps) {
            l.slot_of[piece.piece] = static_cast<std::uint32_t>(l.slotted.size());
            l.slotted.push_back(piece.piece);
        }
    }
    l.header_size = ((std::uint64_t{2} + request.piece_count) * 4 + 1023) / 1024 * 1024;
    l.total = l.header_size + std::uint64_t{l.slotted.size()} * request.piece_size;
    return l;
}

std::string header_bytes(const PartfileBuildRequest& request, const BuildLayout& l) {
    std::string header(static_cast<std::size_t>(l.header_size), '\0');
    auto put_be32 = [&](std::size_t at, std::uint32_t v) {
        for (int i = 0; i < 4; ++i) header[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    };
    put_be32(0, request.piece_count);
    put_be32(4, request.piece_size);
    for (std::uint32_t p = 0; p < request.piece_count; ++p) put_be32(8 + std::size_t{p} * 4, l.slot_of[p] ? *l.slot_of[p] : 0xFFFFFFFFu);
    return header;
}

// The source's part file, when ranges are read from it.
struct SourcePartfile {
    OpenedPartfile file;
    std::string path;
};

// Reads the whole piece into `whole` (bytes no range covers stay zero: pad files).
Status assemble_piece(const PartfileBuildPiece& piece, BuildInputs& inputs, const SourcePartfile* source, std::string& whole) {
    whole.assign(static_cast<std::size_t>(piece.length), '\0');
    for (const auto& r : piece.ranges) {
        if (r.length == 0) continue;
        char* at = whole.data() + r.at;
        if (!r.from_partfile) {
            ARCHCTL_TRY_ASSIGN(int fd, inputs.file(r.path));
            ARCHCTL_TRY_STATUS(read_exact(fd, at, r.length, r.offset, r.path));
            continue;
        }
        const OpenedPartfile& pf = source->file;
        if (!pf.header.slots[piece.piece])
            return Error(ErrorCode::PARTFILE_INVALID,
                         fmt::format("cannot build part file: the part file '{}' does not hold piece {}", source->path, piece.piece),
                         "the skipped file's bytes of that piece are nowhere on this node");
        std::uint64_t from = pf.header.slot_offset(piece.piece) + r.at;
        if (from + r.length > pf.size)
            return Error(ErrorCode::PARTFILE_INVALID,
                         fmt::format("cannot build part file: slot {} (piece {}) of '{}' ends before the bytes it needs",
                                     *pf.header.slots[piece.piece], piece.piece, source->path),
                         "the part file is refused rather than guessed at; keep the source copy");
        ARCHCTL_TRY_STATUS(read_exact(pf.fd.get(), at, r.length, from, source->path));
    }
    return {};
}

// true when the piece matches its SHA-1 (or has none to match).
Result<bool> piece_verifies(const PartfileBuildPiece& piece, const std::string& whole) {
    if (!piece.sha1) return true;
    auto want = torrent::sha1_from_hex(*piece.sha1);
    if (!want) return bad_build(fmt::format("piece {} has an invalid sha1", piece.piece));
    return torrent::sha1(whole) == *want;
}

// The part file being written: a temp file beside the destination, renamed into place by
// commit(); removed on every other way out.
class BuildOutput {
public:
    static Result<std::unique_ptr<BuildOutput>> open(const RootSet& roots, const PartfileBuildRequest& request, std::uint64_t total) {
        std::vector<std::string> ignored;
        CreateDirs create = request.create_parents ? CreateDirs::yes : CreateDirs::no;
        ARCHCTL_TRY_ASSIGN(RootSet::Parent dest, roots.open_parent(request.to, create, &ignored));
        if (request.min_free) {
            auto free = free_bytes_of(dest.dir.get());
            if (free && *free < request.min_free + total)
                return Error(ErrorCode::DISK_INSUFFICIENT,
                             fmt::format("cannot build part file '{}': {} free, it needs {}, floor {} (--min-free)", request.to,
                                         format_size(*free), format_size(total), format_size(request.min_free)),
                             "free space on that filesystem, or lower the floor (--min-free, transfer.min_free)");
        }
        auto out = std::unique_ptr<BuildOutput>(new BuildOutput(std::move(dest), request.to));
        ::unlinkat(out->m_dest.dir.get(), out->m_tmp.name().c_str(), 0);
        out->m_fd = UniqueFd(::openat(out->m_dest.dir.get(), out->m_tmp.name().c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (!out->m_fd.valid()) {
            int err = errno;
            if (err == EEXIST) out->m_tmp.placed();  // made by someone else in between: not ours to remove
            return errno_error("cannot create", request.to, err);
        }
        return out;
    }

    Status write_at(std::string_view bytes, std::uint64_t offset) {
        std::uint64_t done = 0;
        while (done < bytes.size()) {
            ssize_t n = ::pwrite(m_fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                // A full filesystem is the floor's business (a 'disk' stop), not a verdict.
                if (errno == ENOSPC || errno == EDQUOT)
                    return Error(ErrorCode::DISK_INSUFFICIENT, fmt::format("cannot write '{}': its filesystem is full ({})", m_path,
                                                                           errno == ENOSPC ? "no space left" : "quota exceeded"));
                return errno_error("cannot write", m_path, errno);
            }
            done += static_cast<std::uint64_t>(n);
        }
        return {};
    }

    // Sizes the file (unwritten slot bytes stay holes), hashes, fsyncs and renames it into place.
    Result<CopyOutcome> commit(std::uint64_t total, Xxh3Hasher& hash) {
        if (::ftruncate(m_fd.get(), static_cast<off_t>(total)) != 0) return errno_error("cannot size", m_path, errno);
        ARCHCTL_TRY_ASSIGN(CopyOutcome hashed, hash_range(m_fd.get(), total, hash, {}, m_path));
        if (::fsync(m_fd.get()) != 0) return errno_error("cannot fsync", m_path, errno);
        if (::renameat(m_dest.dir.get(), m_tmp.name().c_str(), m_dest.dir.get(), m_dest.name.c_str()) != 0)
            return errno_error("cannot rename into", m_path, errno);
        m_tmp.placed();
        ARCHCTL_TRY_STATUS(fsync_fd_dir(m_dest.dir.get(), m_path));
        return hashed;
    }

private:
    BuildOutput(RootSet::Parent dest, std::string path)
        : m_dest(std::move(dest)), m_path(std::move(path)), m_tmp(m_dest.dir.get(), fmt::format(".{}.archctl-tmp", m_dest.name)) {}

    RootSet::Parent m_dest;
    std::string m_path;
    TempFile m_tmp;
    UniqueFd m_fd;
};

}  // namespace

Result<json> op_partfile_build(OpContext& ctx, const json& args) {
    auto request = args.get<PartfileBuildRequest>();
    ARCHCTL_TRY_ASSIGN(BuildLayout layout, layout_build(request));
    std::optional<SourcePartfile> source;
    if (request.source_partfile) {
        PartfileCheck check{request.piece_count, request.piece_size, true};
        ARCHCTL_TRY_ASSIGN(OpenedPartfile opened, open_partfile(ctx.roots(), check, *request.source_partfile));
        source.emplace(SourcePartfile{std::move(opened), *request.source_partfile});
    }
    std::unique_ptr<BuildOutput> out;
    if (!request.dry_run) {
        ARCHCTL_TRY_ASSIGN(out, BuildOutput::open(ctx.roots(), request, layout.total));
    }
    BuildInputs inputs(ctx.roots());
    PartfileBuildResult result;
    std::string whole;
    for (const auto& piece : request.pieces) {
        ARCHCTL_TRY_STATUS(assemble_piece(piece, inputs, source ? &*source : nullptr, whole));
        ARCHCTL_TRY_ASSIGN(bool verifies, piece_verifies(piece, whole));
        if (!verifies && request.dry_run) result.failed.push_back(piece.piece);
        if (!verifies && !request.dry_run)
            return Error(ErrorCode::PARTFILE_INVALID,
                         fmt::format("cannot build part file: piece {} assembled from the source's bytes does not match its SHA-1",
                                     piece.piece),
                         "the source's copy of those bytes is not the torrent's: recheck the torrent in qBittorrent");
        if (!out || !layout.slot_of[piece.piece]) continue;
        // Only the kept ranges are written: the rest of a slot means nothing to libtorrent.
        for (const auto& r : piece.ranges)
            if (r.keep && r.length > 0)
                ARCHCTL_TRY_STATUS(out->write_at(std::string_view(whole).substr(r.at, r.length),
                                                 layout.offset_of(piece.piece, r.at, request.piece_size)));
    }
    result.header.piece_count = request.piece_count;
    result.header.piece_size = request.piece_size;
    result.header.header_size = layout.header_size;
    result.header.used_slots = static_cast<std::uint32_t>(layout.slotted.size());
    for (std::uint32_t s = 0; s < layout.slotted.size(); ++s) result.header.slots.push_back(PartfileSlot{layout.slotted[s], s});
    result.header.file_size = layout.total;
    if (!out) return json(result);
    ARCHCTL_TRY_STATUS(out->write_at(header_bytes(request, layout), 0));
    Xxh3Hasher hash;
    ARCHCTL_TRY_ASSIGN(CopyOutcome written, out->commit(layout.total, hash));
    crash_point("partfile.built");
    result.to = request.to;
    result.xxh3 = hash.hex_digest();
    result.bytes = written.bytes;
    return json(result);
}

}  // namespace archctl::node
