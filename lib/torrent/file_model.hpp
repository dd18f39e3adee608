#pragma once
// FileModel: the payload files of a torrent as qBittorrent numbers them, mapped onto pieces.
//
// qBittorrent's file index counts payload files only (pad files hidden), in libtorrent's native
// order: the v2 file tree order for v2 and hybrid torrents, the `files` list order for v1. For
// each file the model knows its byte range in piece space and the pieces it touches; for each
// piece, the files it touches. That answers the partfile question of docs/design.md "Partfiles and
// piece boundaries": which pieces
// overlap both a selected and a skipped file (only possible in v1 torrents, where pieces cross
// file boundaries; hybrids and v2 align every file to a piece).

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::torrent {

struct ModelFile {
    std::uint32_t index = 0;        // qBittorrent's file index
    std::size_t native_index = 0;   // index into Metainfo::files() (pads included)
    std::string path;               // '/'-joined, root folder first, as qB's `name`
    std::int64_t size = 0;
    std::int64_t offset = 0;        // first byte in piece space
    std::int64_t first_piece = 0;   // first piece holding a byte of the file (offset / L)
    std::int64_t end_piece = 0;     // one past the last such piece; == first_piece for empty files
    bool executable = false;
    bool hidden = false;

    // qBittorrent's `piece_range` [first, last]: last = (offset + size - 1) / L with C++
    // truncation, so an empty file on a piece boundary gets last = first - 1 (e.g. [193,192]).
    std::pair<std::int64_t, std::int64_t> qb_piece_range(std::int64_t piece_length) const;
};

class FileModel {
public:
    FileModel() = default;
    explicit FileModel(const Metainfo& meta);

    const std::vector<ModelFile>& files() const { return m_files; }
    std::size_t file_count() const { return m_files.size(); }
    std::int64_t piece_count() const { return m_piece_count; }
    std::int64_t piece_length() const { return m_piece_length; }
    std::int64_t total_size() const { return m_total_size; }

    // qB indices of the non-empty payload files with at least one byte in `piece`, ascending.
    // Precondition: 0 <= piece < piece_count().
    [[nodiscard]] std::span<const std::uint32_t> files_in_piece(std::int64_t piece) const;

    // Pieces touched by at least one file of `files`, ascending (empty files touch none).
    [[nodiscard]] std::vector<std::int64_t> pieces_of(const Selection& files) const;

    // Pieces that hold bytes of a file in `selected` and bytes of a file not in it: verifying
    // them needs a skipped file's bytes (libtorrent keeps those in the partfile). Ascending.
    [[nodiscard]] std::vector<std::int64_t> boundary_pieces(const Selection& selected) const;

    // Selection of every file.
    [[nodiscard]] Selection all() const { return Selection::all(m_files.size()); }

private:
    std::vector<ModelFile> m_files;
    std::int64_t m_piece_count = 0;
    std::int64_t m_piece_length = 0;
    std::int64_t m_total_size = 0;
    // CSR: files of piece p are m_piece_files[m_piece_start[p] .. m_piece_start[p+1]).
    std::vector<std::size_t> m_piece_start;
    std::vector<std::uint32_t> m_piece_files;
};

}  // namespace archctl::torrent
