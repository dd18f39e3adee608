#include "lib/torrent/metainfo.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "lib/torrent/bencode.hpp"
#include "lib/torrent/merkle.hpp"

namespace archctl::torrent {

using bencode::View;

std::int64_t Metainfo::piece_size(std::int64_t piece) const {
    std::int64_t start = piece * m_piece_length;
    return std::min(m_piece_length, m_total_size - start);
}

const std::vector<Sha256Digest>* Metainfo::piece_layer(const Sha256Digest& root) const {
    auto it = m_layers.find(root);
    return it == m_layers.end() ? nullptr : &it->second;
}

namespace {

constexpr std::int64_t k_max_file_size = std::int64_t{1} << 56;
constexpr std::int64_t k_max_piece_length = std::int64_t{1} << 30;

void apply_attr(std::string_view attr, FileFacts& f) {
    for (char c : attr) {
        if (c == 'p') f.pad = true;
        if (c == 'x') f.executable = true;
        if (c == 'h') f.hidden = true;
        if (c == 'l') f.symlink = true;
    }
}

// Elements of a bencoded list of strings (checked to be strings by the caller).
std::vector<std::string_view> string_items(const View& list) {
    std::vector<std::string_view> out;
    for (View e : list.items()) out.push_back(e.as_string());
    return out;
}

std::string join_views(const std::vector<std::string_view>& elements) {
    std::string out;
    for (std::size_t i = 0; i < elements.size(); ++i) {
        if (i != 0) out.push_back('/');
        out.append(elements[i]);
    }
    return out;
}

// A checked dictionary's entries, walked once. View::find walks every value before its key, and
// the info dictionary's 'file tree' and 'files' of a torrent of 100,000 files are megabytes each,
// ahead of most of the keys the parser looks up (a dozen walks of them took a tenth of `plan`'s
// CPU). Same answers as View::find: a checked dictionary's keys are unique.
class DictEntries {
public:
    explicit DictEntries(const View& dict) {
        for (const bencode::ViewEntry& e : dict.entries()) m_entries.push_back(e);
    }
    View find(std::string_view key) const {
        for (const bencode::ViewEntry& e : m_entries)
            if (e.key == key) return e.value;
        return View();
    }

private:
    std::vector<bencode::ViewEntry> m_entries;
};

}  // namespace

// Files as the v1 list or the v2 tree describes them are first read into FileTables without a
// root (paths below the root folder; a single-file v1 torrent's path empty), then laid out.
class MetainfoParser {
public:
    MetainfoParser(std::string bytes, std::string_view label, const ParseOptions& options)
        : m_label(label), m_options(options) {
        m_out.m_bytes = std::move(bytes);
        m_bytes = m_out.m_bytes;
    }

    Result<Metainfo> run() {
        auto decoded = bencode::parse(m_bytes);
        if (!decoded) return invalid(decoded.error().message);
        const View top = *decoded;
        if (!top.is_dict()) return invalid("top level is not a dictionary");
        const DictEntries top_entries(top);
        const View info_view = top_entries.find("info");
        if (!info_view.is_dict()) return invalid("missing 'info' dictionary");
        const DictEntries info(info_view);
        m_out.m_info_at = static_cast<std::size_t>(info_view.bytes().data() - m_bytes.data());
        m_out.m_info_length = info_view.bytes().size();
        if (View v = top_entries.find("created by"); v.is_string()) m_out.m_created_by = v.as_string();
        if (View v = top_entries.find("comment"); v.is_string()) m_out.m_comment = v.as_string();

        ARCHCTL_TRY_STATUS(parse_versions(info));
        ARCHCTL_TRY_STATUS(parse_piece_length(info));
        ARCHCTL_TRY_STATUS(parse_name(info));
        if (m_has_v1) ARCHCTL_TRY_STATUS(parse_v1_files(info));
        if (m_has_v2) ARCHCTL_TRY_STATUS(parse_v2_tree(info));
        ARCHCTL_TRY_STATUS(build_layout());
        ARCHCTL_TRY_STATUS(finish_piece_count());
        ARCHCTL_TRY_STATUS(check_paths());
        if (m_has_v1) ARCHCTL_TRY_STATUS(parse_v1_pieces(info));
        if (m_has_v2) ARCHCTL_TRY_STATUS(parse_layers(top_entries));
        auto hashes = m_has_v1 && m_has_v2 ? Identity::Hashes::both
                      : m_has_v1           ? Identity::Hashes::v1_only
                                           : Identity::Hashes::v2_only;
        m_out.m_identity = Identity::of_info_bytes(m_out.info_bytes(), hashes);
        m_out.m_files.shrink_to_fit();
        return std::move(m_out);
    }

private:
    Error invalid(std::string_view cause) const {
        return Error{"TORRENT_INVALID", fmt::format("invalid torrent '{}': {}", printable(m_label), cause)};
    }

