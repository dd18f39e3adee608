#pragma once
// libtorrent part file header (docs/torrent-format.md "Part files"): `<save path>/.<qB id>.parts`.
//
// Layout (big-endian u32): num_pieces, piece_size, slot[num_pieces] (0xFFFFFFFF = piece not in
// the file, else its slot index), zero padding up to a multiple of 1024 bytes. Slot s holds
// piece_size bytes at header_size + s * piece_size; within a slot only the ranges of skipped
// files are meaningful. A reader refuses (never guesses) on any header mismatch, slot index out
// of range, duplicate slot, or truncated slot; slot data must still be hash-verified by the
// piece it completes before it is trusted.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl::torrent {

struct PartfileHeader {
    std::uint32_t piece_count = 0;
    std::uint32_t piece_size = 0;
    std::size_t header_size = 0;                       // bytes before slot 0
    std::vector<std::optional<std::uint32_t>> slots;   // by piece: slot index, or nullopt
    std::uint32_t used_slots = 0;

    // Byte offset of the data of `piece` in the part file. Precondition: slots[piece].
    std::uint64_t slot_offset(std::uint32_t piece) const {
        return header_size + std::uint64_t{*slots[piece]} * piece_size;
    }
};

// What the torrent says the part file must match. Unset fields are not checked.
struct PartfileExpectation {
    std::optional<std::uint32_t> piece_count;
    std::optional<std::uint32_t> piece_size;
    std::optional<std::uint64_t> file_size;  // size of the whole part file: every slot must fit
};

// Parses the header from the first bytes of a part file (`bytes` must hold at least the whole
// header). Errors have code PARTFILE_INVALID and say which rule refused it.
[[nodiscard]] Result<PartfileHeader> parse_partfile_header(std::string_view bytes,
                                                           const PartfileExpectation& expect = {});

// The name of a torrent's part file in its save path, as qBittorrent (libtorrent) writes it:
// ".<qB id>.parts".
[[nodiscard]] std::string partfile_name(std::string_view qb_id);

}  // namespace archctl::torrent
