#pragma once
// FileTable: a torrent's native file list held compactly — one byte arena for every path and a
// fixed-size row per file (size, offset, attributes, where its path and pieces root are), so a
// million-file torrent costs a few tens of bytes per file rather than a vector of strings each.
//
// A path is stored as its elements below the table's root folder, each element as a LEB128 byte
// count followed by its bytes (an element may hold any byte, '/' included, until the path rules
// have refused it). The root folder (the torrent's name, for a multi-file torrent) is stored
// once and put before every path when it is read.
//
//   FileTable t;
//   t.set_root("album");
//   t.add({"cd1", "01.flac"}, {.size = 10});
//   t[0].path_string();   // "album/cd1/01.flac"
//   for (FileEntry e : t) ...

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/torrent/sha.hpp"

namespace archctl::torrent {

class FileTable;

// One entry of a native file list, read out of its FileTable (valid while the table lives and
// is not changed).
struct FileEntry {
    std::int64_t size = 0;
    std::int64_t offset = 0;  // first byte in piece space
    bool pad = false;         // BEP 47 'p' (or a pad libtorrent inserts in v2 torrents)
    bool executable = false;  // BEP 47 'x'
    bool hidden = false;      // BEP 47 'h'
    std::optional<Sha256Digest> pieces_root;  // v2/hybrid files with size > 0
    const FileTable* table = nullptr;
    std::size_t index = 0;

    // Path under the save path, root folder first for multi-file torrents, joined with '/':
    // exactly what libtorrent writes on disk and qBittorrent shows as `name`.
    [[nodiscard]] std::string path_string() const;
    // The same path as elements.
    [[nodiscard]] std::vector<std::string> path_elements() const;
    std::int64_t end() const { return offset + size; }
};

// What a row holds besides its path.
struct FileFacts {
    std::int64_t size = 0;
    std::int64_t offset = 0;
    bool pad = false;
    bool executable = false;
    bool hidden = false;
    bool symlink = false;  // BEP 47 'l' (refused as payload, kept to say so)
    std::optional<Sha256Digest> pieces_root = std::nullopt;
};

class FileTable {
public:
    class Iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = FileEntry;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = FileEntry;
        Iterator(const FileTable* t, std::size_t i) : m_table(t), m_index(i) {}
        FileEntry operator*() const { return (*m_table)[m_index]; }
        Iterator& operator++() {
            ++m_index;
            return *this;
        }
        bool operator==(const Iterator& o) const { return m_index == o.m_index; }
        bool operator!=(const Iterator& o) const { return m_index != o.m_index; }

    private:
        const FileTable* m_table;
        std::size_t m_index;
    };

    // The folder put before every path ("" for none: a single-file torrent).
    void set_root(std::string root) { m_root = std::move(root); }
    const std::string& root() const { return m_root; }

    // Appends a row whose path is `rel` below the root.
    template <typename Elements>
    void add(const Elements& rel, const FileFacts& facts) {
        std::size_t at = m_arena.size();
        for (const auto& element : rel) append_element(std::string_view(element));
        add_row(at, m_arena.size() - at, facts);
    }
    void add(std::initializer_list<std::string_view> rel, const FileFacts& facts) {
        std::size_t at = m_arena.size();
        for (std::string_view element : rel) append_element(element);
        add_row(at, m_arena.size() - at, facts);
    }
    // Makes `arena` (paths encoded as this table stores them: encode_element) this empty table's
    // path bytes, without a copy; add_encoded() then adds rows whose paths are already in it.
    void adopt_arena(std::string arena) { m_arena = std::move(arena); }
    // Appends a row whose path is the `path_bytes` encoded bytes at `path_at` of the arena.
    void add_encoded(std::size_t path_at, std::size_t path_bytes, const FileFacts& facts);
    // Appends row `i` of `other` (its path below other's root) with `offset`.
    void add_from(const FileTable& other, std::size_t i, std::int64_t offset);

    std::size_t size() const { return m_rows.size(); }
    // Bytes of every path in the table (the arena), for sizing what is written from it.
    std::size_t path_bytes() const { return m_arena.size(); }
    bool empty() const { return m_rows.empty(); }
    FileEntry operator[](std::size_t i) const;
    FileEntry front() const { return (*this)[0]; }
    FileEntry back() const { return (*this)[m_rows.size() - 1]; }
    Iterator begin() const { return Iterator(this, 0); }
    Iterator end() const { return Iterator(this, m_rows.size()); }

    // Row `i` read in part (no path, no digest copied).
    std::int64_t size_of(std::size_t i) const { return m_rows[i].size; }
    std::int64_t offset_of(std::size_t i) const { return m_rows[i].offset; }
    std::int64_t end_of(std::size_t i) const { return m_rows[i].offset + m_rows[i].size; }
    bool pad(std::size_t i) const { return (m_rows[i].flags & k_pad) != 0; }
    bool symlink(std::size_t i) const { return (m_rows[i].flags & k_symlink) != 0; }
    // The encoded elements of row `i` below the root (equal bytes: equal paths).
    std::string_view rel_bytes(std::size_t i) const { return {m_arena.data() + m_rows[i].path_at, m_rows[i].path_bytes}; }
    std::vector<std::string> rel_elements(std::size_t i) const;
    // Root folder first, as FileEntry::path_elements / path_string.
    std::vector<std::string> path_elements(std::size_t i) const;
    std::string path_string(std::size_t i) const;
    // The first element of row `i`'s path below the root ("" when it has none).
    std::string_view first_element(std::size_t i) const;

    void set_offset(std::size_t i, std::int64_t offset) { m_rows[i].offset = offset; }
    void set_pieces_root(std::size_t i, const std::optional<Sha256Digest>& root);
    // Room for `rows` rows in all and `path_bytes` more encoded path bytes (encoded_size), so a
    // table whose size is known up front is never copied while it grows.
    void reserve(std::size_t rows, std::size_t path_bytes);
    // Bytes an element takes in the arena: its LEB128 length and its bytes.
    static std::size_t encoded_size(std::string_view element);
    // Appends `element` to `out` as the arena stores it.
    static void encode_element(std::string& out, std::string_view element);
    // Gives back spare capacity once the table is complete.
    void shrink_to_fit();

private:
    static constexpr std::uint8_t k_pad = 1, k_executable = 2, k_hidden = 4, k_symlink = 8;
    static constexpr std::uint32_t k_no_root = 0xFFFFFFFFu;
    struct Row {
        std::int64_t size = 0;
        std::int64_t offset = 0;
        std::uint64_t path_at = 0;
        std::uint32_t path_bytes = 0;
        std::uint32_t root = k_no_root;  // index into m_roots
        std::uint8_t flags = 0;
    };
    void append_element(std::string_view element);
    void add_row(std::size_t path_at, std::size_t path_bytes, const FileFacts& facts);

    std::string m_root;
    std::string m_arena;
    std::vector<Row> m_rows;
    std::vector<Sha256Digest> m_roots;
};

// Calls `fn(element)` for each element of an encoded path (FileTable::rel_bytes).
template <typename Fn>
void for_each_element(std::string_view encoded, Fn&& fn) {
    std::size_t pos = 0;
    while (pos < encoded.size()) {
        std::size_t len = 0;
        unsigned shift = 0;
        while (true) {
            auto b = static_cast<unsigned char>(encoded[pos++]);
            len |= static_cast<std::size_t>(b & 0x7F) << shift;
            if ((b & 0x80) == 0) break;
            shift += 7;
        }
        fn(encoded.substr(pos, len));
        pos += len;
    }
}

}  // namespace archctl::torrent
