#include <doctest/doctest.h>

#include "lib/torrent/selection.hpp"

using namespace archctl::torrent;

namespace {
Selection sel(std::string_view text) {
    auto r = Selection::parse(text);
    REQUIRE(r.ok());
    return *r;
}
}  // namespace

TEST_CASE("selection: parse and print normalize") {
    CHECK(sel("0-3,7,9-12").to_string() == "0-3,7,9-12");
    CHECK(sel("7,0-3,2,8").to_string() == "0-3,7-8");
    CHECK(sel("3,2,1,0").to_string() == "0-3");
    CHECK(sel("5-5").to_string() == "5");
    CHECK(sel("0-3,4-6").to_string() == "0-6");
    CHECK(sel("").empty());
    CHECK(sel("4294967295").to_string() == "4294967295");
    CHECK(sel("0-3,7,9-12").count() == 9);
    for (std::string bad : {",", "1,", ",1", "1,,2", "3-1", "-1", "1-", "a", " 1", "1 ", "+1", "4294967296", "1-2-3"}) {
        auto r = Selection::parse(bad);
        CHECK_MESSAGE(!r.ok(), bad);
        if (!r.ok()) CHECK(r.error().code == "SELECTION_INVALID");
    }
}

TEST_CASE("selection: algebra") {
    Selection a = sel("0-5,10-12");
    Selection b = sel("3-10,20");
    CHECK(a.union_with(b).to_string() == "0-12,20");
    CHECK(a.intersection(b).to_string() == "3-5,10");
    CHECK(a.difference(b).to_string() == "0-2,11-12");
    CHECK(b.difference(a).to_string() == "6-9,20");
    CHECK(a.difference(a).empty());
    CHECK(a.difference(Selection()).to_string() == a.to_string());
    CHECK(sel("0-9").difference(sel("0,9,4-5")).to_string() == "1-3,6-8");
    CHECK(sel("2-3").is_subset_of(a));
    CHECK(Selection().is_subset_of(a));
    CHECK_FALSE(b.is_subset_of(a));
    CHECK(a.complement(15).to_string() == "6-9,13-14");
    CHECK(Selection::all(4).to_string() == "0-3");
    CHECK(Selection::all(0).empty());
    CHECK(Selection::of({5, 1, 2, 2, 3}).to_string() == "1-3,5");
    CHECK(a.contains(0));
    CHECK(a.contains(12));
    CHECK_FALSE(a.contains(6));
    CHECK_FALSE(a.contains(13));
    CHECK(sel("1-3,5").indices() == std::vector<std::uint32_t>{1, 2, 3, 5});
    CHECK(a == sel("10-12,0-5"));
    CHECK(sel("4294967294-4294967295").union_with(sel("0")).to_string() == "0,4294967294-4294967295");
}

TEST_CASE("selection: bounds and JSON form") {
    CHECK(sel("0-3").check_within(4).ok());
    auto out = sel("0-4").check_within(4);
    REQUIRE_FALSE(out.ok());
    CHECK(out.error().code == "SELECTION_OUT_OF_RANGE");
    auto j = sel("0-3,7").to_json();
    CHECK(j.dump() == R"({"count":5,"ranges":"0-3,7"})");
    CHECK(*Selection::from_json(j) == sel("0-3,7"));
    CHECK(*Selection::from_json(nlohmann::json("7,1")) == sel("1,7"));
    CHECK_FALSE(Selection::from_json(nlohmann::json{{"ranges", "0-3"}, {"count", 3}}).ok());
    CHECK_FALSE(Selection::from_json(nlohmann::json(3)).ok());
}