    Status parse_versions(const DictEntries& info) {
        if (const View mv = info.find("meta version"); mv.present()) {
            if (!mv.is_integer()) return invalid("'meta version' is not an integer");
            if (mv.as_integer() != 2)
                return invalid(fmt::format("unsupported meta version {}", mv.as_integer()));
            m_has_v2 = true;
        }
        m_has_v1 = info.find("pieces").present();
        if (!m_has_v1 && !m_has_v2) return invalid("neither v1 'pieces' nor 'meta version' 2");
        if (m_has_v2 && !info.find("file tree").present()) return invalid("'meta version' 2 without 'file tree'");
        if (m_has_v1 && !info.find("length").present() && !info.find("files").present())
            return invalid("'pieces' without 'length' or 'files'");
        return ok_status();
    }

    Status parse_piece_length(const DictEntries& info) {
        const View pl = info.find("piece length");
        if (!pl.is_integer()) return invalid("missing integer 'piece length'");
        std::int64_t l = pl.as_integer();
        if (l <= 0 || l > k_max_piece_length) return invalid(fmt::format("piece length {} out of range", l));
        if (m_has_v2 && (l < merkle::k_block_size || (l & (l - 1)) != 0))
            return invalid(fmt::format("piece length {} is not a power of two of at least 16 KiB (v2)", l));
        m_out.m_piece_length = l;
        return ok_status();
    }

    // Reads `key` / `key.utf-8` (libtorrent prefers the latter); both present and different is
    // a path-safety refusal because the on-disk name would depend on the reader.
    template <class Dict>  // a View or DictEntries
    Result<std::optional<std::string>> utf8_string(const Dict& dict, std::string_view key, std::string_view file) {
        const View plain = dict.find(key);
        const View utf8 = dict.find(std::string(key) + ".utf-8");
        if (plain.present() && !plain.is_string()) return invalid(fmt::format("'{}' is not a string", key));
        if (utf8.present() && !utf8.is_string()) return invalid(fmt::format("'{}.utf-8' is not a string", key));
        if (plain.present() && utf8.present() && plain.as_string() != utf8.as_string())
            return unsafe_path_error(m_label, file, fmt::format("'{}' and '{}.utf-8' differ", key, key));
        if (utf8.present()) return std::optional<std::string>(utf8.as_string());
        if (plain.present()) return std::optional<std::string>(plain.as_string());
        return std::optional<std::string>();
    }

    Status parse_name(const DictEntries& info) {
        ARCHCTL_TRY_ASSIGN(auto name, utf8_string(info, "name", "name"));
        if (!name) return invalid("missing 'name'");
        if (auto v = element_violation(*name, m_options.platform)) return unsafe_path_error(*name, *name, *v);
        m_out.m_name = *name;
        return ok_status();
    }

    template <class Dict>  // a View or DictEntries
    Result<FileFacts> parse_attrs_and_length(const Dict& dict) {
        FileFacts f;
        const View length = dict.find("length");
        if (!length.is_integer()) return invalid("file without integer 'length'");
        if (length.as_integer() < 0 || length.as_integer() > k_max_file_size)
            return invalid(fmt::format("file length {} out of range", length.as_integer()));
        f.size = length.as_integer();
        if (const View attr = dict.find("attr"); attr.present()) {
            if (!attr.is_string()) return invalid("'attr' is not a string");
            apply_attr(attr.as_string(), f);
        }
        return f;
    }

