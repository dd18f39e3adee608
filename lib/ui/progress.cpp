#include "lib/ui/progress.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/text.hpp"
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

namespace {

// The fields of the first panel line, kept by priority as the width shrinks: the sparkline goes
// first, then the bar narrows and goes, then the rate, the byte counts and the step; the
// percentage and the ETA always stay.
struct PanelFields {
    std::string step, percent, bytes, rate, sparkline, eta;
    double fraction = 0;
};

std::string panel_line1(const PanelFields& f, size_t width) {
    struct Variant {
        bool step, bytes, rate, sparkline, padded;
        int bar;  // cells; 0 = no bar, -1 = whatever is left (at least 8)
    };
    static const Variant k_variants[] = {
        {true, true, true, true, true, 24},   {true, true, true, false, true, 24}, {true, true, true, false, false, -1},
        {true, true, true, false, false, 0}, {true, true, false, false, false, 0}, {true, false, false, false, false, 0},
        {false, false, false, false, false, 0},
    };
    for (const Variant& v : k_variants) {
        std::string head = v.step ? " " + (v.padded ? pad_right(f.step, 12) : f.step) : "";
        std::string tail = " " + f.percent;
        if (v.bytes) tail += "  " + (v.padded ? pad_left(f.bytes, 21) : f.bytes);
        if (v.rate) tail += "  " + (v.padded ? pad_left(f.rate, 12) : f.rate);
        if (v.sparkline) tail += "  " + f.sparkline;
        tail += "  ETA " + f.eta;
        size_t used = display_width(head) + display_width(tail);
        if (v.bar == 0) {
            if (used <= width) return head + tail;
            continue;
        }
        size_t cells = v.bar > 0 ? static_cast<size_t>(v.bar) : (used + 1 < width ? width - used - 1 : 0);
        if (v.bar < 0) cells = std::min<size_t>(cells, 24);
        if (cells < 8 || used + 1 + cells > width) continue;
        return head + " " + format_bar(f.fraction, static_cast<int>(cells)) + tail;
    }
    return clip(" " + f.percent + " ETA " + f.eta, width);
}

}  // namespace

std::string format_panel(const ProgressSnapshot& s, double rate, const std::string& sparkline, int width) {
    PanelFields f;
    f.fraction = fraction_of(s);
    f.step = fmt::format("[{} {}/{}]", s.step, s.step_number, s.steps);
    f.percent = fmt::format("{:>5.1f}%", f.fraction * 100.0);
    f.bytes = fmt::format("{}/{}", format_size(s.done_bytes), format_size(s.total_bytes));
    f.rate = rate_text(rate);
    f.sparkline = sparkline;
    f.eta = eta_text(s, rate);
    // The last column is never written: a terminal that wraps there would scroll the panel.
    auto w = static_cast<size_t>(std::max(20, width) - 1);
    std::string line1 = panel_line1(f, w);
    std::string files = fmt::format("files {}/{}", s.files_done, s.files_total);
    std::string line2 = w >= 60 ? std::string(14, ' ') + pad_right(files, 14) : " " + files + "  ";
    if (s.stopping) line2 += "stopping after the current chunk…";
    else if (!s.why.empty()) line2 += printable(s.why);
    else if (!s.current.empty()) line2 += "now: " + printable(s.current);
    return clip(line1, w) + "\n" + clip(line2, w);
}

ProgressSnapshot merge_snapshot(const ProgressSnapshot& last, const ProgressSnapshot& next) {
    if (last.job_id != next.job_id || last.step != next.step) return next;
    // A cancelled operation may report zeros as it stops: the counts reached stay on screen.
    bool empty = next.total_bytes == 0 && next.done_bytes == 0 && last.total_bytes > 0;
    bool went_back = next.stopping && next.done_bytes < last.done_bytes;
    if (!empty && !went_back) return next;
    ProgressSnapshot kept = next;
    kept.done_bytes = last.done_bytes;
    kept.total_bytes = last.total_bytes;
    kept.files_done = std::max(last.files_done, next.files_done);
    kept.files_total = std::max(last.files_total, next.files_total);
    return kept;
}

int terminal_width(std::FILE* out) {
    struct winsize ws {};
    if (out != nullptr && ::ioctl(::fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        int n = std::atoi(columns);
        if (n > 0) return n;
    }
    return 80;
}

std::string format_status_line(const ProgressSnapshot& s, double rate, SystemTime now) {
    double f = fraction_of(s);
    std::string eta = rate > 1.0 && s.total_bytes > s.done_bytes
                          ? format_duration(static_cast<std::int64_t>(static_cast<double>(s.total_bytes - s.done_bytes) / rate))
                          : "-";
    return fmt::format("{} job {} {} {:.1f}% {}/{} {} eta {} files {}/{}{}", format_rfc3339(now), s.job_id, s.step, f * 100.0,
                       format_size_compact(s.done_bytes), format_size_compact(s.total_bytes),
                       format_size_compact(static_cast<std::uint64_t>(std::max(0.0, rate))) + "/s", eta, s.files_done,
                       s.files_total, s.why.empty() ? "" : " — " + printable(s.why));
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
    void log(const std::string& line) override { std::fprintf(m_out, "%s\n", terminal_text(line).c_str()); }
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
    void log(const std::string& line) override { std::fprintf(m_out, "%s\n", terminal_text(line).c_str()); }
    void finish() override {}

private:
    std::FILE* m_out;
    Clock& m_clock;
    RateMeter m_meter;
    bool m_printed = false;
    SteadyTime m_last{};
};

// Set by SIGWINCH: the next update redraws at the new width at once.
volatile std::sig_atomic_t g_resized = 0;

void on_resize(int) { g_resized = 1; }

void watch_resize() {
    struct sigaction sa {};
    sa.sa_handler = on_resize;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGWINCH, &sa, nullptr);
}

class PanelRenderer final : public ProgressRenderer {
public:
    PanelRenderer(std::FILE* out, Clock& clock) : m_out(out), m_clock(clock), m_width(terminal_width(out)) { watch_resize(); }
    void update(const ProgressSnapshot& s) override {
        m_last = m_has ? merge_snapshot(m_last, s) : s;
        m_meter.add(m_clock.steady(), m_last.done_bytes);
        m_has = true;
        auto now = m_clock.steady();
        bool resized = g_resized != 0;
        if (!resized && m_drawn && now - m_drawn_at < std::chrono::milliseconds(200)) return;
        draw();
    }
    void log(const std::string& line) override {
        erase();
        std::fprintf(m_out, "%s\n", terminal_text(line).c_str());
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
        std::fputs("\r\033[1A\033[J", m_out);  // to the panel's first line, clear to the end of the screen
        m_drawn = false;
    }
    void draw() {
        erase();
        if (g_resized != 0) {
            g_resized = 0;
            m_width = terminal_width(m_out);
        }
        std::fputs(format_panel(m_last, m_meter.rate(), m_meter.sparkline(), m_width).c_str(), m_out);
        std::fflush(m_out);
        m_drawn = true;
        m_drawn_at = m_clock.steady();
    }
    std::FILE* m_out;
    Clock& m_clock;
    RateMeter m_meter;
    int m_width;
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
