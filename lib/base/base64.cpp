#include "lib/base/base64.hpp"

#include <array>

namespace archctl {
namespace {
constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each byte as a base64 digit, 64 for a byte that is not one.
constexpr std::array<unsigned char, 256> k_values = [] {
    std::array<unsigned char, 256> v{};
    v.fill(64);
    for (unsigned i = 0; i < 64; ++i) v[static_cast<unsigned char>(k_alphabet[i])] = static_cast<unsigned char>(i);
    return v;
}();

unsigned byte_at(std::string_view s, std::size_t i) { return static_cast<unsigned char>(s[i]); }
}  // namespace

std::string base64_encode(std::string_view bytes) {
    // Written in place (a .torrent of 100,000 files is megabytes of text): no append per digit.
    std::string out((bytes.size() + 2) / 3 * 4, '=');
    char* o = out.data();
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3, o += 4) {
        const unsigned n = byte_at(bytes, i) << 16 | byte_at(bytes, i + 1) << 8 | byte_at(bytes, i + 2);
        o[0] = k_alphabet[(n >> 18) & 63];
        o[1] = k_alphabet[(n >> 12) & 63];
        o[2] = k_alphabet[(n >> 6) & 63];
        o[3] = k_alphabet[n & 63];
    }
    if (i < bytes.size()) {
        unsigned n = byte_at(bytes, i) << 16;
        const bool two = i + 1 < bytes.size();
        if (two) n |= byte_at(bytes, i + 1) << 8;
        o[0] = k_alphabet[(n >> 18) & 63];
        o[1] = k_alphabet[(n >> 12) & 63];
        if (two) o[2] = k_alphabet[(n >> 6) & 63];
    }
    return out;
}

Result<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4) return Error(ErrorCode::BAD_VALUE, "invalid base64: length is not a multiple of 4");
    std::size_t pad = 0;
    if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
    std::string out(text.size() / 4 * 3 - pad, '\0');
    char* o = out.data();
    const std::size_t whole = text.size() - (pad ? 4 : 0);  // the groups without padding
    for (std::size_t i = 0; i < whole; i += 4, o += 3) {
        const unsigned a = k_values[byte_at(text, i)], b = k_values[byte_at(text, i + 1)], c = k_values[byte_at(text, i + 2)],
                       d = k_values[byte_at(text, i + 3)];
        if ((a | b | c | d) & 64) {
            for (std::size_t k = i; k < i + 4; ++k)
                if (text[k] == '=') return Error(ErrorCode::BAD_VALUE, "invalid base64: data after padding");
            return Error(ErrorCode::BAD_VALUE, "invalid base64: unexpected character");
        }
        const unsigned n = a << 18 | b << 12 | c << 6 | d;
        o[0] = static_cast<char>((n >> 16) & 255);
        o[1] = static_cast<char>((n >> 8) & 255);
        o[2] = static_cast<char>(n & 255);
    }
    if (pad) {
        const std::size_t i = whole;
        const unsigned a = k_values[byte_at(text, i)], b = k_values[byte_at(text, i + 1)];
        const unsigned c = pad == 2 ? 0 : k_values[byte_at(text, i + 2)];
        if ((a | b | c) & 64) return Error(ErrorCode::BAD_VALUE, "invalid base64: unexpected character");
        const unsigned n = a << 18 | b << 12 | c << 6;
        o[0] = static_cast<char>((n >> 16) & 255);
        if (pad == 1) o[1] = static_cast<char>((n >> 8) & 255);
    }
    return out;
}

}  // namespace archctl
