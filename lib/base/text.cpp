#include "lib/base/text.hpp"

#include <vector>

#include <fmt/format.h>

namespace archctl {
namespace {

bool is_bidi_control(char32_t cp) {
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F;
}

void escape_line(std::string& out, std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        char32_t cp = 0;
        std::size_t len = decode_utf8(s, i, cp);
        if (len == 0 || b < 0x20 || b == 0x7F) {
            out += fmt::format("\\x{:02x}", b);
            ++i;
        } else if (is_bidi_control(cp) || (cp >= 0x80 && cp <= 0x9F)) {
            out += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(cp));
            i += len;
        } else {
            out.append(s.substr(i, len));
            i += len;
        }
    }
}

// A JSON string literal as nlohmann's dump writes it, with bytes that are not UTF-8 as \udcXX.
void put_string(std::string& out, std::string_view s) {
    out.push_back('"');
    for (std::size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        char32_t cp = 0;
        std::size_t len = decode_utf8(s, i, cp);
        if (len == 0) {
            out += fmt::format("\\udc{:02x}", b);
            ++i;
            continue;
        }
        switch (b) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (b < 0x20) out += fmt::format("\\u{:04x}", b);
                else out.append(s.substr(i, len));
        }
        i += len;
    }
    out.push_back('"');
}

void put_value(std::string& out, const nlohmann::json& j, int indent, int level) {
    const bool pretty = indent >= 0;
    const std::string inner = pretty ? std::string(static_cast<std::size_t>(indent * (level + 1)), ' ') : std::string();
    const std::string outer = pretty ? std::string(static_cast<std::size_t>(indent * level), ' ') : std::string();
    if (j.is_string()) return put_string(out, j.get_ref<const std::string&>());
    if (j.is_object()) {
        if (j.empty()) return void(out += "{}");
        out += pretty ? "{\n" : "{";
        bool first = true;
        for (const auto& [key, value] : j.items()) {
            if (!first) out += pretty ? ",\n" : ",";
            first = false;
            out += inner;
            put_string(out, key);
            out += pretty ? ": " : ":";
            put_value(out, value, indent, level + 1);
        }
        out += pretty ? "\n" + outer + "}" : "}";
        return;
    }
    if (j.is_array()) {
        if (j.empty()) return void(out += "[]");
        out += pretty ? "[\n" : "[";
        bool first = true;
        for (const auto& value : j) {
            if (!first) out += pretty ? ",\n" : ",";
            first = false;
            out += inner;
            put_value(out, value, indent, level + 1);
        }
        out += pretty ? "\n" + outer + "]" : "]";
        return;
    }
    out += j.dump();  // null, boolean, number: no text of their own
}

}  // namespace

std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char b0 = byte(i);
    std::size_t len = 0;
    char32_t min = 0;
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    } else if ((b0 & 0xE0) == 0xC0) {
        len = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    for (std::size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string printable(std::string_view s) {
    std::string out;
    escape_line(out, s);
    return out;
}

std::string clipped(std::string_view s, std::size_t max) {
    if (s.size() <= max) return std::string(s);
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    return fmt::format("{}… ({} bytes)", s.substr(0, cut), s.size());
}

std::string one_line(std::string_view text) {
    constexpr std::string_view space = " \t\r\n";
    const std::size_t first = text.find_first_not_of(space);
    if (first == std::string_view::npos) return {};
    text = text.substr(first, text.find_last_not_of(space) - first + 1);
    std::string out;
    out.reserve(text.size());
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t brk = text.find_first_of("\r\n", at);
        if (brk == std::string_view::npos) {
            out.append(text.substr(at));
            break;
        }
        out.append(text.substr(at, brk - at));
        while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
        at = text.find_first_not_of(space, brk);  // never npos: the text is trimmed
        const char last = out.empty() ? ';' : out.back();
        out += (last == ':' || last == ';' || last == ',' || last == '-') ? " " : "; ";
    }
    return out;
}

std::string file_indices(std::string_view ranges) {
    std::vector<std::string_view> parts;
    std::size_t at = 0;
    while (at <= ranges.size()) {
        std::size_t comma = ranges.find(',', at);
        std::string_view part = ranges.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
        if (!part.empty()) parts.push_back(part);
        if (comma == std::string_view::npos) break;
        at = comma + 1;
    }
    if (parts.empty()) return "no file";
    const bool one = parts.size() == 1 && parts[0].find('-') == std::string_view::npos;
    std::string out = one ? "file " : "files ";
    for (std::size_t i = 0; i < parts.size(); ++i) out += fmt::format("{}#{}", i == 0 ? "" : ", ", parts[i]);
    return out;
}

std::string terminal_text(std::string_view s) {
    // Most text is plain ASCII with nothing to escape: return it as it is.
    bool plain = true;
    for (char c : s) {
        auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && c != '\n' && c != '\t') || b >= 0x7F) {
            plain = false;
            break;
        }
    }
    if (plain) return std::string(s);
    std::string out;
    out.reserve(s.size());
    std::size_t at = 0;
    while (at <= s.size()) {
        std::size_t end = s.find_first_of("\n\t", at);
        escape_line(out, s.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
        if (end == std::string_view::npos) break;
        out.push_back(s[end]);
        at = end + 1;
    }
    return out;
}

std::string dump_json(const nlohmann::json& j, int indent) {
    try {
        return j.dump(indent);
    } catch (const nlohmann::json::type_error&) {
        // A string that is not UTF-8 (type_error 316): written byte by byte below.
    }
    std::string out;
    put_value(out, j, indent, 0);
    return out;
}

}  // namespace archctl
