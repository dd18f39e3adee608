#include "cli/output.hpp"

#include "lib/base/text.hpp"

namespace archctl::cli {
namespace {

// Text for a person: whatever a name from qBittorrent, a torrent or the disk holds, no byte of
// it reaches the terminal as a control (terminal_text shows escapes and bad UTF-8 visibly).
void put(std::FILE* f, const std::string& raw) {
    const std::string text = terminal_text(raw);
    std::fputs(text.c_str(), f);
    if (text.empty() || text.back() != '\n') std::fputc('\n', f);
    std::fflush(f);
}

}  // namespace

void Output::result(const std::string& text) {
    if (m_json) {
        if (!m_quiet) put(stderr, text);
        return;
    }
    put(stdout, text);
}

void Output::info(const std::string& text) {
    if (!m_quiet) put(stderr, text);
}

void Output::debug(const std::string& text) {
    if (m_verbose > 0) put(stderr, text);
}

void Output::warn(const std::string& text) { put(stderr, "archctl: warning: " + text); }

}  // namespace archctl::cli
