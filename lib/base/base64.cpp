#include "lib/base/base64.hpp"

namespace archctl {
namespace {
const char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}
}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        auto n = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16) |
                 (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                 static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 2]));
        out += k_alphabet[(n >> 18) & 63];
        out += k_alphabet[(n >> 12) & 63];
        out += k_alphabet[(n >> 6) & 63];
        out += k_alphabet[n & 63];
    }
    if (i < bytes.size()) {
        unsigned n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16;
        bool two = i + 1 < bytes.size();
        if (two) n |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        out += k_alphabet[(n >> 18) & 63];
        out += k_alphabet[(n >> 12) & 63];
        out += two ? k_alphabet[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

Result<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4) return Error(ErrorCode::BAD_VALUE, "invalid base64: length is not a multiple of 4");
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            char c = text[i + static_cast<size_t>(k)];
            if (c == '=' && i + 4 == text.size() && k >= 2) { v[k] = 0; ++pad; continue; }
            if (pad) return Error(ErrorCode::BAD_VALUE, "invalid base64: data after padding");
            v[k] = value_of(c);
            if (v[k] < 0) return Error(ErrorCode::BAD_VALUE, "invalid base64: unexpected character");
        }
        unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                     (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
        out += static_cast<char>((n >> 16) & 255);
        if (pad < 2) out += static_cast<char>((n >> 8) & 255);
        if (pad < 1) out += static_cast<char>(n & 255);
    }
    return out;
}

}  // namespace archctl
