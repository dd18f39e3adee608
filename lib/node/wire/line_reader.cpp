#include "lib/node/wire/line_reader.hpp"

#include <algorithm>
#include <cstring>

namespace archctl::node {

LineReader::LineReader(std::size_t max_line) : m_max(std::max<std::size_t>(max_line, 1)) {}

void LineReader::feed(std::string_view bytes) {
    if (m_dropping) {
        const auto* nl = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
        if (!nl) return;
        m_dropping = false;
        bytes.remove_prefix(static_cast<std::size_t>(nl - bytes.data()) + 1);
    }
    if (bytes.empty()) return;
    // What earlier lines left in front goes first, so the buffer is only what is not yet read.
    if (m_start > 0) {
        m_buffer.erase(0, m_start);
        m_scan -= m_start;
        m_start = 0;
    }
    // Grow to the limit without doubling past it: the bound is the limit plus this chunk.
    const std::size_t needed = m_buffer.size() + bytes.size();
    if (needed > m_buffer.capacity())
        m_buffer.reserve(std::max(needed, std::min(m_buffer.capacity() * 2, m_max + 1)));
    m_buffer.append(bytes);
}

std::optional<LineReader::Line> LineReader::next() {
    for (;;) {
        if (m_dropping) return std::nullopt;
        const char* base = m_buffer.data();
        const auto* nl = static_cast<const char*>(std::memchr(base + m_scan, '\n', m_buffer.size() - m_scan));
        if (!nl) {
            m_scan = m_buffer.size();
            if (m_buffer.size() - m_start <= m_max) return std::nullopt;
            // Past the limit with no end in sight: keep its first bytes, drop the rest as it comes.
            Line out{Kind::overlong, m_buffer.substr(m_start, k_overlong_prefix)};
            m_buffer.clear();
            m_buffer.shrink_to_fit();
            m_start = m_scan = 0;
            m_dropping = true;
            return out;
        }
        const auto end = static_cast<std::size_t>(nl - base);
        const std::size_t begin = m_start;
        m_start = m_scan = end + 1;
        if (end == begin) continue;  // an empty line
        if (end - begin > m_max) return Line{Kind::overlong, m_buffer.substr(begin, std::min(end - begin, k_overlong_prefix))};
        return Line{Kind::line, m_buffer.substr(begin, end - begin)};
    }
}

std::string_view LineReader::partial() const {
    if (m_dropping) return {};
    return std::string_view(m_buffer).substr(std::min(m_start, m_buffer.size()));
}

}  // namespace archctl::node
