// member_or_empty: a document's list read in place, never copied.

#include <doctest/doctest.h>

#include "lib/base/json_member.hpp"

using archctl::member_or_empty;
using nlohmann::json;

TEST_CASE("member_or_empty: the member itself, or an empty list") {
    const json doc = {{"files", {1, 2, 3}}, {"name", "x"}};
    CHECK(&member_or_empty(doc, "files") == &doc["files"]);  // in place: no copy
    CHECK(member_or_empty(doc, "files").size() == 3);
    CHECK(member_or_empty(doc, "name") == "x");  // a member of another type is what it is
    CHECK(member_or_empty(doc, "missing") == json::array());
    CHECK(member_or_empty(json(nullptr), "files") == json::array());
    CHECK(member_or_empty(json::array({1}), "files") == json::array());
}
