#include "lib/torrent/layout.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace archctl::torrent {
namespace {

// One UTF-8 code point at the start of `s`: (code point, length); (-1, 1) when invalid.
std::pair<std::int32_t, std::size_t> decode(std::string_view s) {
    auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    unsigned char c = b(0);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || len > s.size()) return {-1, 1};
    if (len == 1) return {c, 1};
    std::int32_t cp = c & (0x7f >> len);
    for (std::size_t i = 1; i < len; ++i) {
        if ((b(i) & 0xc0) != 0x80) return {-1, 1};
        cp = (cp << 6) | (b(i) & 0x3f);
    }
    // Overlong forms, surrogates and values past Unicode are invalid.
    static constexpr std::array<std::int32_t, 5> min_of = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_of[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {-1, 1};
    return {cp, len};
}

// Characters libtorrent drops from a path element: direction changes and separators.
bool dropped(std::int32_t cp) {
    static constexpr std::array<std::int32_t, 7> bidi = {0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x200e, 0x200f};
    return std::find(bidi.begin(), bidi.end(), cp) != bidi.end() || cp == '/' || cp == '\\';
}

// Where libtorrent starts truncating a long element (keeping its extension).
constexpr std::size_t k_truncate_element_at = 240;

std::string strip_first(std::string_view path) {
    auto slash = path.find('/');
    return slash == std::string_view::npos ? std::string(path) : std::string(path.substr(slash + 1));
}

// The folder qBittorrent makes for a single-file torrent: the name without its last extension.
std::string default_folder(std::string_view file_name) {
    auto dot = file_name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return std::string(file_name);
    return std::string(file_name.substr(0, dot));
}

// `meta_paths` name a single-file torrent (its one path has no root folder).
bool single_file(const std::vector<std::string>& meta_paths) {
    for (const auto& p : meta_paths)
        if (!p.empty()) return p.find('/') == std::string::npos;
    return false;
}

std::size_t matches(const PlacementLayout& l) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < l.names.size() && i < l.expected.size(); ++i)
        if (!l.names[i].empty() && l.names[i] == l.expected[i]) ++n;
    return n;
}

}  // namespace

std::string to_string(ContentLayout layout) {
    switch (layout) {
        case ContentLayout::original: return "Original";
        case ContentLayout::subfolder: return "Subfolder";
        case ContentLayout::no_subfolder: return "NoSubfolder";
    }
    return "Original";
}

bool parse_content_layout(std::string_view name, ContentLayout& out) {
    for (ContentLayout l : {ContentLayout::original, ContentLayout::subfolder, ContentLayout::no_subfolder})
        if (name == to_string(l)) {
            out = l;
            return true;
        }
    return false;
}

std::string disk_element(std::string_view element) {
    if (element == ".") return "";
    if (element.empty()) return "_";
    std::string out;
    std::size_t added = 0, dots = 0;
    bool found_extension = false;
    for (std::size_t i = 0; i < element.size();) {
        auto [cp, len] = decode(element.substr(i));
        if (cp >= 0 && dropped(cp)) {
            i += len;
            continue;
        }
        if (cp < 32) {  // invalid UTF-8 or a control character
            out += '_';
            ++added;
            i += len;
            continue;
        }
        out.append(element.substr(i, len));
        if (cp == '.') ++dots;
        added += len;
        if (added >= k_truncate_element_at && !found_extension) {
            // Keep an extension: a '.' among the element's last 9 bytes, after this point.
            std::size_t dot = std::string_view::npos;
            std::size_t floor = std::max(element.size() < 10 ? std::size_t{0} : element.size() - 10, i);
            for (std::size_t j = element.size() - 1; j > floor; --j)
                if (element[j] == '.') {
                    dot = j;
                    break;
                }
            if (dot == std::string_view::npos) break;
            found_extension = true;
            i = dot;
            continue;
        }
        i += len;
    }
    if (added == dots && added <= 2) return "";  // "." and ".." are dropped
    return out;
}

std::string disk_path_of(std::string_view metainfo_path) {
    std::string out;
    std::size_t start = 0;
    while (start <= metainfo_path.size()) {
        auto slash = metainfo_path.find('/', start);
        std::string_view element = metainfo_path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        std::string e = disk_element(element);
        if (!e.empty()) {
            if (!out.empty()) out += '/';
            out += e;
        }
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return out;
}

bool is_subfolder_name(std::string_view folder, std::string_view file_name) {
    if (folder.empty()) return false;
    if (folder == file_name) return file_name.find('.') == std::string_view::npos || file_name.front() == '.';
    return file_name.size() > folder.size() + 1 && file_name.substr(0, folder.size()) == folder && file_name[folder.size()] == '.';
}

std::string layout_path(ContentLayout layout, const std::string& folder, std::string_view path) {
    std::string disk = disk_path_of(path);
    bool single = path.find('/') == std::string_view::npos;
    if (layout == ContentLayout::no_subfolder && !single) return strip_first(disk);
    if (layout == ContentLayout::subfolder && single) return (folder.empty() ? default_folder(disk) : folder) + "/" + disk;
    return disk;
}

std::string PlacementLayout::expected_path(std::uint32_t index) const { return index < expected.size() ? expected[index] : std::string(); }

std::string PlacementLayout::disk_path(std::uint32_t index) const {
    if (index < names.size() && !names[index].empty()) return names[index];
    return expected_path(index);
}

bool PlacementLayout::renamed(std::uint32_t index) const {
    if (index >= names.size() || names[index].empty()) return false;
    std::string want = expected_path(index);
    return !want.empty() && names[index] != want;
}

PlacementLayout apply_layout(const std::vector<std::string>& meta_paths, ContentLayout layout, const std::string& folder) {
    PlacementLayout l;
    l.layout = layout;
    l.folder = layout == ContentLayout::subfolder ? folder : std::string();
    l.expected.reserve(meta_paths.size());
    for (const auto& p : meta_paths) l.expected.push_back(p.empty() ? std::string() : layout_path(layout, folder, p));
    if (layout == ContentLayout::subfolder && l.folder.empty())
        for (const auto& e : l.expected)
            if (!e.empty()) l.folder = e.substr(0, e.find('/'));
    return l;
}

PlacementLayout infer_layout(const std::vector<std::string>& meta_paths, const std::vector<std::string>& names) {
    PlacementLayout best = apply_layout(meta_paths, ContentLayout::original, "");
    best.names = names;
    if (names.empty()) return best;
    std::vector<PlacementLayout> others;
    if (single_file(meta_paths)) {
        // The folder is qBittorrent's choice: read it from the name of the one file.
        for (std::size_t i = 0; i < meta_paths.size() && i < names.size(); ++i) {
            if (meta_paths[i].empty()) continue;
            const std::string& n = names[i];
            auto slash = n.find('/');
            if (slash == std::string::npos || n.find('/', slash + 1) != std::string::npos) break;
            std::string folder = n.substr(0, slash), file = disk_path_of(meta_paths[i]);
            if (n.substr(slash + 1) == file && is_subfolder_name(folder, file))
                others.push_back(apply_layout(meta_paths, ContentLayout::subfolder, folder));
            break;
        }
    } else {
        others.push_back(apply_layout(meta_paths, ContentLayout::no_subfolder, ""));
    }
    std::size_t best_matches = matches(best);
    for (auto& o : others) {
        o.names = names;
        std::size_t m = matches(o);
        if (m > best_matches) {
            best = std::move(o);
            best_matches = m;
        }
    }
    return best;
}

}  // namespace archctl::torrent