    Result<std::vector<std::string_view>> parse_path_list(const View& entry, bool pad) {
        std::vector<std::string_view> rel;
        const View plain = entry.find("path");
        const View utf8 = entry.find("path.utf-8");
        const View chosen = utf8.present() ? utf8 : plain;
        if (!chosen.present()) {
            if (pad) return rel;
            return invalid("file without 'path'");
        }
        for (const View& list : {plain, utf8}) {
            if (!list.present()) continue;
            if (!list.is_list()) return invalid("'path' is not a list");
            for (View e : list.items())
                if (!e.is_string()) return invalid("'path' element is not a string");
        }
        rel = string_items(chosen);
        if (plain.present() && utf8.present() && string_items(plain) != rel)
            return unsafe_path_error(m_out.m_name, join_views(rel), "'path' and 'path.utf-8' differ");
        return rel;
    }

    Status parse_v1_files(const DictEntries& info) {
        const View files = info.find("files");
        const View length = info.find("length");
        if (files.present() && length.present()) return invalid("both 'length' and 'files'");
        if (length.present()) {
            ARCHCTL_TRY_ASSIGN(FileFacts f, parse_attrs_and_length(info));
            m_v1.add(std::vector<std::string_view>{}, f);
            m_v1_multi = false;
            return ok_status();
        }
        if (!files.is_list() || files.items().begin() == files.items().end())
            return invalid("'files' is not a non-empty list");
        m_v1_multi = true;
        for (View entry : files.items()) {
            if (!entry.is_dict()) return invalid("'files' entry is not a dictionary");
            ARCHCTL_TRY_ASSIGN(FileFacts f, parse_attrs_and_length(entry));
            ARCHCTL_TRY_ASSIGN(auto rel, parse_path_list(entry, f.pad));
            // Only a pad that has no path at all gets libtorrent's name; an empty list is refused.
            bool has_path = entry.find("path").present() || entry.find("path.utf-8").present();
            if (rel.empty() && (has_path || !f.pad)) return unsafe_path_error(m_out.m_name, "", "empty path");
            if (rel.empty()) {
                m_v1.add({".pad", std::to_string(f.size)}, f);
                continue;
            }
            m_v1.add(rel, f);
        }
        return ok_status();
    }

    Status parse_tree_file(const View& props, std::vector<std::string_view>& prefix) {
        if (!props.is_dict()) return invalid("file tree entry '' is not a dictionary");
        ARCHCTL_TRY_ASSIGN(FileFacts f, parse_attrs_and_length(props));
        if (f.pad) return invalid(fmt::format("pad attribute inside the v2 file tree ('{}')", printable(join_views(prefix))));
        if (const View root = props.find("pieces root"); root.present() && f.size > 0) {
            if (!root.is_string() || root.as_string().size() != 32)
                return invalid(fmt::format("'pieces root' of '{}' is not 32 bytes", printable(join_views(prefix))));
            Sha256Digest d{};
            std::memcpy(d.data(), root.as_string().data(), 32);
            if (d == Sha256Digest{}) return invalid(fmt::format("'pieces root' of '{}' is all zeros", printable(join_views(prefix))));
            f.pieces_root = d;
        } else if (f.size > 0) {
            return invalid(fmt::format("file '{}' has no 'pieces root'", printable(join_views(prefix))));
        }
        m_v2.add(prefix, f);
        return ok_status();
    }

    Status parse_tree_node(const View& node, std::vector<std::string_view>& prefix) {
        if (!node.is_dict() || node.entries().begin() == node.entries().end())
            return invalid(fmt::format("file tree node '{}' is not a non-empty dictionary", printable(join_views(prefix))));
        if (const View props = node.find(""); props.present()) {
            if (prefix.empty()) return invalid("file tree root is a file");
            if (node.size() != 1)
                return invalid(fmt::format("file tree node '{}' is both a file and a directory", printable(join_views(prefix))));
            return parse_tree_file(props, prefix);
        }
        for (const auto& entry : node.entries()) {
            prefix.push_back(entry.key);
            ARCHCTL_TRY_STATUS(parse_tree_node(entry.value, prefix));
            prefix.pop_back();
        }
        return ok_status();
    }

