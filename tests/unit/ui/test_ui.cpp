#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "lib/ui/progress.hpp"
#include "lib/ui/table.hpp"

using namespace archctl;
using namespace archctl::ui;

namespace {

class FakeClock final : public Clock {
public:
    SystemTime now() const override { return SystemTime(std::chrono::seconds(1796150000)) + (m_steady - SteadyTime()); }
    SteadyTime steady() const override { return m_steady; }
    void sleep_for(std::chrono::milliseconds d) override { m_steady += d; }
    SteadyTime m_steady{};
};

ProgressSnapshot sample() {
    ProgressSnapshot s;
    s.job_id = "20261201-183412-7f3c";
    s.step = "sync";
    s.step_number = 2;
    s.done_bytes = 13ull << 30;
    s.total_bytes = 21ull << 30;
    s.files_done = 3;
    s.files_total = 6;
    s.current = "p/11 (ubuntu.iso, 5.7 GiB)";
    return s;
}

}  // namespace

TEST_CASE("tables keep columns steady, by display width") {
    Table t({Align::left, Align::right}, "  ");
    t.add_row({"requested", "15", "55.6 GiB"});
    t.add_row({"on target", "9", "34.1 GiB"});
    t.add_row({"ünï", "100", "x"});
    CHECK(t.render() == "  requested   15  55.6 GiB\n  on target    9  34.1 GiB\n  ünï        100  x");
}

TEST_CASE("bar, panel and status line have fixed widths") {
    CHECK(display_width(format_bar(0.0, 24)) == 24);
    CHECK(display_width(format_bar(0.613, 24)) == 24);
    CHECK(display_width(format_bar(1.0, 24)) == 24);
    auto s = sample();
    std::string a = format_panel(s, 171.4 * 1048576, "▂▃▅▇▇▆▅▇");
    s.done_bytes = 13ull << 30 | 1;  // digits roll over: columns must not move
    std::string b = format_panel(s, 9.0 * 1048576, "▂▃▅▇▇▆▅▇");
    CHECK(a.find("[sync 2/5]") != std::string::npos);
    CHECK(a.find("61.9%") != std::string::npos);
    CHECK(a.find("files 3/6") != std::string::npos);
    CHECK(a.find("now: p/11") != std::string::npos);
    CHECK(display_width(a.substr(0, a.find('\n'))) == display_width(b.substr(0, b.find('\n'))));
    std::string line = format_status_line(sample(), 171.4 * 1048576, SystemTime(std::chrono::seconds(1796150000)));
    CHECK(line.find(" job 20261201-183412-7f3c sync 61.9% 13.0GiB/21.0GiB 171.4MiB/s eta ") != std::string::npos);
    CHECK(line.find(" files 3/6") != std::string::npos);
}

TEST_CASE("panel and status line say why nothing moves") {
    auto s = sample();
    s.why = "waiting for Syncthing on 'archive1': folder paused";
    std::string panel = format_panel(s, 0, "        ");
    CHECK(panel.find("waiting for Syncthing on 'archive1': folder paused") != std::string::npos);
    CHECK(panel.find("now: ") == std::string::npos);
    std::string line = format_status_line(s, 0, SystemTime(std::chrono::seconds(1796150000)));
    CHECK(line.find("files 3/6 — waiting for Syncthing on 'archive1': folder paused") != std::string::npos);
}

TEST_CASE("rate meter smooths and draws a sparkline") {
    RateMeter m(std::chrono::seconds(5), 4);
    SteadyTime t{};
    for (int i = 0; i <= 30; ++i) m.add(t + std::chrono::seconds(i), static_cast<std::uint64_t>(i) * 1000000);
    CHECK(m.rate() == doctest::Approx(1e6).epsilon(0.01));
    CHECK(display_width(m.sparkline()) == 4);
}

TEST_CASE("mode selection follows ARCHCTL_PROGRESS and the terminal") {
    CHECK(choose_mode("0", true) == ProgressMode::none);
    CHECK(choose_mode("line", true) == ProgressMode::line);
    CHECK(choose_mode("panel", false) == ProgressMode::panel);
    CHECK(choose_mode("auto", true) == ProgressMode::panel);
    CHECK(choose_mode("auto", false) == ProgressMode::line);
}

TEST_CASE("line renderer prints at most one status line per 10 s; panel prints logs above") {
    FakeClock clock;
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* f = open_memstream(&buf, &len);
    auto r = make_renderer(ProgressMode::line, f, clock);
    for (int i = 0; i < 25; ++i) {
        r->update(sample());
        clock.sleep_for(std::chrono::seconds(1));
    }
    r->finish();
    std::fclose(f);
    std::string out(buf, len);
    free(buf);
    CHECK(std::count(out.begin(), out.end(), '\n') == 3);  // t=0, 10, 20

    buf = nullptr;
    f = open_memstream(&buf, &len);
    auto p = make_renderer(ProgressMode::panel, f, clock);
    p->update(sample());
    p->log("archctl: staged 6 files");
    p->finish();
    std::fclose(f);
    std::string panel(buf, len);
    free(buf);
    auto log_at = panel.find("archctl: staged 6 files\n");
    REQUIRE(log_at != std::string::npos);
    CHECK(panel.find("[sync 2/5]", log_at) != std::string::npos);  // redrawn below the log line
}

TEST_CASE("the panel fits any width: fields go by priority, percent and ETA stay") {
    auto s = sample();
    for (int width = 20; width <= 200; ++width) {
        std::string panel = format_panel(s, 171.4 * 1048576, "▂▃▅▇▇▆▅▇", width);
        std::string line1 = panel.substr(0, panel.find('\n'));
        std::string line2 = panel.substr(panel.find('\n') + 1);
        CAPTURE(width);
        CHECK(display_width(line1) < static_cast<size_t>(width));
        CHECK(display_width(line2) < static_cast<size_t>(width));
        CHECK(line1.find("61.9%") != std::string::npos);
        CHECK(line1.find("ETA ") != std::string::npos);
    }
    std::string wide = format_panel(s, 171.4 * 1048576, "▂▃▅▇▇▆▅▇", 120);
    CHECK(wide.find("▂▃▅▇▇▆▅▇") != std::string::npos);
    CHECK(wide.find("[sync 2/5]") != std::string::npos);
    std::string narrow = format_panel(s, 171.4 * 1048576, "▂▃▅▇▇▆▅▇", 80);
    CHECK(narrow.find("▂▃▅▇▇▆▅▇") == std::string::npos);
    CHECK(narrow.find("13.0 GiB/21.0 GiB") != std::string::npos);
}

TEST_CASE("a stopping operation keeps the counts reached on the panel") {
    auto last = sample();
    ProgressSnapshot zero;
    zero.job_id = last.job_id;
    zero.step = last.step;
    zero.stopping = true;
    auto kept = merge_snapshot(last, zero);
    CHECK(kept.done_bytes == last.done_bytes);
    CHECK(kept.total_bytes == last.total_bytes);
    CHECK(kept.stopping);
    auto next = sample();
    next.done_bytes += 1;
    CHECK(merge_snapshot(last, next).done_bytes == next.done_bytes);
    next.step = "merge";
    next.done_bytes = 0;
    CHECK(merge_snapshot(last, next).done_bytes == 0);  // a new step starts from its own zero
}

TEST_CASE("terminal width: the terminal, else COLUMNS, else 80") {
    ::setenv("COLUMNS", "132", 1);
    CHECK(terminal_width(nullptr) == 132);
    ::unsetenv("COLUMNS");
    CHECK(terminal_width(nullptr) == 80);
}
