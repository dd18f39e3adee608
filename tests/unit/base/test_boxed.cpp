#include <doctest/doctest.h>

#include <optional>
#include <utility>

#include "lib/base/boxed.hpp"
#include "lib/base/result.hpp"

TEST_CASE("Boxed: reads like an optional, copies deeply, takes one pointer") {
    using archctl::Boxed;
    static_assert(sizeof(Boxed<archctl::Error>) == sizeof(void*));
    Boxed<archctl::Error> none = std::nullopt;
    CHECK_FALSE(none);
    CHECK_FALSE(none.has_value());
    Boxed<archctl::Error> e = archctl::Error("IO", "cannot read 'x'");
    REQUIRE(e);
    CHECK(e->code == "IO");
    Boxed<archctl::Error> copy = e;
    copy->message = "changed";
    CHECK(e->message == "cannot read 'x'");  // the copy is its own
    none = copy;
    CHECK((*none).message == "changed");
    Boxed<archctl::Error> moved = std::move(copy);
    CHECK(moved->message == "changed");
    moved.reset();
    CHECK_FALSE(moved);
}
