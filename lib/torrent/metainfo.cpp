#include "lib/torrent/metainfo.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "lib/torrent/bencode.hpp"
#include "lib/torrent/merkle.hpp"

namespace archctl::torrent {

using bencode::Value;

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

// One file as a list or tree describes it, before the native layout is built.
struct RawFile {
    std::vector<std::string> rel;  // path below the root folder; empty for a single-file v1 torrent
    std::int64_t size = 0;
    bool pad = false, executable = false, hidden = false, symlink = false;
    std::optional<Sha256Digest> root;
};

void apply_attr(const std::string& attr, RawFile& f) {
    for (char c : attr) {
        if (c == 'p') f.pad = true;
        if (c == 'x') f.executable = true;
        if (c == 'h') f.hidden = true;
        if (c == 'l') f.symlink = true;
    }
}

}  // namespace

class MetainfoParser {
public:
    MetainfoParser(std::string_view bytes, std::string_view label, const ParseOptions& options)
        : m_bytes(bytes), m_label(label), m_options(options) {}

    Result<Metainfo> run() {
        auto decoded = bencode::decode(m_bytes);
        if (!decoded) return invalid(decoded.error().message);
        const Value& top = *decoded;
        if (!top.is_dict()) return invalid("top level is not a dictionary");
        const Value* info = top.find("info");
        if (info == nullptr || !info->is_dict()) return invalid("missing 'info' dictionary");
        m_out.m_info_bytes.assign(m_bytes.substr(info->span().offset, info->span().length));
        if (const Value* v = top.find("created by"); v && v->is_string()) m_out.m_created_by = v->as_string();
        if (const Value* v = top.find("comment"); v && v->is_string()) m_out.m_comment = v->as_string();

        ARCHCTL_TRY_STATUS(parse_versions(*info));
        ARCHCTL_TRY_STATUS(parse_piece_length(*info));
        ARCHCTL_TRY_STATUS(parse_name(*info));
        if (m_has_v1) ARCHCTL_TRY_STATUS(parse_v1_files(*info));
        if (m_has_v2) ARCHCTL_TRY_STATUS(parse_v2_tree(*info));
        ARCHCTL_TRY_STATUS(build_layout());
        ARCHCTL_TRY_STATUS(finish_piece_count());
        ARCHCTL_TRY_STATUS(check_paths());
        if (m_has_v1) ARCHCTL_TRY_STATUS(parse_v1_pieces(*info));
        if (m_has_v2) ARCHCTL_TRY_STATUS(parse_layers(top));
        auto hashes = m_has_v1 && m_has_v2 ? Identity::Hashes::both
                      : m_has_v1           ? Identity::Hashes::v1_only
                                           : Identity::Hashes::v2_only;
        m_out.m_identity = Identity::of_info_bytes(m_out.m_info_bytes, hashes);
        return std::move(m_out);
    }

private:
    Error invalid(std::string_view cause) const {
        return Error{"TORRENT_INVALID", fmt::format("invalid torrent '{}': {}", printable(m_label), cause)};
    }

    Status parse_versions(const Value& info) {
        if (const Value* mv = info.find("meta version")) {
            if (!mv->is_integer()) return invalid("'meta version' is not an integer");
            if (mv->as_integer() != 2)
                return invalid(fmt::format("unsupported meta version {}", mv->as_integer()));
            m_has_v2 = true;
        }
        m_has_v1 = info.find("pieces") != nullptr;
        if (!m_has_v1 && !m_has_v2) return invalid("neither v1 'pieces' nor 'meta version' 2");
        if (m_has_v2 && info.find("file tree") == nullptr) return invalid("'meta version' 2 without 'file tree'");
        if (m_has_v1 && info.find("length") == nullptr && info.find("files") == nullptr)
            return invalid("'pieces' without 'length' or 'files'");
        return ok_status();
    }

    Status parse_piece_length(const Value& info) {
        const Value* pl = info.find("piece length");
        if (pl == nullptr || !pl->is_integer()) return invalid("missing integer 'piece length'");
        std::int64_t l = pl->as_integer();
        if (l <= 0 || l > k_max_piece_length) return invalid(fmt::format("piece length {} out of range", l));
        if (m_has_v2 && (l < merkle::k_block_size || (l & (l - 1)) != 0))
            return invalid(fmt::format("piece length {} is not a power of two of at least 16 KiB (v2)", l));
        m_out.m_piece_length = l;
        return ok_status();
    }

