#include "lib/torrent/file_table.hpp"

namespace archctl::torrent {

std::string FileEntry::path_string() const { return table->path_string(index); }

std::vector<std::string> FileEntry::path_elements() const { return table->path_elements(index); }

void FileTable::encode_element(std::string& out, std::string_view element) {
    std::size_t len = element.size();
    do {
        auto b = static_cast<unsigned char>(len & 0x7F);
        len >>= 7;
        if (len != 0) b |= 0x80;
        out.push_back(static_cast<char>(b));
    } while (len != 0);
    out.append(element);
}

void FileTable::append_element(std::string_view element) { encode_element(m_arena, element); }

void FileTable::add_encoded(std::size_t path_at, std::size_t path_bytes, const FileFacts& facts) {
    add_row(path_at, path_bytes, facts);
}

void FileTable::add_row(std::size_t path_at, std::size_t path_bytes, const FileFacts& facts) {
    Row r;
    r.size = facts.size;
    r.offset = facts.offset;
    r.path_at = path_at;
    r.path_bytes = static_cast<std::uint32_t>(path_bytes);
    r.flags = static_cast<std::uint8_t>((facts.pad ? k_pad : 0) | (facts.executable ? k_executable : 0) |
                                        (facts.hidden ? k_hidden : 0) | (facts.symlink ? k_symlink : 0));
    m_rows.push_back(r);
    set_pieces_root(m_rows.size() - 1, facts.pieces_root);
}

void FileTable::add_from(const FileTable& other, std::size_t i, std::int64_t offset) {
    std::size_t at = m_arena.size();
    m_arena.append(other.rel_bytes(i));
    Row r = other.m_rows[i];
    r.offset = offset;
    r.path_at = at;
    r.root = k_no_root;
    m_rows.push_back(r);
    if (other.m_rows[i].root != k_no_root) set_pieces_root(m_rows.size() - 1, other.m_roots[other.m_rows[i].root]);
}

void FileTable::set_pieces_root(std::size_t i, const std::optional<Sha256Digest>& root) {
    Row& r = m_rows[i];
    if (!root) {
        r.root = k_no_root;
        return;
    }
    if (r.root == k_no_root) {
        r.root = static_cast<std::uint32_t>(m_roots.size());
        m_roots.push_back(*root);
    } else {
        m_roots[r.root] = *root;
    }
}

FileEntry FileTable::operator[](std::size_t i) const {
    const Row& r = m_rows[i];
    FileEntry e;
    e.size = r.size;
    e.offset = r.offset;
    e.pad = (r.flags & k_pad) != 0;
    e.executable = (r.flags & k_executable) != 0;
    e.hidden = (r.flags & k_hidden) != 0;
    if (r.root != k_no_root) e.pieces_root = m_roots[r.root];
    e.table = this;
    e.index = i;
    return e;
}

std::vector<std::string> FileTable::rel_elements(std::size_t i) const {
    std::vector<std::string> out;
    for_each_element(rel_bytes(i), [&](std::string_view e) { out.emplace_back(e); });
    return out;
}

std::vector<std::string> FileTable::path_elements(std::size_t i) const {
    std::vector<std::string> out;
    if (!m_root.empty()) out.push_back(m_root);
    for_each_element(rel_bytes(i), [&](std::string_view e) { out.emplace_back(e); });
    return out;
}

std::string FileTable::path_string(std::size_t i) const {
    std::string out = m_root;
    bool separate = !m_root.empty();
    for_each_element(rel_bytes(i), [&](std::string_view e) {
        if (separate) out.push_back('/');
        out.append(e);
        separate = true;
    });
    return out;
}

std::string_view FileTable::first_element(std::size_t i) const {
    std::string_view first;
    bool seen = false;
    for_each_element(rel_bytes(i), [&](std::string_view e) {
        if (!seen) first = e;
        seen = true;
    });
    return first;
}

void FileTable::reserve(std::size_t rows, std::size_t path_bytes) {
    if (rows > m_rows.size()) m_rows.reserve(rows);
    if (path_bytes > m_arena.capacity() - m_arena.size()) m_arena.reserve(m_arena.size() + path_bytes);
}

std::size_t FileTable::encoded_size(std::string_view element) {
    std::size_t n = 1;
    for (std::size_t len = element.size() >> 7; len != 0; len >>= 7) ++n;
    return n + element.size();
}

void FileTable::shrink_to_fit() {
    m_arena.shrink_to_fit();
    m_rows.shrink_to_fit();
    m_roots.shrink_to_fit();
}

}  // namespace archctl::torrent
