#pragma once
// LineReader: the framing of the node protocol (protocol.hpp) on the receiving side of either
// end. Bytes go in as they arrive (feed); complete lines come out (next), each without its
// newline, empty lines skipped.
//
// It is bounded in memory and linear in time whatever the other end sends: each byte is looked
// at once for a newline, and a line longer than the limit is not kept — next() reports it as
// `overlong` (with its first bytes, for the message) as soon as the limit is passed, not when
// its newline finally arrives, and the rest of that line is dropped as it comes. The lines
// after it are read again as usual, so `node serve` answers an overlong request with an error
// and goes on with the next one; the exec transport gives up on a far end that sends one. The
// buffer never holds more than the limit plus one fed chunk.
//
//   LineReader in(k_max_line_bytes);
//   in.feed(chunk);
//   while (auto l = in.next()) { if (l->kind == LineReader::Kind::line) use(l->text); else refuse(*l); }

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace archctl::node {

class LineReader {
public:
    enum class Kind { line, overlong };
    struct Line {
        Kind kind = Kind::line;
        std::string text;  // the line; for an overlong one its first k_overlong_prefix bytes
    };
    // How much of an overlong line is kept to be quoted.
    static constexpr std::size_t k_overlong_prefix = 64;

    explicit LineReader(std::size_t max_line);

    // Appends received bytes. Call next() until it answers nullopt before feeding again: the
    // memory bound counts on it.
    void feed(std::string_view bytes);
    // The next complete line, or an overlong one; nullopt when more bytes are needed.
    [[nodiscard]] std::optional<Line> next();
    // The bytes of the line being received, not yet complete (empty between lines, and while
    // the rest of an overlong line is being dropped).
    [[nodiscard]] std::string_view partial() const;
    // The bytes held (for tests of the memory bound).
    [[nodiscard]] std::size_t buffered() const { return m_buffer.size(); }
    std::size_t max_line() const { return m_max; }

private:
    std::size_t m_max;
    std::string m_buffer;
    std::size_t m_start = 0;  // where the current line begins in m_buffer
    std::size_t m_scan = 0;   // m_buffer before this holds no newline of the current line
    bool m_dropping = false;  // the rest of an overlong line is being dropped
};

}  // namespace archctl::node
