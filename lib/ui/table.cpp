#include "lib/ui/table.hpp"

#include <algorithm>

namespace archctl::ui {

size_t display_width(const std::string& text) {
    size_t n = 0;
    for (char c : text)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

std::string Table::render(const std::string& gap) const {
    std::vector<size_t> widths;
    for (const auto& row : m_rows) {
        if (widths.size() < row.size()) widths.resize(row.size(), 0);
        for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
    }
    std::string out;
    for (size_t r = 0; r < m_rows.size(); ++r) {
        const auto& row = m_rows[r];
        std::string line = m_indent;
        for (size_t i = 0; i < row.size(); ++i) {
            bool last = i + 1 == row.size();
            Align a = i < m_aligns.size() ? m_aligns[i] : Align::left;
            size_t pad = widths[i] - display_width(row[i]);
            if (a == Align::right) line += std::string(pad, ' ') + row[i];
            else line += row[i] + (last ? "" : std::string(pad, ' '));
            if (!last) line += gap;
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line;
        if (r + 1 < m_rows.size()) out += '\n';
    }
    return out;
}

}  // namespace archctl::ui