    // Reads `key` / `key.utf-8` (libtorrent prefers the latter); both present and different is
    // a path-safety refusal because the on-disk name would depend on the reader.
    Result<std::optional<std::string>> utf8_string(const Value& dict, std::string_view key, std::string_view file) {
        const Value* plain = dict.find(key);
        const Value* utf8 = dict.find(std::string(key) + ".utf-8");
        if (plain && !plain->is_string()) return invalid(fmt::format("'{}' is not a string", key));
        if (utf8 && !utf8->is_string()) return invalid(fmt::format("'{}.utf-8' is not a string", key));
        if (plain && utf8 && plain->as_string() != utf8->as_string())
            return unsafe_path_error(m_label, file, fmt::format("'{}' and '{}.utf-8' differ", key, key));
        if (utf8) return std::optional<std::string>(utf8->as_string());
        if (plain) return std::optional<std::string>(plain->as_string());
        return std::optional<std::string>();
    }

    Status parse_name(const Value& info) {
        ARCHCTL_TRY_ASSIGN(auto name, utf8_string(info, "name", "name"));
        if (!name) return invalid("missing 'name'");
        if (auto v = element_violation(*name, m_options.platform)) return unsafe_path_error(*name, *name, *v);
        m_out.m_name = *name;
        return ok_status();
    }

    Result<RawFile> parse_attrs_and_length(const Value& dict) {
        RawFile f;
        const Value* length = dict.find("length");
        if (length == nullptr || !length->is_integer()) return invalid("file without integer 'length'");
        if (length->as_integer() < 0 || length->as_integer() > k_max_file_size)
            return invalid(fmt::format("file length {} out of range", length->as_integer()));
        f.size = length->as_integer();
        if (const Value* attr = dict.find("attr")) {
            if (!attr->is_string()) return invalid("'attr' is not a string");
            apply_attr(attr->as_string(), f);
        }
        return f;
    }

    Result<std::vector<std::string>> parse_path_list(const Value& entry, bool pad) {
        std::vector<std::string> rel;
        const Value* plain = entry.find("path");
        const Value* utf8 = entry.find("path.utf-8");
        const Value* chosen = utf8 ? utf8 : plain;
        if (chosen == nullptr) {
            if (pad) return rel;
            return invalid("file without 'path'");
        }
        for (const Value* list : {plain, utf8}) {
            if (list == nullptr) continue;
            if (!list->is_list()) return invalid("'path' is not a list");
            for (const auto& e : list->as_list())
                if (!e.is_string()) return invalid("'path' element is not a string");
        }
        for (const auto& e : chosen->as_list()) rel.push_back(e.as_string());
        if (plain && utf8) {
            std::vector<std::string> other;
            for (const auto& e : plain->as_list()) other.push_back(e.as_string());
            if (other != rel)
                return unsafe_path_error(m_out.m_name, join_path(rel), "'path' and 'path.utf-8' differ");
        }
        return rel;
    }

    Status parse_v1_files(const Value& info) {
        const Value* files = info.find("files");
        const Value* length = info.find("length");
        if (files && length) return invalid("both 'length' and 'files'");
        if (length) {
            ARCHCTL_TRY_ASSIGN(RawFile f, parse_attrs_and_length(info));
            m_v1.push_back(std::move(f));
            m_v1_multi = false;
            return ok_status();
        }
        if (!files->is_list() || files->as_list().empty()) return invalid("'files' is not a non-empty list");
        m_v1_multi = true;
        for (const auto& entry : files->as_list()) {
            if (!entry.is_dict()) return invalid("'files' entry is not a dictionary");
            ARCHCTL_TRY_ASSIGN(RawFile f, parse_attrs_and_length(entry));
            ARCHCTL_TRY_ASSIGN(f.rel, parse_path_list(entry, f.pad));
            // Only a pad that has no path at all gets libtorrent's name; an empty list is refused.
            bool has_path = entry.find("path") != nullptr || entry.find("path.utf-8") != nullptr;
            if (f.rel.empty() && (has_path || !f.pad)) return unsafe_path_error(m_out.m_name, "", "empty path");
            if (f.rel.empty()) f.rel = {".pad", std::to_string(f.size)};
            m_v1.push_back(std::move(f));
        }
        return ok_status();
    }

