#include "lib/ui/progress.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/ui/table.hpp"

namespace archctl::ui {
namespace {

const char* const k_blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
const char* const k_eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};

double fraction_of(const ProgressSnapshot& s) {
    if (s.total_bytes == 0) return s.files_total ? static_cast<double>(s.files_done) / static_cast<double>(s.files_total) : 0.0;
    return std::min(1.0, static_cast<double>(s.done_bytes) / static_cast<double>(s.total_bytes));
}

std::string rate_text(double rate) {
    return format_size(static_cast<std::uint64_t>(std::max(0.0, rate))) + "/s";
}

std::string eta_text(const ProgressSnapshot& s, double rate) {
    if (rate <= 1.0 || s.total_bytes <= s.done_bytes) return "--:--:--";
    return format_clock(static_cast<std::int64_t>(static_cast<double>(s.total_bytes - s.done_bytes) / rate));
}

std::string pad_right(const std::string& text, size_t width) {
    size_t w = display_width(text);
    return w >= width ? text : text + std::string(width - w, ' ');
}

std::string pad_left(const std::string& text, size_t width) {
    size_t w = display_width(text);
    return w >= width ? text : std::string(width - w, ' ') + text;
}

// Cut a UTF-8 string to at most `width` code points.
std::string clip(const std::string& text, size_t width) {
    size_t n = 0, i = 0;
    for (; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            if (n == width) break;
            ++n;
        }
    }
    return text.substr(0, i);
}

}  // namespace

void RateMeter::add(SteadyTime at, std::uint64_t bytes) {
    if (!m_started) {
        m_started = true;
        m_last_at = m_cell_start = at;
        m_last_bytes = bytes;
        return;
    }
    double dt = std::chrono::duration<double>(at - m_last_at).count();
    if (dt > 0.05) {
        double instant = static_cast<double>(bytes - std::min(bytes, m_last_bytes)) / dt;
        double alpha = std::min(1.0, dt / 5.0);  // ~5 s smoothing window
        m_rate = m_rate == 0 ? instant : m_rate + alpha * (instant - m_rate);
        m_last_at = at;
        m_last_bytes = bytes;
    }
    m_cell_bytes = bytes;
    if (at - m_cell_start >= m_cell) {
        m_history.push_back(m_rate);
        while (m_history.size() > m_cells) m_history.pop_front();
        m_cell_start = at;
    }
}

std::string RateMeter::sparkline() const {
    double peak = 0;
    for (double r : m_history) peak = std::max(peak, r);
    std::string out;
    for (size_t i = m_history.size(); i < m_cells; ++i) out += ' ';
    for (double r : m_history) {
        int level = peak > 0 ? static_cast<int>(std::lround(r / peak * 7.0)) : 0;
        out += k_blocks[std::clamp(level, 0, 7)];
    }
    return out;
}

std::string format_bar(double fraction, int width) {
    fraction = std::clamp(fraction, 0.0, 1.0);
    int eighths = static_cast<int>(fraction * width * 8);
    std::string out;
    int full = eighths / 8;
    for (int i = 0; i < full; ++i) out += "█";
    if (full < width) {
        out += k_eighths[eighths % 8];
        int used = full + (eighths % 8 ? 1 : 0);
        out += std::string(static_cast<size_t>(width - used), ' ');
    }
    return out;
}

std::string format_panel(const ProgressSnapshot& s, double rate, const std::string& sparkline, int width) {
    double f = fraction_of(s);
    std::string step = fmt::format("[{} {}/{}]", s.step, s.step_number, s.steps);
    std::string bytes = fmt::format("{}/{}", format_size(s.done_bytes), format_size(s.total_bytes));
    std::string line1 = fmt::format(" {} {} {:>5.1f}%  {}  {}  {}  ETA {}", pad_right(step, 12), format_bar(f, 24),
                                    f * 100.0, pad_left(bytes, 21), pad_left(rate_text(rate), 12), sparkline,
                                    eta_text(s, rate));
    std::string files = fmt::format("files {}/{}", s.files_done, s.files_total);
    std::string line2 = std::string(14, ' ') + pad_right(files, 14);
    if (s.stopping) line2 += "stopping after the current chunk…";
    else if (!s.why.empty()) line2 += s.why;
    else if (!s.current.empty()) line2 += "now: " + s.current;
    auto w = static_cast<size_t>(std::max(20, width));
    return clip(line1, w) + "\n" + clip(line2, w);
}

