#include "lib/config/criteria.hpp"

#include <cctype>
#include <ctime>

#include <fmt/format.h>

#include "lib/base/units.hpp"

namespace archctl::config {
namespace {

bool digits(const std::string& text, std::size_t from, std::size_t count) {
    if (from + count > text.size()) return false;
    for (std::size_t i = from; i < from + count; ++i)
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    return true;
}

int number(const std::string& text, std::size_t from, std::size_t count) {
    return std::stoi(text.substr(from, count));
}

// "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ" as UTC epoch seconds; -1 when not such a date.
std::int64_t parse_date(const std::string& text) {
    bool date_only = text.size() == 10;
    bool with_time = text.size() == 20 && text[10] == 'T' && text[13] == ':' && text[16] == ':' && text[19] == 'Z' &&
                     digits(text, 11, 2) && digits(text, 14, 2) && digits(text, 17, 2);
    if (!date_only && !with_time) return -1;
    if (!digits(text, 0, 4) || text[4] != '-' || !digits(text, 5, 2) || text[7] != '-' || !digits(text, 8, 2)) return -1;
    std::tm tm{};
    tm.tm_year = number(text, 0, 4) - 1900;
    tm.tm_mon = number(text, 5, 2) - 1;
    tm.tm_mday = number(text, 8, 2);
    if (with_time) {
        tm.tm_hour = number(text, 11, 2);
        tm.tm_min = number(text, 14, 2);
        tm.tm_sec = number(text, 17, 2);
    }
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 59)
        return -1;
    const std::tm asked = tm;
    std::time_t epoch = ::timegm(&tm);
    // timegm normalises 2026-02-30 to March: a day that does not exist is not a date.
    if (epoch < 0 || tm.tm_mday != asked.tm_mday || tm.tm_mon != asked.tm_mon) return -1;
    return static_cast<std::int64_t>(epoch);
}

}  // namespace

Result<TimeBound> parse_time_bound(const std::string& text) {
    TimeBound bound;
    bound.text = text;
    if (std::int64_t epoch = parse_date(text); epoch >= 0) {
        bound.epoch = epoch;
        return bound;
    }
    bool looks_like_date = text.size() >= 5 && digits(text, 0, 4) && text[4] == '-';
    if (!looks_like_date) {
        if (auto age = parse_duration_seconds(text); age.ok() && age.value() >= 0) {
            bound.age_s = age.value();
            return bound;
        }
    }
    return Error(ErrorCode::BAD_VALUE,
                 fmt::format("invalid time '{}': expected an age such as 14d, 12h or 30m, or a UTC date such as "
                             "2026-01-31 or 2026-01-31T12:00:00Z",
                             text));
}

}  // namespace archctl::config