    Status parse_tree_file(const Value& props, std::vector<std::string>& prefix) {
        if (!props.is_dict()) return invalid("file tree entry '' is not a dictionary");
        ARCHCTL_TRY_ASSIGN(RawFile f, parse_attrs_and_length(props));
        if (f.pad) return invalid(fmt::format("pad attribute inside the v2 file tree ('{}')", printable(join_path(prefix))));
        if (const Value* root = props.find("pieces root"); root && f.size > 0) {
            if (!root->is_string() || root->as_string().size() != 32)
                return invalid(fmt::format("'pieces root' of '{}' is not 32 bytes", printable(join_path(prefix))));
            Sha256Digest d{};
            std::memcpy(d.data(), root->as_string().data(), 32);
            if (d == Sha256Digest{}) return invalid(fmt::format("'pieces root' of '{}' is all zeros", printable(join_path(prefix))));
            f.root = d;
        } else if (f.size > 0) {
            return invalid(fmt::format("file '{}' has no 'pieces root'", printable(join_path(prefix))));
        }
        f.rel = prefix;
        m_v2.push_back(std::move(f));
        return ok_status();
    }

    Status parse_tree_node(const Value& node, std::vector<std::string>& prefix) {
        if (!node.is_dict() || node.as_dict().empty())
            return invalid(fmt::format("file tree node '{}' is not a non-empty dictionary", printable(join_path(prefix))));
        if (const Value* props = node.find("")) {
            if (prefix.empty()) return invalid("file tree root is a file");
            if (node.as_dict().size() != 1)
                return invalid(fmt::format("file tree node '{}' is both a file and a directory", printable(join_path(prefix))));
            return parse_tree_file(*props, prefix);
        }
        for (const auto& entry : node.as_dict()) {
            prefix.push_back(entry.key);
            ARCHCTL_TRY_STATUS(parse_tree_node(entry.value, prefix));
            prefix.pop_back();
        }
        return ok_status();
    }

    Status parse_v2_tree(const Value& info) {
        std::vector<std::string> prefix;
        ARCHCTL_TRY_STATUS(parse_tree_node(*info.find("file tree"), prefix));
        const Value& tree = *info.find("file tree");
        m_v2_single = tree.as_dict().size() == 1 && tree.as_dict().front().value.find("") != nullptr;
        return ok_status();
    }

    std::vector<std::string> full_path(const std::vector<std::string>& rel) const {
        if (!m_out.m_multi_file) return {m_out.m_name};
        std::vector<std::string> p{m_out.m_name};
        p.insert(p.end(), rel.begin(), rel.end());
        return p;
    }

    Status add_entry(const RawFile& f, std::int64_t& offset) {
        FileEntry e;
        e.path = full_path(f.rel);
        e.size = f.size;
        e.offset = offset;
        e.pad = f.pad;
        e.executable = f.executable;
        e.hidden = f.hidden;
        e.pieces_root = f.root;
        if (offset > k_max_file_size - f.size) return invalid("total size out of range");
        offset += f.size;
        if (!f.pad) m_out.m_payload_size += f.size;
        m_out.m_files.push_back(std::move(e));
        m_symlinks.push_back(f.symlink);
        return ok_status();
    }

    Status build_v2_only() {
        const std::int64_t l = m_out.m_piece_length;
        m_out.m_multi_file = !m_v2_single;
        if (m_v2_single) m_out.m_name = m_v2.front().rel.front();
        std::int64_t offset = 0;
        for (const auto& f : m_v2) {
            ARCHCTL_TRY_STATUS(add_entry(f, offset));
            if (f.size > 0 && offset % l != 0) {
                RawFile pad;
                pad.size = l - offset % l;
                pad.pad = true;
                pad.rel = {".pad", std::to_string(pad.size)};
                ARCHCTL_TRY_STATUS(add_entry(pad, offset));
            }
        }
        m_out.m_total_size = offset;
        return ok_status();
    }

