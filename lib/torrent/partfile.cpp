#include "lib/torrent/partfile.hpp"

#include <fmt/format.h>

namespace archctl::torrent {
namespace {

std::uint32_t be32(std::string_view b, std::size_t at) {
    auto u = [&](std::size_t i) { return std::uint32_t{static_cast<unsigned char>(b[at + i])}; };
    return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

Error refuse(std::string_view cause) {
    return Error{"PARTFILE_INVALID", fmt::format("cannot use part file: {}", cause),
                 "the part file is refused rather than guessed at; keep the source copy"};
}

}  // namespace

Result<PartfileHeader> parse_partfile_header(std::string_view bytes, const PartfileExpectation& expect) {
    if (bytes.size() < 8) return refuse(fmt::format("only {} bytes, shorter than its header", bytes.size()));
    PartfileHeader h;
    h.piece_count = be32(bytes, 0);
    h.piece_size = be32(bytes, 4);
    if (expect.piece_count && h.piece_count != *expect.piece_count)
        return refuse(fmt::format("header says {} pieces, the torrent has {}", h.piece_count, *expect.piece_count));
    if (expect.piece_size && h.piece_size != *expect.piece_size)
        return refuse(fmt::format("header says piece size {}, the torrent has {}", h.piece_size, *expect.piece_size));
    if (h.piece_size == 0) return refuse("piece size 0");
    std::uint64_t table = (std::uint64_t{2} + h.piece_count) * 4;
    h.header_size = static_cast<std::size_t>((table + 1023) / 1024 * 1024);
    if (bytes.size() < table) return refuse(fmt::format("{} bytes, shorter than its {}-byte header", bytes.size(), h.header_size));
    if (expect.file_size && *expect.file_size < h.header_size)
        return refuse(fmt::format("file of {} bytes is shorter than its {}-byte header", *expect.file_size, h.header_size));
    h.slots.resize(h.piece_count);
    std::vector<bool> seen(h.piece_count, false);
    for (std::uint32_t p = 0; p < h.piece_count; ++p) {
        std::uint32_t slot = be32(bytes, 8 + std::size_t{p} * 4);
        if (slot == 0xFFFFFFFFu) continue;
        if (slot >= h.piece_count) return refuse(fmt::format("piece {} has slot {}, out of range", p, slot));
        if (seen[slot]) return refuse(fmt::format("slot {} is used by two pieces", slot));
        seen[slot] = true;
        h.slots[p] = slot;
        ++h.used_slots;
        if (expect.file_size && h.header_size + (std::uint64_t{slot} + 1) * h.piece_size > *expect.file_size)
            return refuse(fmt::format("slot {} (piece {}) is truncated", slot, p));
    }
    return h;
}

std::string partfile_name(std::string_view qb_id) { return "." + std::string(qb_id) + ".parts"; }

}  // namespace archctl::torrent
