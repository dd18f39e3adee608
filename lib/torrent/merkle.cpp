#include "lib/torrent/merkle.hpp"

#include <cassert>
#include <cstring>

namespace archctl::torrent::merkle {

std::size_t next_pow2(std::size_t n) {
    std::size_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

Sha256Digest root(std::vector<Sha256Digest> leaves, std::size_t width, const Sha256Digest& pad) {
    assert(width >= 1 && (width & (width - 1)) == 0 && leaves.size() <= width);
    Sha256Digest level_pad = pad;
    std::size_t count = width;
    if (leaves.empty()) leaves.push_back(pad);
    while (count > 1) {
        std::vector<Sha256Digest> next;
        next.reserve((leaves.size() + 1) / 2);
        for (std::size_t i = 0; i < leaves.size(); i += 2) {
            const Sha256Digest& right = i + 1 < leaves.size() ? leaves[i + 1] : level_pad;
            next.push_back(sha256_pair(leaves[i], right));
        }
        level_pad = sha256_pair(level_pad, level_pad);
        leaves = std::move(next);
        count /= 2;
    }
    return leaves.front();
}

Sha256Digest zero_subtree(unsigned levels) {
    Sha256Digest h{};
    for (unsigned i = 0; i < levels; ++i) h = sha256_pair(h, h);
    return h;
}

namespace {
unsigned log2_exact(std::int64_t v) {
    unsigned n = 0;
    while ((std::int64_t{1} << n) < v) ++n;
    return n;
}
}  // namespace

Sha256Digest piece_hash(const std::vector<Sha256Digest>& leaves, std::int64_t piece_length) {
    auto k = static_cast<std::size_t>(piece_length / k_block_size);
    return root(leaves, k, Sha256Digest{});
}

Sha256Digest small_file_root(const std::vector<Sha256Digest>& leaves) {
    return root(leaves, next_pow2(leaves.size()), Sha256Digest{});
}

Sha256Digest root_from_layer(const std::vector<Sha256Digest>& layer, std::int64_t piece_length) {
    Sha256Digest pad = zero_subtree(log2_exact(piece_length / k_block_size));
    return root(layer, next_pow2(layer.size()), pad);
}

void LeafHasher::feed(const std::uint8_t* data, std::size_t size) {
    constexpr auto block = static_cast<std::size_t>(k_block_size);
    if (!m_partial.empty()) {
        std::size_t take = std::min(size, block - m_partial.size());
        m_partial.insert(m_partial.end(), data, data + take);
        data += take;
        size -= take;
        if (m_partial.size() < block) return;
        m_leaves.push_back(sha256(m_partial.data(), m_partial.size()));
        m_partial.clear();
    }
    while (size >= block) {
        m_leaves.push_back(sha256(data, block));
        data += block;
        size -= block;
    }
    if (size != 0) m_partial.assign(data, data + size);
}

void LeafHasher::flush() {
    if (m_partial.empty()) return;
    m_leaves.push_back(sha256(m_partial.data(), m_partial.size()));
    m_partial.clear();
}

std::vector<Sha256Digest> LeafHasher::take_leaves() {
    std::vector<Sha256Digest> out;
    out.swap(m_leaves);
    return out;
}

}  // namespace archctl::torrent::merkle
