#include "lib/torrent/sha.hpp"

#include <cstdlib>
#include <cstring>

#include <openssl/evp.h>

namespace archctl::torrent {
namespace {

// EVP_MD objects fetched once; explicit fetching avoids a provider lookup per digest.
const EVP_MD* sha1_md() {
    static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA1", nullptr);
    return md;
}
const EVP_MD* sha256_md() {
    static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return md;
}

// OpenSSL only fails here on allocation failure or a broken installation; there is no way to
// hash without it, so stop loudly rather than return wrong digests.
[[noreturn]] void digest_failure() {
    std::fputs("archctl: fatal: OpenSSL digest failure\n", stderr);
    std::abort();
}

EVP_MD_CTX* new_ctx(const EVP_MD* md) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr || md == nullptr || EVP_DigestInit_ex(ctx, md, nullptr) != 1) digest_failure();
    return ctx;
}

EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

template <std::size_t N>
std::array<std::uint8_t, N> finish_ctx(void* ctx, const EVP_MD* md) {
    std::array<std::uint8_t, N> out{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(as_ctx(ctx), out.data(), &len) != 1 || len != N) digest_failure();
    if (EVP_DigestInit_ex(as_ctx(ctx), md, nullptr) != 1) digest_failure();
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

template <std::size_t N>
std::optional<std::array<std::uint8_t, N>> from_hex(std::string_view hex) {
    if (hex.size() != 2 * N) return std::nullopt;
    std::array<std::uint8_t, N> out{};
    for (std::size_t i = 0; i < N; ++i) {
        int hi = hex_value(hex[2 * i]);
        int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return out;
}

}  // namespace

Sha1::Sha1() : m_ctx(new_ctx(sha1_md())) {}
Sha1::~Sha1() { EVP_MD_CTX_free(as_ctx(m_ctx)); }
Sha1::Sha1(Sha1&& other) noexcept : m_ctx(other.m_ctx) { other.m_ctx = nullptr; }
Sha1& Sha1::operator=(Sha1&& other) noexcept {
    if (this != &other) {
        EVP_MD_CTX_free(as_ctx(m_ctx));
        m_ctx = other.m_ctx;
        other.m_ctx = nullptr;
    }
    return *this;
}
void Sha1::update(const void* data, std::size_t size) {
    if (size != 0 && EVP_DigestUpdate(as_ctx(m_ctx), data, size) != 1) digest_failure();
}
Sha1Digest Sha1::finish() { return finish_ctx<20>(m_ctx, sha1_md()); }
void Sha1::reset() {
    if (EVP_DigestInit_ex(as_ctx(m_ctx), sha1_md(), nullptr) != 1) digest_failure();
}

Sha256::Sha256() : m_ctx(new_ctx(sha256_md())) {}
Sha256::~Sha256() { EVP_MD_CTX_free(as_ctx(m_ctx)); }
Sha256::Sha256(Sha256&& other) noexcept : m_ctx(other.m_ctx) { other.m_ctx = nullptr; }
Sha256& Sha256::operator=(Sha256&& other) noexcept {
    if (this != &other) {
        EVP_MD_CTX_free(as_ctx(m_ctx));
        m_ctx = other.m_ctx;
        other.m_ctx = nullptr;
    }
    return *this;
}
void Sha256::update(const void* data, std::size_t size) {
    if (size != 0 && EVP_DigestUpdate(as_ctx(m_ctx), data, size) != 1) digest_failure();
}
Sha256Digest Sha256::finish() { return finish_ctx<32>(m_ctx, sha256_md()); }
void Sha256::reset() {
    if (EVP_DigestInit_ex(as_ctx(m_ctx), sha256_md(), nullptr) != 1) digest_failure();
}

Sha1Digest sha1(std::string_view bytes) {
    Sha1 h;
    h.update(bytes);
    return h.finish();
}

Sha256Digest sha256(std::string_view bytes) { return sha256(bytes.data(), bytes.size()); }

Sha256Digest sha256(const void* data, std::size_t size) {
    // One context per thread: merkle trees call this for every 16 KiB leaf and interior node.
    thread_local Sha256 h;
    h.update(data, size);
    return h.finish();
}

Sha256Digest sha256_pair(const Sha256Digest& left, const Sha256Digest& right) {
    std::array<std::uint8_t, 64> buf{};
    std::memcpy(buf.data(), left.data(), 32);
    std::memcpy(buf.data() + 32, right.data(), 32);
    return sha256(buf.data(), buf.size());
}

std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

std::string to_hex(std::span<const std::uint8_t> bytes) {
    static constexpr char k_digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        out.push_back(k_digits[b >> 4]);
        out.push_back(k_digits[b & 0x0f]);
    }
    return out;
}

std::optional<Sha1Digest> sha1_from_hex(std::string_view hex) { return from_hex<20>(hex); }
std::optional<Sha256Digest> sha256_from_hex(std::string_view hex) { return from_hex<32>(hex); }

}  // namespace archctl::torrent