    Status parse_v2_tree(const DictEntries& info) {
        std::vector<std::string_view> prefix;
        const View tree = info.find("file tree");
        ARCHCTL_TRY_STATUS(parse_tree_node(tree, prefix));
        auto first = tree.entries().begin();
        m_v2_single = tree.size() == 1 && first->value.find("").present();
        return ok_status();
    }

    // A row of `from` added to the native list at `offset`.
    Status add_entry(const FileTable& from, std::size_t i, std::int64_t& offset) {
        std::int64_t size = from.size_of(i);
        m_out.m_files.add_from(from, i, offset);
        if (offset > k_max_file_size - size) return invalid("total size out of range");
        offset += size;
        if (!from.pad(i)) m_out.m_payload_size += size;
        return ok_status();
    }

    Status build_v2_only() {
        const std::int64_t l = m_out.m_piece_length;
        m_out.m_multi_file = !m_v2_single;
        if (m_v2_single) m_out.m_name = std::string(m_v2.first_element(0));
        else m_out.m_files.set_root(m_out.m_name);
        std::int64_t offset = 0;
        for (std::size_t i = 0; i < m_v2.size(); ++i) {
            ARCHCTL_TRY_STATUS(add_entry(m_v2, i, offset));
            if (m_v2.size_of(i) > 0 && offset % l != 0) {
                FileFacts pad;
                pad.size = l - offset % l;
                pad.offset = offset;
                pad.pad = true;
                m_out.m_files.add({".pad", std::to_string(pad.size)}, pad);
                offset += pad.size;
            }
        }
        m_out.m_total_size = offset;
        return ok_status();
    }

    // A hybrid's v1 list, pads set aside, must be the v2 tree's files in the same order with the
    // same sizes, and every non-empty file must start on a piece boundary.
    Status check_hybrid() {
        FileTable& files = m_out.m_files;
        std::size_t payload = 0;
        for (std::size_t i = 0; i < files.size(); ++i)
            if (!files.pad(i)) ++payload;
        if (payload != m_v2.size())
            return invalid(fmt::format("inconsistent hybrid: {} v1 files but {} v2 files", payload, m_v2.size()));
        if (!m_v1_multi && !m_v2_single) return invalid("inconsistent hybrid: single-file v1 but multi-file v2");
        std::int64_t v2_total = 0;
        const std::int64_t l = m_out.m_piece_length;
        std::size_t n = 0;
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (files.pad(i)) continue;
            if (files.rel_bytes(i) != m_v2.rel_bytes(n) || files.size_of(i) != m_v2.size_of(n)) {
                std::string v2_path = m_v1_multi ? files.root() + "/" + m_v2.path_string(n) : m_v2.path_string(n);
                return invalid(fmt::format("inconsistent hybrid: v1 file '{}' ({} bytes) vs v2 file '{}' ({} bytes)",
                                           printable(files.path_string(i)), files.size_of(i), printable(v2_path),
                                           m_v2.size_of(n)));
            }
            if (files.size_of(i) > 0 && files.offset_of(i) % l != 0)
                return invalid(fmt::format("inconsistent hybrid: file '{}' does not start on a piece boundary",
                                           printable(files.path_string(i))));
            files.set_pieces_root(i, m_v2[n].pieces_root);
            v2_total += (m_v2.size_of(n) + l - 1) / l * l;
            ++n;
        }
        if ((m_out.m_total_size + l - 1) / l != v2_total / l)
            return invalid("inconsistent hybrid: v1 and v2 piece counts differ");
        return ok_status();
    }

    Status build_layout() {
        if (!m_has_v1) return build_v2_only();
        m_out.m_multi_file = m_v1_multi;
        if (m_v1_multi) m_out.m_files.set_root(m_out.m_name);
        std::int64_t offset = 0;
        for (std::size_t i = 0; i < m_v1.size(); ++i) {
            if (!m_v1_multi) {
                // A single-file torrent's one path element is its name.
                FileFacts f{.size = m_v1.size_of(0), .offset = 0};
                FileEntry e = m_v1[0];
                f.executable = e.executable;
                f.hidden = e.hidden;
                f.pad = e.pad;
                f.symlink = m_v1.symlink(0);
                m_out.m_files.add({std::string_view(m_out.m_name)}, f);
                if (offset > k_max_file_size - f.size) return invalid("total size out of range");
                offset += f.size;
                if (!f.pad) m_out.m_payload_size += f.size;
                continue;
            }
            ARCHCTL_TRY_STATUS(add_entry(m_v1, i, offset));
        }
        m_v1 = FileTable();
        m_out.m_total_size = offset;
        if (m_has_v2) ARCHCTL_TRY_STATUS(check_hybrid());
        m_v2 = FileTable();
        return ok_status();
    }

