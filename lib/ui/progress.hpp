#pragma once
// Progress: one model, several renderers (docs/style.md "Practices" 5; docs/design.md "Progress").
//
// A long operation feeds ProgressSnapshot values (job-scoped: bytes and files of the whole job,
// not of one file). RateMeter smooths the rate and keeps a slow sparkline (one cell per ~5 s).
// Renderers:
//   panel — a TTY: two lines fitted to the terminal's width (re-read on SIGWINCH) repainted in
//           place; log lines print above the panel; the last frame stays after a stop;
//   line  — not a TTY: one status line every 10 s;
//   none  — ARCHCTL_PROGRESS=0.
// Mode: ARCHCTL_PROGRESS=0|line|panel, else panel on a TTY and line otherwise. NO_COLOR is
// respected (the panel uses no colour, only block characters).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

#include "lib/base/clock.hpp"

namespace archctl::ui {

struct ProgressSnapshot {
    std::string job_id;
    std::string step;           // "stage", "sync", "merge", "verify", "cleanup"
    int step_number = 0;        // 1..steps
    int steps = 5;
    std::uint64_t done_bytes = 0;
    std::uint64_t total_bytes = 0;
    std::uint64_t files_done = 0;
    std::uint64_t files_total = 0;
    std::string current;        // "p/11 (ubuntu.iso, 5.7 GiB)"
    bool stopping = false;      // a clean stop was requested
    std::string why;            // why nothing moves: "waiting for Syncthing on 'archive1': folder paused"
};

// Smoothed rate (bytes/s) from cumulative byte counts, and a sparkline of recent rates.
class RateMeter {
public:
    explicit RateMeter(std::chrono::seconds cell = std::chrono::seconds(5), size_t cells = 8)
        : m_cell(cell), m_cells(cells) {}
    void add(SteadyTime at, std::uint64_t cumulative_bytes);
    double rate() const { return m_rate; }
    // Block characters ▁▂▃▄▅▆▇█, one per cell, oldest first, padded with spaces to `cells`.
    std::string sparkline() const;

private:
    std::chrono::seconds m_cell;
    size_t m_cells;
    bool m_started = false;
    SteadyTime m_last_at{};
    std::uint64_t m_last_bytes = 0;
    double m_rate = 0;
    SteadyTime m_cell_start{};
    std::uint64_t m_cell_bytes = 0;
    std::deque<double> m_history;
};

// The two panel lines for a snapshot, each shorter than `width` columns (the last column is never
// written, so no terminal wraps them). Narrow widths drop fields by priority: the sparkline, the
// bar, the rate, the byte counts, the step; the percentage and the ETA always stay.
std::string format_panel(const ProgressSnapshot& s, double rate, const std::string& sparkline, int width = 100);
// The snapshot to show after `last` when `next` arrives: a stopping operation that reports fewer
// (or no) bytes for the same job and step keeps the counts already reached on screen.
ProgressSnapshot merge_snapshot(const ProgressSnapshot& last, const ProgressSnapshot& next);
// Columns of the terminal `out` writes to (TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_width(std::FILE* out);
// One status line: "2026-12-01T18:35:02Z job <id> sync 61.3% 13.2/21.5GiB 171.4MiB/s eta 49s files 3/6".
std::string format_status_line(const ProgressSnapshot& s, double rate, SystemTime now);
// "▌" style bar of `width` cells for a fraction 0..1.
std::string format_bar(double fraction, int width);

enum class ProgressMode { none, line, panel };
// ARCHCTL_PROGRESS value ("auto", "0", "line", "panel") and whether stderr is a terminal.
ProgressMode choose_mode(const std::string& setting, bool stderr_is_tty);

class ProgressRenderer {
public:
    virtual ~ProgressRenderer() = default;
    virtual void update(const ProgressSnapshot& s) = 0;
    // A log line: printed above the panel (or plainly), never torn through it.
    virtual void log(const std::string& line) = 0;
    // Leave the last state on screen and move below it.
    virtual void finish() = 0;
};

std::unique_ptr<ProgressRenderer> make_renderer(ProgressMode mode, std::FILE* out, Clock& clock);

}  // namespace archctl::ui
