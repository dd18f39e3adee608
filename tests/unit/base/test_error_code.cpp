#include <doctest/doctest.h>

#include <cctype>
#include <set>
#include <string>

#include "lib/base/error_code.hpp"
#include "lib/base/result.hpp"

using namespace archctl;

TEST_CASE("every error code has one stable UPPER_SNAKE string form that parses back") {
    std::set<std::string> seen;
    for (int i = 0; i < static_cast<int>(ErrorCode::unknown); ++i) {
        auto code = static_cast<ErrorCode>(i);
        std::string text(to_string(code));
        CHECK_FALSE(text.empty());
        for (char c : text) CHECK((std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'));
        CHECK(seen.insert(text).second);
        CHECK(parse_error_code(text) == code);
    }
    CHECK(to_string(ErrorCode::LOCKED) == "LOCKED");
    CHECK(parse_error_code("NO_SUCH_CODE") == ErrorCode::unknown);
    CHECK(to_string(ErrorCode::unknown) == "UNKNOWN");
}

TEST_CASE("an Error built from a code carries its string form and compares by code") {
    Error e(ErrorCode::STALE_STATE, "the source torrent changed");
    CHECK(e.code == "STALE_STATE");
    CHECK(e.is(ErrorCode::STALE_STATE));
    CHECK_FALSE(e.is(ErrorCode::LOCKED));
    Error wire("PATH_OUTSIDE_ROOT", "from a node");
    CHECK(wire.is(ErrorCode::PATH_OUTSIDE_ROOT));
}