    Status finish_piece_count() {
        if (m_out.m_total_size == 0) return invalid("torrent has no data (total size 0)");
        std::int64_t count = (m_out.m_total_size + m_out.m_piece_length - 1) / m_out.m_piece_length;
        if (count > std::numeric_limits<std::int32_t>::max()) return invalid("too many pieces");
        m_out.m_piece_count = count;
        return ok_status();
    }

    // Every path, pads included, obeys the path rules; pads are only spared the pad-like-name
    // rule and the set rules (they are never on disk, and equal pads share a path).
    Status check_paths() {
        const FileTable& files = m_out.m_files;
        std::vector<std::uint32_t> payload;
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (files.pad(i)) {
                if (auto v = path_violation(files.path_elements(i), m_options.platform, PathRole::pad))
                    return unsafe_path_error(m_out.m_name, files.path_string(i), fmt::format("{} (pad file)", *v));
                continue;
            }
            if (files.symlink(i))
                return unsafe_path_error(m_out.m_name, files.path_string(i),
                                         "symlinks (attr 'l') are not supported payload");
            payload.push_back(static_cast<std::uint32_t>(i));
        }
        return check_payload_paths(
            m_out.m_name, payload.size(), [&](std::size_t n) { return files.path_elements(payload[n]); },
            m_options.platform);
    }

    Status parse_v1_pieces(const DictEntries& info) {
        const View pieces = info.find("pieces");
        if (!pieces.is_string() || pieces.as_string().size() % 20 != 0)
            return invalid("'pieces' is not a multiple of 20 bytes");
        auto count = static_cast<std::int64_t>(pieces.as_string().size() / 20);
        if (count != m_out.m_piece_count)
            return invalid(fmt::format("'pieces' holds {} hashes but the files need {}", count, m_out.m_piece_count));
        m_out.m_v1_pieces.resize(static_cast<std::size_t>(count));
        std::memcpy(m_out.m_v1_pieces.data(), pieces.as_string().data(), pieces.as_string().size());
        return ok_status();
    }

    Status parse_layers(const DictEntries& top) {
        const std::int64_t l = m_out.m_piece_length;
        const FileTable& files = m_out.m_files;
        std::set<Sha256Digest> needed;
        for (FileEntry e : files)
            if (!e.pad && e.size > l) needed.insert(*e.pieces_root);
        const View layers = top.find("piece layers");
        if (!layers.present()) {
            if (needed.empty()) return ok_status();
            if (!m_options.layers_optional) return invalid("missing 'piece layers'");
            m_out.m_layers_missing = true;
            return ok_status();
        }
        if (!layers.is_dict()) return invalid("'piece layers' is not a dictionary");
        for (const auto& entry : layers.entries()) {
            if (entry.key.size() != 32 || !entry.value.is_string() || entry.value.as_string().size() % 32 != 0)
                return invalid("malformed 'piece layers' entry");
            Sha256Digest root{};
            std::memcpy(root.data(), entry.key.data(), 32);
            if (needed.count(root) == 0) return invalid("'piece layers' entry for no file larger than one piece");
            std::vector<Sha256Digest> layer(entry.value.as_string().size() / 32);
            std::memcpy(layer.data(), entry.value.as_string().data(), entry.value.as_string().size());
            if (merkle::root_from_layer(layer, l) != root)
                return invalid("'piece layers' entry does not match its 'pieces root'");
            m_out.m_layers.emplace(root, std::move(layer));
        }
        for (FileEntry e : files) {
            if (e.pad || e.size <= l) continue;
            auto it = m_out.m_layers.find(*e.pieces_root);
            if (it == m_out.m_layers.end())
                return invalid(fmt::format("no piece layer for '{}'", printable(e.path_string())));
            if (static_cast<std::int64_t>(it->second.size()) != (e.size + l - 1) / l)
                return invalid(fmt::format("piece layer of '{}' has the wrong length", printable(e.path_string())));
        }
        return ok_status();
    }

    std::string_view m_bytes;
    std::string_view m_label;
    const ParseOptions& m_options;
    Metainfo m_out;
    bool m_has_v1 = false;
    bool m_has_v2 = false;
    bool m_v1_multi = false;
    bool m_v2_single = false;
    FileTable m_v1;
    FileTable m_v2;
};

