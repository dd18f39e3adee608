#include "lib/base/clock.hpp"

#include <ctime>
#include <thread>

#include <fmt/format.h>

namespace archctl {
namespace {

class RealClock final : public Clock {
public:
    SystemTime now() const override { return std::chrono::system_clock::now(); }
    SteadyTime steady() const override { return std::chrono::steady_clock::now(); }
    void sleep_for(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

std::tm utc_tm(SystemTime t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    return tm;
}

}  // namespace

Clock& real_clock() {
    static RealClock clock;
    return clock;
}

SystemTime system_now() { return std::chrono::system_clock::now(); }

std::string format_rfc3339(SystemTime t) {
    std::tm tm = utc_tm(t);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec);
}

bool parse_rfc3339(const std::string& text, SystemTime& out) {
    std::tm tm{};
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) return false;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    out = std::chrono::system_clock::from_time_t(timegm(&tm));
    return true;
}

std::string format_compact_utc(SystemTime t) {
    std::tm tm = utc_tm(t);
    return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                       tm.tm_min, tm.tm_sec);
}

}  // namespace archctl
