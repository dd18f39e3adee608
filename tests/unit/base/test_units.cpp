#include <doctest/doctest.h>

#include "lib/base/units.hpp"

using namespace archctl;

TEST_CASE("sizes parse with binary suffixes") {
    CHECK(parse_size("0").value() == 0);
    CHECK(parse_size("1234").value() == 1234);
    CHECK(parse_size("500M").value() == 500ull << 20);
    CHECK(parse_size("20G").value() == 20ull << 30);
    CHECK(parse_size("20GiB").value() == 20ull << 30);
    CHECK(parse_size("1.5T").value() == 3ull << 39);
    CHECK(parse_size("2k").value() == 2048);
    CHECK_FALSE(parse_size("").ok());
    CHECK_FALSE(parse_size("G").ok());
    CHECK_FALSE(parse_size("12X").ok());
    CHECK_FALSE(parse_size("-5").ok());
    CHECK_FALSE(parse_size("1.5").ok());
    CHECK(parse_size("12X").error().message.find("'12X'") != std::string::npos);
}

TEST_CASE("durations parse") {
    CHECK(parse_duration_seconds("30s").value() == 30);
    CHECK(parse_duration_seconds("30m").value() == 1800);
    CHECK(parse_duration_seconds("2h").value() == 7200);
    CHECK(parse_duration_seconds("1d").value() == 86400);
    CHECK(parse_duration_seconds("2w").value() == 14 * 86400);
    CHECK(parse_duration_seconds("45").value() == 45);
    CHECK_FALSE(parse_duration_seconds("soon").ok());
    CHECK_FALSE(parse_duration_seconds("5y").ok());
}

TEST_CASE("sizes print binary with one decimal") {
    CHECK(format_size(0) == "0 B");
    CHECK(format_size(512) == "512 B");
    CHECK(format_size(1024) == "1.0 KiB");
    CHECK(format_size(59700000000ull) == "55.6 GiB");
    CHECK(format_size(2ull << 30) == "2.0 GiB");
    CHECK(format_size((1ull << 40) * 3 + (1ull << 39)) == "3.5 TiB");
    CHECK(format_size_compact(13ull << 30) == "13.0GiB");
}

TEST_CASE("durations print") {
    CHECK(format_duration(49) == "49s");
    CHECK(format_duration(1800) == "30m");
    CHECK(format_duration(3720) == "1h02m");
    CHECK(format_duration(86400) == "24h");
    CHECK(format_clock(49) == "0:00:49");
    CHECK(format_clock(3723) == "1:02:03");
}
