#include "lib/torrent/path_rules.hpp"

#include "lib/torrent/unicode.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>
#include <set>

#include <fmt/format.h>

namespace archctl::torrent {
namespace {

bool is_bidi_control(char32_t cp) {
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F;
}

char32_t fold_one(char32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 0x20;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;                 // Latin-1
    if (cp >= 0x100 && cp <= 0x137) return cp | 1;                                // Latin Ext-A pairs
    if (cp >= 0x139 && cp <= 0x148) return (cp & 1) ? cp + 1 : cp;
    if (cp >= 0x14A && cp <= 0x177) return cp | 1;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x179 && cp <= 0x17E) return (cp & 1) ? cp + 1 : cp;
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 0x20;              // Greek
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;                             // Cyrillic
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    return cp;
}

bool is_windows_device(std::string_view element) {
    std::string stem(element.substr(0, element.find('.')));
    for (auto& c : stem) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 0x20 : c);
    // Trailing spaces before the extension are ignored by Windows as well.
    while (!stem.empty() && stem.back() == ' ') stem.pop_back();
    static const std::set<std::string> k_names{"CON", "PRN", "AUX", "NUL"};
    if (k_names.count(stem) != 0) return true;
    return stem.size() == 4 && (stem.starts_with("COM") || stem.starts_with("LPT")) && stem[3] >= '0' &&
           stem[3] <= '9';
}

std::optional<std::string> windows_violation(std::string_view element) {
    for (char c : element)
        if (std::string_view("<>:\"|?*").find(c) != std::string_view::npos)
            return fmt::format("element '{}' contains '{}', which Windows does not allow", printable(element), c);
    if (element.back() == '.' || element.back() == ' ')
        return fmt::format("element '{}' ends in '{}', which Windows drops", printable(element), element.back());
    if (is_windows_device(element))
        return fmt::format("element '{}' is a Windows device name", printable(element));
    return std::nullopt;
}

std::optional<std::string> character_violation(std::string_view element) {
    for (std::size_t i = 0; i < element.size();) {
        auto b = static_cast<unsigned char>(element[i]);
        if (b == 0) return fmt::format("element '{}' contains a NUL byte", printable(element));
        if (b < 0x20 || b == 0x7F)
            return fmt::format("element '{}' contains control character 0x{:02x}", printable(element), b);
        char32_t cp = 0;
        std::size_t len = decode_utf8(element, i, cp);
        if (len == 0) return fmt::format("element '{}' is not valid UTF-8", printable(element));
        if (is_bidi_control(cp))
            return fmt::format("element '{}' contains bidi control U+{:04X}", printable(element),
                               static_cast<std::uint32_t>(cp));
        i += len;
    }
    return std::nullopt;
}

std::string collision_key(std::string_view element) {
    // ASCII (most names of a large torrent): NFC changes nothing and folding is A-Z → a-z.
    if (std::all_of(element.begin(), element.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
        std::string out(element);
        for (char& c : out)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        return out;
    }
    return fold_case(to_nfc(element));
}

bool is_pad_like(std::string_view element) {
    return element.find("_____padding_file_") != std::string_view::npos;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        char32_t cp = 0;
        std::size_t len = decode_utf8(s, i, cp);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

std::string fold_case(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        char32_t cp = 0;
        std::size_t len = decode_utf8(s, i, cp);
        if (len == 0) {
            out.push_back(s[i]);
            ++i;
            continue;
        }
        append_utf8(out, fold_one(cp));
        i += len;
    }
    return out;
}

std::string join_path(const std::vector<std::string>& path) {
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (i != 0) out.push_back('/');
        out += path[i];
    }
    return out;
}

std::optional<std::string> element_violation(std::string_view element, PathPlatform platform) {
    if (element.empty()) return std::string("empty element is not allowed");
    if (element == "." || element == "..") return fmt::format("element '{}' is not allowed", element);
    for (char c : element)
        if (c == '/' || c == '\\') return fmt::format("element '{}' contains '{}'", printable(element), c);
    if (auto v = character_violation(element)) return v;
    if (element.size() > k_max_element_bytes)
        return fmt::format("element '{}…' is {} bytes long (limit {})", printable(element.substr(0, 32)),
                           element.size(), k_max_element_bytes);
    if (platform == PathPlatform::windows_compatible)
        if (auto v = windows_violation(element)) return v;
    return std::nullopt;
}

