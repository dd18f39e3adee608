// partfile_build: libtorrent part files built on the source (docs/torrent-format.md "Part files",
// docs/design.md "Partfiles and piece boundaries"), with the part file rules of
// lib/node/server/op_partfile.cpp for the source's own part file.
//
// partfile_build writes a part file the target needs from bytes the source holds: for each
// listed piece, the ranges of the files outside the target's selection, read from those files on
// disk (complete there) or from the source's own part file. Every piece is first assembled whole
// (the selected files' bytes too, pad bytes as zeros) and checked against its SHA-1, so a part
// file that would not verify is refused here, before anything moves. Same durability, floor
// and temp-file rules as partfile_copy. With dry_run only the check is made.
//
// Crash point: partfile.built.

#include <cerrno>
#include <limits>
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
#include "lib/node/server/partfile_reader.hpp"
#include "lib/node/wire/ops_pieces.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

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
    std::uint64_t written = 0;  // the bytes written: the header and the kept ranges (the rest are holes)

    std::uint64_t offset_of(std::uint32_t piece, std::uint64_t at, std::uint32_t piece_size) const {
        return header_size + std::uint64_t{*slot_of[piece]} * piece_size + at;
    }
};

// A range's checks: inside its piece, and a file offset pread can reach (both without overflow).
Status check_range(const PartfileBuildPiece& piece, const PartfileBuildRange& r, bool has_source_partfile) {
    if (r.at > piece.length || r.length > piece.length - r.at)
        return bad_build(fmt::format("a range of piece {} ({} bytes at {}) ends past the piece's {} bytes", piece.piece, r.length, r.at,
                                     piece.length));
    constexpr auto k_max_offset = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
    if (r.offset > k_max_offset - r.length)
        return bad_build(fmt::format("a range of piece {} reads at offset {}, past any file", piece.piece, r.offset));
    if (r.from_partfile && !r.keep) return bad_build("a range read from the part file must be kept");
    if (r.from_partfile && !has_source_partfile) return bad_build("a range is read from the part file but none is given");
    return {};
}

Result<BuildLayout> layout_build(const PartfileBuildRequest& request) {
    if (request.piece_size == 0 || request.piece_count == 0) return bad_build("piece_count and piece_size must be positive");
    if (request.piece_count > k_max_partfile_pieces)
        return bad_build(fmt::format("piece_count {} is more than any torrent has (at most {})", request.piece_count, k_max_partfile_pieces));
    if (request.piece_size > k_max_partfile_piece_size)
        return bad_build(fmt::format("piece_size {} is larger than any torrent's (at most {})", request.piece_size, k_max_partfile_piece_size));
    if (request.pieces.size() > request.piece_count)
        return bad_build(fmt::format("{} pieces listed of a torrent of {}", request.pieces.size(), request.piece_count));
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
            ARCHCTL_TRY_STATUS(check_range(piece, r, request.source_partfile.has_value()));
            keeps = keeps || (r.keep && r.length > 0);
            if (r.keep) l.written += r.length;  // at most piece_count * piece_size: no overflow
        }
        if (keeps) {
            l.slot_of[piece.piece] = static_cast<std::uint32_t>(l.slotted.size());
            l.slotted.push_back(piece.piece);
        }
    }
    l.header_size = ((std::uint64_t{2} + request.piece_count) * 4 + 1023) / 1024 * 1024;
    l.total = l.header_size + std::uint64_t{l.slotted.size()} * request.piece_size;
    l.written += l.header_size;
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
    // `written`: the bytes the build writes (what must fit above the floor).
    static Result<std::unique_ptr<BuildOutput>> open(const RootSet& roots, const PartfileBuildRequest& request, std::uint64_t written) {
        std::vector<std::string> ignored;
        CreateDirs create = request.create_parents ? CreateDirs::yes : CreateDirs::no;
        ARCHCTL_TRY_ASSIGN(RootSet::Parent dest, roots.open_parent(request.to, create, &ignored));
        // What the build writes is what the request's numbers make it: it must fit above the floor.
        if (auto free = free_bytes_of(dest.dir.get()); free && !leaves_floor(*free, written, request.min_free))
            return Error(ErrorCode::DISK_INSUFFICIENT,
                         fmt::format("cannot build part file '{}': {} free, it needs {}, floor {} (--min-free)", request.to,
                                     format_size(*free), format_size(written), format_size(request.min_free)),
                         "free space on that filesystem, or lower the floor (--min-free, transfer.min_free)");
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
        return pwrite_full(m_fd.get(), bytes.data(), bytes.size(), offset, m_path);
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

Result<json> op_partfile_build(OpContext& ctx, json args) {
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
        ARCHCTL_TRY_ASSIGN(out, BuildOutput::open(ctx.roots(), request, layout.written));
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