std::string format_status_line(const ProgressSnapshot& s, double rate, SystemTime now) {
    double f = fraction_of(s);
    std::string eta = rate > 1.0 && s.total_bytes > s.done_bytes
                          ? format_duration(static_cast<std::int64_t>(static_cast<double>(s.total_bytes - s.done_bytes) / rate))
                          : "-";
    return fmt::format("{} job {} {} {:.1f}% {}/{} {} eta {} files {}/{}{}", format_rfc3339(now), s.job_id, s.step, f * 100.0,
                       format_size_compact(s.done_bytes), format_size_compact(s.total_bytes),
                       format_size_compact(static_cast<std::uint64_t>(std::max(0.0, rate))) + "/s", eta, s.files_done,
                       s.files_total, s.why.empty() ? "" : " — " + s.why);
}

ProgressMode choose_mode(const std::string& setting, bool stderr_is_tty) {
    if (setting == "0") return ProgressMode::none;
    if (setting == "line") return ProgressMode::line;
    if (setting == "panel") return ProgressMode::panel;
    return stderr_is_tty ? ProgressMode::panel : ProgressMode::line;
}

namespace {

class NullRenderer final : public ProgressRenderer {
public:
    explicit NullRenderer(std::FILE* out) : m_out(out) {}
    void update(const ProgressSnapshot&) override {}
    void log(const std::string& line) override { std::fprintf(m_out, "%s\n", line.c_str()); }
    void finish() override {}

private:
    std::FILE* m_out;
};

class LineRenderer final : public ProgressRenderer {
public:
    LineRenderer(std::FILE* out, Clock& clock) : m_out(out), m_clock(clock) {}
    void update(const ProgressSnapshot& s) override {
        m_meter.add(m_clock.steady(), s.done_bytes);
        auto now = m_clock.steady();
        if (m_printed && now - m_last < std::chrono::seconds(10)) return;
        m_printed = true;
        m_last = now;
        std::fprintf(m_out, "%s\n", format_status_line(s, m_meter.rate(), m_clock.now()).c_str());
        std::fflush(m_out);
    }
    void log(const std::string& line) override { std::fprintf(m_out, "%s\n", line.c_str()); }
    void finish() override {}

private:
    std::FILE* m_out;
    Clock& m_clock;
    RateMeter m_meter;
    bool m_printed = false;
    SteadyTime m_last{};
};

class PanelRenderer final : public ProgressRenderer {
public:
    PanelRenderer(std::FILE* out, Clock& clock) : m_out(out), m_clock(clock) {}
    void update(const ProgressSnapshot& s) override {
        m_meter.add(m_clock.steady(), s.done_bytes);
        m_last = s;
        m_has = true;
        auto now = m_clock.steady();
        if (m_drawn && now - m_drawn_at < std::chrono::milliseconds(200)) return;
        draw();
    }
    void log(const std::string& line) override {
        erase();
        std::fprintf(m_out, "%s\n", line.c_str());
        if (m_has) draw();
        std::fflush(m_out);
    }
    void finish() override {
        if (m_has) draw();
        if (m_drawn) std::fputc('\n', m_out);
        m_drawn = false;
        std::fflush(m_out);
    }

private:
    void erase() {
        if (!m_drawn) return;
        std::fputs("\r\033[2K\033[1A\r\033[2K", m_out);  // clear line 2, up, clear line 1
        m_drawn = false;
    }
    void draw() {
        erase();
        std::fputs(format_panel(m_last, m_meter.rate(), m_meter.sparkline()).c_str(), m_out);
        std::fflush(m_out);
        m_drawn = true;
        m_drawn_at = m_clock.steady();
    }
    std::FILE* m_out;
    Clock& m_clock;
    RateMeter m_meter;
    ProgressSnapshot m_last;
    bool m_has = false;
    bool m_drawn = false;
    SteadyTime m_drawn_at{};
};

}  // namespace

std::unique_ptr<ProgressRenderer> make_renderer(ProgressMode mode, std::FILE* out, Clock& clock) {
    switch (mode) {
        case ProgressMode::none: return std::make_unique<NullRenderer>(out);
        case ProgressMode::line: return std::make_unique<LineRenderer>(out, clock);
        case ProgressMode::panel: return std::make_unique<PanelRenderer>(out, clock);
    }
    return std::make_unique<NullRenderer>(out);
}

}  // namespace archctl::ui
