#pragma once
// SHA-1 and SHA-256 through OpenSSL EVP, the two hashes BitTorrent metainfo uses.
//
// Sha1 / Sha256 are streaming hashers (update any number of times, then finish; reset() reuses
// the context without reallocating). The EVP digest objects are fetched once per process, so
// creating many short-lived hashers (one per 16 KiB merkle leaf) stays cheap.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace archctl::torrent {

using Sha1Digest = std::array<std::uint8_t, 20>;
using Sha256Digest = std::array<std::uint8_t, 32>;

// Streaming SHA-1. Not copyable; movable.
class Sha1 {
public:
    Sha1();
    ~Sha1();
    Sha1(Sha1&& other) noexcept;
    Sha1& operator=(Sha1&& other) noexcept;
    Sha1(const Sha1&) = delete;
    Sha1& operator=(const Sha1&) = delete;

    void update(const void* data, std::size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
    // The digest of everything fed since construction or the last reset(); resets the hasher.
    [[nodiscard]] Sha1Digest finish();
    void reset();

private:
    void* m_ctx;  // EVP_MD_CTX*
};

// Streaming SHA-256. Same contract as Sha1.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(Sha256&& other) noexcept;
    Sha256& operator=(Sha256&& other) noexcept;
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
    [[nodiscard]] Sha256Digest finish();
    void reset();

private:
    void* m_ctx;  // EVP_MD_CTX*
};

// One-shot helpers.
[[nodiscard]] Sha1Digest sha1(std::string_view bytes);
[[nodiscard]] Sha256Digest sha256(std::string_view bytes);
[[nodiscard]] Sha256Digest sha256(const void* data, std::size_t size);
// SHA-256 of left ‖ right: one interior node of a BEP 52 merkle tree.
[[nodiscard]] Sha256Digest sha256_pair(const Sha256Digest& left, const Sha256Digest& right);

// Lowercase hex SHA-256 of `bytes`: the digests archctl derives from decision facts.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

// Lowercase hex of any byte sequence.
[[nodiscard]] std::string to_hex(std::span<const std::uint8_t> bytes);
// Parses exactly 2*N hex digits (either case) into N bytes; nullopt on any other input.
[[nodiscard]] std::optional<Sha1Digest> sha1_from_hex(std::string_view hex);
[[nodiscard]] std::optional<Sha256Digest> sha256_from_hex(std::string_view hex);

// Raw bytes of a digest as a string (bencode byte-string form).
template <std::size_t N>
[[nodiscard]] std::string digest_bytes(const std::array<std::uint8_t, N>& digest) {
    return std::string(reinterpret_cast<const char*>(digest.data()), N);
}

}  // namespace archctl::torrent
