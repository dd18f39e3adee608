#include "lib/torrent/file_model.hpp"

namespace archctl::torrent {

std::pair<std::int64_t, std::int64_t> ModelFile::qb_piece_range(std::int64_t piece_length) const {
    return {offset / piece_length, (offset + size - 1) / piece_length};
}

FileModel::FileModel(const Metainfo& meta)
    : m_piece_count(meta.piece_count()), m_piece_length(meta.piece_length()), m_total_size(meta.total_size()) {
    const auto& native = meta.files();
    for (std::size_t i = 0; i < native.size(); ++i) {
        const FileEntry& e = native[i];
        if (e.pad) continue;
        ModelFile f;
        f.index = static_cast<std::uint32_t>(m_files.size());
        f.native_index = i;
        f.path = e.path_string();
        f.size = e.size;
        f.offset = e.offset;
        f.first_piece = e.offset / m_piece_length;
        f.end_piece = e.size == 0 ? f.first_piece : (e.offset + e.size - 1) / m_piece_length + 1;
        f.executable = e.executable;
        f.hidden = e.hidden;
        m_files.push_back(std::move(f));
    }
    auto pieces = static_cast<std::size_t>(m_piece_count);
    m_piece_start.assign(pieces + 1, 0);
    for (const ModelFile& f : m_files)
        for (std::int64_t p = f.first_piece; p < f.end_piece; ++p) ++m_piece_start[static_cast<std::size_t>(p) + 1];
    for (std::size_t p = 0; p < pieces; ++p) m_piece_start[p + 1] += m_piece_start[p];
    m_piece_files.resize(m_piece_start[pieces]);
    std::vector<std::size_t> fill(m_piece_start.begin(), m_piece_start.end() - 1);
    for (const ModelFile& f : m_files)
        for (std::int64_t p = f.first_piece; p < f.end_piece; ++p)
            m_piece_files[fill[static_cast<std::size_t>(p)]++] = f.index;
}

std::span<const std::uint32_t> FileModel::files_in_piece(std::int64_t piece) const {
    auto p = static_cast<std::size_t>(piece);
    return {m_piece_files.data() + m_piece_start[p], m_piece_start[p + 1] - m_piece_start[p]};
}

std::vector<std::int64_t> FileModel::pieces_of(const Selection& files) const {
    std::vector<std::int64_t> out;
    for (std::uint32_t i : files.indices()) {
        if (i >= m_files.size()) break;
        const ModelFile& f = m_files[i];
        std::int64_t p = f.first_piece;
        if (!out.empty() && out.back() >= p) p = out.back() + 1;  // files are in piece order
        for (; p < f.end_piece; ++p) out.push_back(p);
    }
    return out;
}

std::vector<std::int64_t> FileModel::boundary_pieces(const Selection& selected) const {
    std::vector<std::int64_t> out;
    for (std::int64_t p : pieces_of(selected)) {
        for (std::uint32_t f : files_in_piece(p)) {
            if (!selected.contains(f)) {
                out.push_back(p);
                break;
            }
        }
    }
    return out;
}

}  // namespace archctl::torrent
