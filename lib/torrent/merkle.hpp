#pragma once
// BEP 52 merkle trees (docs/torrent-format.md "Merkle rules").
//
// B = 16 KiB blocks; leaf = SHA-256 of one block (the file's last block hashed at its real
// length); node = SHA-256(left ‖ right); Z = 32 zero bytes.
//  - a file of at most one piece: leaves padded with Z to the next power of two of its own block
//    count; the root is the file's `pieces root`;
//  - a larger file: piece hash j = root of that piece's leaves padded with Z to k = L/B; the
//    piece hashes, padded to a power of two with the root of k Z-leaves, give `pieces root`.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/torrent/sha.hpp"

namespace archctl::torrent::merkle {

inline constexpr std::int64_t k_block_size = 16 * 1024;

// Smallest power of two >= n (1 for n <= 1).
[[nodiscard]] std::size_t next_pow2(std::size_t n);

// Root of a tree whose leaves are `leaves` followed by copies of `pad` up to `width` leaves.
// `width` must be a power of two >= leaves.size() (and >= 1).
[[nodiscard]] Sha256Digest root(std::vector<Sha256Digest> leaves, std::size_t width, const Sha256Digest& pad);

// Root of a perfect tree of 2^levels Z leaves (levels = 0 gives Z itself).
[[nodiscard]] Sha256Digest zero_subtree(unsigned levels);

// Hash of piece j of a file larger than one piece: `leaves` (1..k of them) padded with Z to k.
[[nodiscard]] Sha256Digest piece_hash(const std::vector<Sha256Digest>& leaves, std::int64_t piece_length);

// Root of a file of at most one piece from its leaves (padded with Z to next_pow2(count)).
[[nodiscard]] Sha256Digest small_file_root(const std::vector<Sha256Digest>& leaves);

// `pieces root` of a file larger than one piece from its piece layer.
[[nodiscard]] Sha256Digest root_from_layer(const std::vector<Sha256Digest>& layer, std::int64_t piece_length);

// Incremental leaf hasher for one file: feed the file's bytes in order (any chunking); every
// full 16 KiB block becomes a leaf; flush() hashes a trailing partial block at its real length.
class LeafHasher {
public:
    void feed(const std::uint8_t* data, std::size_t size);
    void flush();
    // Leaves produced so far (moved out; the hasher keeps any partial block).
    [[nodiscard]] std::vector<Sha256Digest> take_leaves();
    std::size_t leaf_count() const { return m_leaves.size(); }

private:
    std::vector<Sha256Digest> m_leaves;
    std::vector<std::uint8_t> m_partial;
};

}  // namespace archctl::torrent::merkle
