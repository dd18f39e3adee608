#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "lib/base/fs.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;

TEST_CASE("list_dir: every name but . and .., sorted, hidden names included") {
    test::Scratch s;
    s.write("b", "");
    s.write("a", "");
    s.write(".hidden", "");
    std::filesystem::create_directory(s / "dir");
    auto names = list_dir(s.path().string());
    REQUIRE(names.ok());
    CHECK(names.value() == std::vector<std::string>{".hidden", "a", "b", "dir"});

    std::filesystem::create_directory(s / "empty");
    auto none = list_dir((s / "empty").string());
    REQUIRE(none.ok());
    CHECK(none.value().empty());
}

TEST_CASE("list_dir: an open descriptor is listed and stays open") {
    test::Scratch s;
    s.write("x/one", "");
    s.write("x/two", "");
    UniqueFd fd(::open((s / "x").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
    auto first = list_dir(fd.get(), "x");
    REQUIRE(first.ok());
    CHECK(first.value() == std::vector<std::string>{"one", "two"});
    auto again = list_dir(fd.get(), "x");  // the descriptor was not consumed
    REQUIRE(again.ok());
    CHECK(again.value() == first.value());
}

TEST_CASE("list_dir: a missing directory is NOT_FOUND, named with the caller's words") {
    test::Scratch s;
    auto missing = list_dir((s / "nope").string(), "cannot list jobs in");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == "NOT_FOUND");
    CHECK(missing.error().message.find("cannot list jobs in") == 0);
    auto file = list_dir(s.write("f", "").string());
    CHECK_FALSE(file.ok());
}

TEST_CASE("strip_trailing_slashes keeps the root") {
    CHECK(strip_trailing_slashes("/srv/x/") == "/srv/x");
    CHECK(strip_trailing_slashes("/srv/x//") == "/srv/x");
    CHECK(strip_trailing_slashes("/srv/x") == "/srv/x");
    CHECK(strip_trailing_slashes("/") == "/");
    CHECK(strip_trailing_slashes("///") == "/");
    CHECK(strip_trailing_slashes("") == "");
}
