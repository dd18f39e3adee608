#pragma once
// Sizes and durations as users write them and as archctl prints them.
//
// Sizes: "0", "1234", "500M", "20G", "1.5T", also "20GiB"/"20GB"/"20g" — K/M/G/T are binary
// (1024-based). Printed binary with one decimal: "55.6 GiB", "512 B".
// Durations: "30s", "30m", "2h", "1d", "2w", a bare number is seconds; printed "1h02m", "49s".

#include <cstdint>
#include <string>

#include "lib/base/result.hpp"

namespace archctl {

Result<std::uint64_t> parse_size(const std::string& text);
Result<std::int64_t> parse_duration_seconds(const std::string& text);

std::string format_size(std::uint64_t bytes);          // "55.6 GiB"
std::string format_size_compact(std::uint64_t bytes);  // "55.6GiB" (status lines)
std::string format_duration(std::int64_t seconds);     // "0:00:49" style is format_clock
std::string format_clock(std::int64_t seconds);        // "1:02:03"

}  // namespace archctl
