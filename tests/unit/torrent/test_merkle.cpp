#include <doctest/doctest.h>

#include "lib/torrent/merkle.hpp"
#include "tests/unit/torrent/torrent_builder.hpp"

using namespace archctl::torrent;

namespace {
std::vector<Sha256Digest> leaves_of(const std::string& data) {
    merkle::LeafHasher h;
    h.feed(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    h.flush();
    return h.take_leaves();
}
}  // namespace

TEST_CASE("merkle: next_pow2 and zero subtrees") {
    CHECK(merkle::next_pow2(0) == 1);
    CHECK(merkle::next_pow2(1) == 1);
    CHECK(merkle::next_pow2(3) == 4);
    CHECK(merkle::next_pow2(4) == 4);
    CHECK(merkle::next_pow2(5) == 8);
    CHECK(merkle::zero_subtree(0) == Sha256Digest{});
    CHECK(merkle::zero_subtree(1) == sha256_pair(Sha256Digest{}, Sha256Digest{}));
    CHECK(merkle::zero_subtree(2) == sha256_pair(merkle::zero_subtree(1), merkle::zero_subtree(1)));
}

TEST_CASE("merkle: a file of at most 16 KiB has root = SHA-256 of its data") {
    std::string data = test::random_bytes(1000, 1);
    CHECK(merkle::small_file_root(leaves_of(data)) == sha256(data));
    std::string block = test::random_bytes(16384, 2);
    CHECK(merkle::small_file_root(leaves_of(block)) == sha256(block));
}

TEST_CASE("merkle: last block hashed at its real length, not zero padded") {
    std::string data = test::random_bytes(16384 + 10, 3);
    auto leaves = leaves_of(data);
    REQUIRE(leaves.size() == 2);
    CHECK(leaves[1] == sha256(data.substr(16384)));
    CHECK(leaves[1] != sha256(data.substr(16384) + std::string(16374, '\0')));
    CHECK(merkle::small_file_root(leaves) == sha256_pair(leaves[0], leaves[1]));
}

TEST_CASE("merkle: one-piece file pads leaves with zeros to its own power of two") {
    // 3 blocks in a 64 KiB piece: padded to 4 leaves, not to the 4 blocks of the piece by chance.
    std::string data = test::random_bytes(3 * 16384, 4);
    auto l = leaves_of(data);
    Sha256Digest expected = sha256_pair(sha256_pair(l[0], l[1]), sha256_pair(l[2], Sha256Digest{}));
    CHECK(merkle::small_file_root(l) == expected);
    // 5 blocks → 8 leaves.
    std::string five = test::random_bytes(5 * 16384, 5);
    auto f = leaves_of(five);
    Sha256Digest z{};
    Sha256Digest z1 = sha256_pair(z, z);
    Sha256Digest left = sha256_pair(sha256_pair(f[0], f[1]), sha256_pair(f[2], f[3]));
    Sha256Digest right = sha256_pair(sha256_pair(f[4], z), z1);
    CHECK(merkle::small_file_root(f) == sha256_pair(left, right));
}

TEST_CASE("merkle: last piece padded to k leaves; layer padded with zero-subtree roots") {
    const std::int64_t piece = 4 * 16384;  // k = 4
    std::string data = test::random_bytes(static_cast<std::size_t>(piece) * 2 + 16384 + 7, 6);
    auto l = leaves_of(data);
    REQUIRE(l.size() == 10);
    Sha256Digest z{};
    Sha256Digest p0 = sha256_pair(sha256_pair(l[0], l[1]), sha256_pair(l[2], l[3]));
    Sha256Digest p1 = sha256_pair(sha256_pair(l[4], l[5]), sha256_pair(l[6], l[7]));
    Sha256Digest p2 = sha256_pair(sha256_pair(l[8], l[9]), sha256_pair(z, z));
    CHECK(merkle::piece_hash({l[0], l[1], l[2], l[3]}, piece) == p0);
    CHECK(merkle::piece_hash({l[8], l[9]}, piece) == p2);
    Sha256Digest pad = merkle::zero_subtree(2);
    Sha256Digest root = sha256_pair(sha256_pair(p0, p1), sha256_pair(p2, pad));
    CHECK(merkle::root_from_layer({p0, p1, p2}, piece) == root);
    // Equivalent to the flat tree over all leaves padded with Z to a power of two.
    CHECK(merkle::root(l, 16, z) == root);
}

TEST_CASE("merkle: leaf hasher is independent of chunking") {
    std::string data = test::random_bytes(100000, 7);
    merkle::LeafHasher a;
    for (std::size_t i = 0; i < data.size(); i += 777)
        a.feed(reinterpret_cast<const std::uint8_t*>(data.data()) + i, std::min<std::size_t>(777, data.size() - i));
    a.flush();
    CHECK(a.take_leaves() == leaves_of(data));
}