    // A hybrid's v1 list, pads set aside, must be the v2 tree's files in the same order with the
    // same sizes, and every non-empty file must start on a piece boundary.
    Status check_hybrid() {
        std::vector<std::size_t> payload;
        for (std::size_t i = 0; i < m_out.m_files.size(); ++i)
            if (!m_out.m_files[i].pad) payload.push_back(i);
        if (payload.size() != m_v2.size())
            return invalid(fmt::format("inconsistent hybrid: {} v1 files but {} v2 files", payload.size(), m_v2.size()));
        if (!m_v1_multi && !m_v2_single) return invalid("inconsistent hybrid: single-file v1 but multi-file v2");
        std::int64_t v2_total = 0;
        const std::int64_t l = m_out.m_piece_length;
        for (std::size_t i = 0; i < payload.size(); ++i) {
            FileEntry& e = m_out.m_files[payload[i]];
            std::vector<std::string> v2_path = m_v1_multi ? full_path(m_v2[i].rel) : m_v2[i].rel;
            if (e.path != v2_path || e.size != m_v2[i].size)
                return invalid(fmt::format("inconsistent hybrid: v1 file '{}' ({} bytes) vs v2 file '{}' ({} bytes)",
                                           printable(e.path_string()), e.size, printable(join_path(v2_path)), m_v2[i].size));
            if (e.size > 0 && e.offset % l != 0)
                return invalid(fmt::format("inconsistent hybrid: file '{}' does not start on a piece boundary",
                                           printable(e.path_string())));
            e.pieces_root = m_v2[i].root;
            v2_total += (m_v2[i].size + l - 1) / l * l;
        }
        if ((m_out.m_total_size + l - 1) / l != v2_total / l)
            return invalid("inconsistent hybrid: v1 and v2 piece counts differ");
        return ok_status();
    }

    Status build_layout() {
        if (!m_has_v1) return build_v2_only();
        m_out.m_multi_file = m_v1_multi;
        std::int64_t offset = 0;
        for (const auto& f : m_v1) ARCHCTL_TRY_STATUS(add_entry(f, offset));
        m_out.m_total_size = offset;
        if (m_has_v2) ARCHCTL_TRY_STATUS(check_hybrid());
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
        std::vector<std::vector<std::string>> paths;
        for (std::size_t i = 0; i < m_out.m_files.size(); ++i) {
            const FileEntry& e = m_out.m_files[i];
            if (e.pad) {
                if (auto v = path_violation(e.path, m_options.platform, PathRole::pad))
                    return unsafe_path_error(m_out.m_name, e.path_string(), fmt::format("{} (pad file)", *v));
                continue;
            }
            if (m_symlinks[i])
                return unsafe_path_error(m_out.m_name, e.path_string(),
                                         "symlinks (attr 'l') are not supported payload");
            paths.push_back(e.path);
        }
        return check_payload_paths(m_out.m_name, paths, m_options.platform);
    }

    Status parse_v1_pieces(const Value& info) {
        const Value* pieces = info.find("pieces");
        if (!pieces->is_string() || pieces->as_string().size() % 20 != 0)
            return invalid("'pieces' is not a multiple of 20 bytes");
        auto count = static_cast<std::int64_t>(pieces->as_string().size() / 20);
        if (count != m_out.m_piece_count)
            return invalid(fmt::format("'pieces' holds {} hashes but the files need {}", count, m_out.m_piece_count));
        m_out.m_v1_pieces.resize(static_cast<std::size_t>(count));
        std::memcpy(m_out.m_v1_pieces.data(), pieces->as_string().data(), pieces->as_string().size());
        return ok_status();
    }

    Status parse_layers(const Value& top) {
        const std::int64_t l = m_out.m_piece_length;
        std::set<Sha256Digest> needed;
        for (const auto& e : m_out.m_files)
            if (!e.pad && e.size > l) needed.insert(*e.pieces_root);
        const Value* layers = top.find("piece layers");
        if (layers == nullptr) {
            if (needed.empty()) return ok_status();
            return invalid("missing 'piece layers'");
        }
        if (!layers->is_dict()) return invalid("'piece layers' is not a dictionary");
        for (const auto& entry : layers->as_dict()) {
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
        for (const auto& e : m_out.m_files) {
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
    std::vector<RawFile> m_v1;
    std::vector<RawFile> m_v2;
    std::vector<bool> m_symlinks;  // parallel to m_out.m_files
};

Result<Metainfo> parse_metainfo(std::string_view bytes, std::string_view label, const ParseOptions& options) {
    return MetainfoParser(bytes, label, options).run();
}

Result<Metainfo> load_metainfo(const std::filesystem::path& file, const ParseOptions& options) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error{"IO", fmt::format("cannot read torrent '{}': {}", printable(file.string()), std::strerror(errno))};
    std::string bytes;
    constexpr std::size_t k_limit = 128u << 20;
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
    return parse_metainfo(bytes, file.filename().string(), options);
}

}  // namespace archctl::torrent
