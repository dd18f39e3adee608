#pragma once
// Clock seam: wall time for records, steady time for deadlines and rates, and sleeping — behind
// one interface so planners and state machines are tested without sleeping.

#include <chrono>
#include <string>

namespace archctl {

using SystemTime = std::chrono::system_clock::time_point;
using SteadyTime = std::chrono::steady_clock::time_point;

class Clock {
public:
    virtual ~Clock() = default;
    virtual SystemTime now() const = 0;
    virtual SteadyTime steady() const = 0;
    virtual void sleep_for(std::chrono::milliseconds d) = 0;
};

// The process-wide real clock.
Clock& real_clock();

SystemTime system_now();
// "2026-12-01T18:34:12Z" (UTC, seconds).
std::string format_rfc3339(SystemTime t);
// Parse the form above; nullopt-like false on failure.
bool parse_rfc3339(const std::string& text, SystemTime& out);
// "20261201-183412" (UTC), for ids that sort by creation time.
std::string format_compact_utc(SystemTime t);

}  // namespace archctl