Result<std::string> with_announce(std::string_view bytes, const std::vector<std::vector<std::string>>& tiers,
                                  const std::vector<std::string>& web_seeds) {
    ARCHCTL_TRY_ASSIGN(bencode::View top, bencode::parse(bytes));
    if (!top.is_dict()) return Error{"TORRENT_INVALID", "invalid torrent: the top level is not a dictionary"};
    // Keys in raw byte order (std::string compares bytes as unsigned char), each with its encoding.
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& e : top.entries())
        if (e.key != "announce" && e.key != "announce-list" && e.key != "url-list") entries.emplace_back(e.key, e.value.bytes());
    auto encoded = [](auto&& write) {
        std::string out;
        bencode::Writer w(out);
        write(w);
        return out;
    };
    std::size_t trackers = 0;
    for (const auto& tier : tiers) trackers += tier.size();
    if (trackers > 0) {
        const auto first = std::find_if(tiers.begin(), tiers.end(), [](const auto& tier) { return !tier.empty(); });
        entries.emplace_back("announce", encoded([&](bencode::Writer& w) { w.string(first->front()); }));
    }
    if (trackers > 1)
        entries.emplace_back("announce-list", encoded([&](bencode::Writer& w) {
                                 w.begin_list();
                                 for (const auto& tier : tiers) {
                                     if (tier.empty()) continue;
                                     w.begin_list();
                                     for (const auto& url : tier) w.string(url);
                                     w.end();
                                 }
                                 w.end();
                             }));
    if (web_seeds.size() == 1) entries.emplace_back("url-list", encoded([&](bencode::Writer& w) { w.string(web_seeds.front()); }));
    if (web_seeds.size() > 1)
        entries.emplace_back("url-list", encoded([&](bencode::Writer& w) {
                                 w.begin_list();
                                 for (const auto& url : web_seeds) w.string(url);
                                 w.end();
                             }));
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out;
    out.reserve(bytes.size() + 256);
    bencode::Writer w(out);
    w.begin_dict();
    for (const auto& [key, value] : entries) {
        w.key(key);
        w.raw(value);
    }
    w.end();
    return out;
}

Result<Metainfo> parse_metainfo(std::string_view bytes, std::string_view label, const ParseOptions& options) {
    return MetainfoParser(std::string(bytes), label, options).run();
}

Result<Metainfo> take_metainfo(std::string bytes, std::string_view label, const ParseOptions& options) {
    return MetainfoParser(std::move(bytes), label, options).run();
}

Result<Metainfo> load_metainfo(const std::filesystem::path& file, const ParseOptions& options) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error{"IO", fmt::format("cannot read torrent '{}': {}", printable(file.string()), std::strerror(errno))};
    std::string bytes;
    constexpr std::size_t k_limit = 128u << 20;
    if (struct stat st {}; ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) <= k_limit)
        bytes.reserve(static_cast<std::size_t>(st.st_size) + 1);
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            return Error{"IO", fmt::format("cannot read torrent '{}': {}", printable(file.string()), std::strerror(err))};
        }
        if (n == 0) break;
        bytes.append(buf, static_cast<std::size_t>(n));
        if (bytes.size() > k_limit) {
            ::close(fd);
            return Error{"TORRENT_INVALID", fmt::format("invalid torrent '{}': larger than 128 MiB", printable(file.string()))};
        }
    }
    ::close(fd);
    return MetainfoParser(std::move(bytes), file.filename().string(), options).run();
}

}  // namespace archctl::torrent
