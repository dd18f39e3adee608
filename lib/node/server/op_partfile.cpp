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
// job-local name; on the target: to <save path>/.<qB id>.parts before torrents/add). It first
// checks that the copy keeps the destination's filesystem at or above the floor min_free (0:
// that it fits at all; DISK_INSUFFICIENT otherwise, nothing written); every failure removes its
// temp file.
//
// Crash point: partfile.copied. partfile_build: lib/node/server/op_partfile_build.cpp.

#include <algorithm>
#include <cerrno>
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

namespace archctl::node {

using nlohmann::json;

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

Result<json> op_partfile_read(OpContext& ctx, json args) {
    auto request = args.get<PartfileReadRequest>();
    ARCHCTL_TRY_ASSIGN(OpenedPartfile p, open_partfile(ctx.roots(), request.check, request.path));
    return json(header_of(p));
}

Result<json> op_partfile_copy(OpContext& ctx, json args) {
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
    if (auto free = free_bytes_of(dest.dir.get()); free && !leaves_floor(*free, p.size, request.min_free))
        return Error(ErrorCode::DISK_INSUFFICIENT,
                     fmt::format("cannot copy part file to '{}': {} free, it needs {}, floor {} (--min-free)", to, format_size(*free),
                                 format_size(p.size), format_size(request.min_free)),
                     "free space on that filesystem, or lower the floor (--min-free, transfer.min_free)");
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

}  // namespace archctl::node
