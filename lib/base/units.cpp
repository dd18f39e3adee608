#include "lib/base/units.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace archctl {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

// Split "12.5gib" into number "12.5" and unit "gib".
bool split_number(const std::string& text, double& number, std::string& unit) {
    size_t i = 0;
    bool digits = false, dot = false;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
        if (text[i] == '.') dot = true; else digits = true;
        ++i;
    }
    if (!digits) return false;
    number = std::strtod(text.substr(0, i).c_str(), nullptr);
    unit = trim(text.substr(i));
    return true;
}

}  // namespace

Result<std::uint64_t> parse_size(const std::string& input) {
    std::string text = lower(trim(input));
    double number = 0;
    std::string unit;
    auto bad = [&] {
        return Error(ErrorCode::BAD_VALUE, fmt::format("invalid size '{}': expected bytes or a number with K, M, G or T (e.g. 500M, 20G)", input));
    };
    if (!split_number(text, number, unit)) return bad();
    int shift = 0;
    if (unit.empty() || unit == "b") shift = 0;
    else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
    else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
    else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
    else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
    else return bad();
    double bytes = std::ldexp(number, shift);
    if (bytes > 1.8e19) return bad();
    if (shift == 0 && number != std::floor(number)) return bad();
    return static_cast<std::uint64_t>(std::llround(bytes));
}

Result<std::int64_t> parse_duration_seconds(const std::string& input) {
    std::string text = lower(trim(input));
    double number = 0;
    std::string unit;
    auto bad = [&] {
        return Error(ErrorCode::BAD_VALUE, fmt::format("invalid duration '{}': expected a number with s, m, h, d or w (e.g. 30s, 30m, 2h, 14d)", input));
    };
    if (!split_number(text, number, unit)) return bad();
    double mult = 0;
    if (unit.empty() || unit == "s") mult = 1;
    else if (unit == "m" || unit == "min") mult = 60;
    else if (unit == "h") mult = 3600;
    else if (unit == "d") mult = 86400;
    else if (unit == "w") mult = 7 * 86400;
    else return bad();
    return static_cast<std::int64_t>(std::llround(number * mult));
}

std::string format_size(std::uint64_t bytes) {
    static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double v = static_cast<double>(bytes) / 1024.0;
    int u = 0;
    while (v >= 1023.95 && u < 4) { v /= 1024.0; ++u; }
    return fmt::format("{:.1f} {}", v, units[u]);
}

std::string format_size_compact(std::uint64_t bytes) {
    std::string s = format_size(bytes);
    s.erase(s.find(' '), 1);
    return s;
}

std::string format_duration(std::int64_t seconds) {
    if (seconds < 0) seconds = 0;
    if (seconds < 60) return fmt::format("{}s", seconds);
    if (seconds % 3600 == 0) return fmt::format("{}h", seconds / 3600);
    if (seconds % 60 == 0 && seconds < 3600) return fmt::format("{}m", seconds / 60);
    if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
    if (seconds < 86400) return fmt::format("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60);
    return fmt::format("{}d{:02}h", seconds / 86400, (seconds % 86400) / 3600);
}

std::string format_clock(std::int64_t seconds) {
    if (seconds < 0) seconds = 0;
    return fmt::format("{}:{:02}:{:02}", seconds / 3600, (seconds % 3600) / 60, seconds % 60);
}

}  // namespace archctl
