#include "lib/base/hash.hpp"

#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
// libxxhash's runtime dispatch: the widest vector unit the CPU has (AVX2/AVX-512), not the SSE2
// baseline this file is compiled for. Same digests.
#include <xxh_x86dispatch.h>
#define ARCHCTL_XXH3_128_UPDATE XXH3_128bits_update_dispatch
#else
#define ARCHCTL_XXH3_128_UPDATE XXH3_128bits_update
#endif

namespace archctl {

Xxh3Hasher::Xxh3Hasher() : m_state(XXH3_createState()) { reset(); }
Xxh3Hasher::~Xxh3Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

void Xxh3Hasher::reset() { XXH3_128bits_reset(static_cast<XXH3_state_t*>(m_state)); }

void Xxh3Hasher::update(const void* data, std::size_t size) {
    ARCHCTL_XXH3_128_UPDATE(static_cast<XXH3_state_t*>(m_state), data, size);
}

std::string Xxh3Hasher::hex_digest() const {
    XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(m_state));
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    return to_hex(std::string_view(reinterpret_cast<const char*>(c.digest), sizeof c.digest));
}

std::string xxh3_128_hex(std::string_view data) {
    Xxh3Hasher h;
    h.update(data.data(), data.size());
    return h.hex_digest();
}

std::string to_hex(std::string_view bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char ch : bytes) {
        auto c = static_cast<unsigned char>(ch);
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool from_hex(std::string_view hex, std::string& out) {
    if (hex.size() % 2) return false;
    out.clear();
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
    }
    return true;
}

bool is_hex(std::string_view text) {
    for (char c : text)
        if (hex_value(c) < 0) return false;
    return !text.empty();
}

}  // namespace archctl