std::optional<std::string> path_violation(const std::vector<std::string>& path, PathPlatform platform, PathRole role) {
    if (path.empty()) return std::string("empty path");
    const std::string& first = path.front();
    if (first.size() >= 2 && first[1] == ':' &&
        ((first[0] >= 'A' && first[0] <= 'Z') || (first[0] >= 'a' && first[0] <= 'z')))
        return fmt::format("path starts with drive letter '{}'", first.substr(0, 2));
    std::size_t total = 0;
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (auto v = element_violation(path[i], platform)) return v;
        if (role == PathRole::payload && (is_pad_like(path[i]) || (path[i] == ".pad" && i + 1 < path.size())))
            return fmt::format("element '{}' is named like a pad file but the file has no 'p' attribute",
                               printable(path[i]));
        total += path[i].size() + (i == 0 ? 0 : 1);
    }
    if (total > k_max_path_bytes) return fmt::format("path is {} bytes long (limit {})", total, k_max_path_bytes);
    return std::nullopt;
}

Error unsafe_path_error(std::string_view torrent_name, std::string_view file, std::string_view rule) {
    return Error{"TORRENT_UNSAFE_PATH",
                 fmt::format("unsafe path in torrent '{}': file '{}': {}", printable(torrent_name), printable(file), rule),
                 "archctl refuses paths that libtorrent would rewrite or that could leave the save path"};
}

Status check_payload_paths(std::string_view torrent_name, const std::vector<std::vector<std::string>>& paths,
                           PathPlatform platform) {
    return check_payload_paths(torrent_name, paths.size(), [&](std::size_t n) { return paths[n]; }, platform);
}

namespace {

// A path's collision key: its elements' keys joined with '/'; `dir` sees each directory prefix.
template <typename Fn>
std::string folded_path(const std::vector<std::string>& path, Fn&& dir) {
    std::string folded;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        folded += collision_key(path[i]);
        dir(folded);
        folded.push_back('/');
    }
    folded += collision_key(path.back());
    return folded;
}

std::uint64_t key_hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

}  // namespace

Status check_payload_paths(std::string_view torrent_name, std::size_t count, const PathSource& path_at,
                           PathPlatform platform) {
    for (std::size_t n = 0; n < count; ++n) {
        auto path = path_at(n);
        if (auto v = path_violation(path, platform)) return unsafe_path_error(torrent_name, join_path(path), *v);
    }

    // Names are kept byte for byte (an NFD name is legal on every Linux file system); two paths
    // collide when they are equal after NFC normalisation and case folding, as they would be
    // on a normalising or case-insensitive file system and in Syncthing.
    // Only a hash of each folded path is kept (and the folded directory prefixes, far fewer): the
    // folded paths are made again for the few files whose hash meets another's.
    std::unordered_map<std::string, std::size_t> dirs;  // folded directory prefix → first file below it
    std::vector<std::uint64_t> hashes(count);
    for (std::size_t n = 0; n < count; ++n)
        hashes[n] = key_hash(folded_path(path_at(n), [&](const std::string& d) { dirs.try_emplace(d, n); }));
    auto folded_of = [&](std::size_t n) { return folded_path(path_at(n), [](const std::string&) {}); };

    // The first file in torrent order whose folded path an earlier file has; the earliest such.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_hash(count);
    for (std::size_t n = 0; n < count; ++n) by_hash[n] = {hashes[n], static_cast<std::uint32_t>(n)};
    std::sort(by_hash.begin(), by_hash.end());
    std::size_t dup = count, first = count;
    for (std::size_t i = 0; i < count;) {
        std::size_t j = i;
        while (j < count && by_hash[j].first == by_hash[i].first) ++j;
        for (std::size_t a = i + 1; a < j; ++a) {
            std::string folded = folded_of(by_hash[a].second);
            for (std::size_t b = i; b < a; ++b) {
                if (by_hash[a].second >= dup || folded_of(by_hash[b].second) != folded) continue;
                dup = by_hash[a].second;
                first = by_hash[b].second;
                break;
            }
        }
        i = j;
    }
    by_hash = {};
    if (dup < count)
        return unsafe_path_error(torrent_name, join_path(path_at(dup)),
                                 fmt::format("same path as '{}' after case folding and Unicode NFC normalisation",
                                             printable(join_path(path_at(first)))));

    // The first file in torrent order that is also a directory of another.
    if (dirs.empty()) return ok_status();
    std::unordered_map<std::uint64_t, bool> dir_hashes;
    for (const auto& [d, n] : dirs) dir_hashes.emplace(key_hash(d), true);
    for (std::size_t n = 0; n < count; ++n) {
        if (dir_hashes.count(hashes[n]) == 0) continue;
        auto d = dirs.find(folded_of(n));
        if (d != dirs.end())
            return unsafe_path_error(torrent_name, join_path(path_at(n)),
                                     fmt::format("is also a directory of '{}'", printable(join_path(path_at(d->second)))));
    }
    return ok_status();
}

}  // namespace archctl::torrent
