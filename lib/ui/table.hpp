#pragma once
// Plain-text tables with steady columns (docs/design.md "What the user sees"). Columns are padded to
// the widest cell by display width (UTF-8 code points), the last column is never padded.

#include <string>
#include <vector>

namespace archctl::ui {

enum class Align { left, right };

class Table {
public:
    explicit Table(std::vector<Align> aligns = {}, std::string indent = "") : m_aligns(std::move(aligns)), m_indent(std::move(indent)) {}
    void add_row(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }
    bool empty() const { return m_rows.empty(); }
    // Rendered rows joined with '\n' (no trailing newline).
    std::string render(const std::string& gap = "  ") const;

private:
    std::vector<Align> m_aligns;
    std::string m_indent;
    std::vector<std::vector<std::string>> m_rows;
};

// Number of code points in a UTF-8 string (close enough to terminal width for our text).
size_t display_width(const std::string& text);

}  // namespace archctl::ui
