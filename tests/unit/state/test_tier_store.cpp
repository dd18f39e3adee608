// state::TierStore: the last run of each tier policy, <state>/tiers/<policy>.json.
#include <doctest/doctest.h>

#include <filesystem>
#include <sys/stat.h>

#include "lib/base/fs.hpp"
#include "lib/state/tier_store.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::state;

namespace {

TierRecord stopped_run() {
    TierRecord r;
    r.policy = "box";
    r.outcome = "stopped";
    r.resumed = 1;
    r.archived = 2;
    r.evicted = 3;
    r.blocked = 1;
    r.free_before = 100;
    r.free_after = 700;
    r.want_free = 1000;
    r.goal = "keep 1000 B free";
    r.stop = "budget reached";
    r.started = "2026-12-01T03:00:00Z";
    r.ended = "2026-12-01T03:40:00Z";
    return r;
}

}  // namespace

TEST_CASE("tier store: a record round-trips; a policy that never ran has none") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    TierStore store(dir);
    auto none = store.read("box");
    REQUIRE(none.ok());
    CHECK_FALSE(none.value().has_value());

    TierRecord r = stopped_run();
    REQUIRE(store.write(r).ok());
    CHECK(store.path_of("box") == dir.tiers() + "/box.json");
    struct stat st {};
    REQUIRE(::stat(store.path_of("box").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    auto back = store.read("box");
    REQUIRE(back.ok());
    REQUIRE(back.value().has_value());
    const TierRecord& b = *back.value();
    CHECK(b.to_json() == r.to_json());
    CHECK(b.outcome == "stopped");
    CHECK(b.archived == 2);
    CHECK(b.free_after == 700);
    CHECK(b.stop == std::optional<std::string>("budget reached"));
    CHECK_FALSE(b.error.has_value());
    CHECK(b.ended == "2026-12-01T03:40:00Z");
}

TEST_CASE("tier store: a rerun replaces the record; failures keep their code and message") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    TierStore store(dir);
    REQUIRE(store.write(stopped_run()).ok());
    TierRecord failed = stopped_run();
    failed.outcome = "failed";
    failed.stop.reset();
    failed.error = TierRecord::Failure{"TIER_GOAL_UNREACHABLE", "tier box: goal not reached"};
    REQUIRE(store.write(failed).ok());
    auto back = store.read("box");
    REQUIRE(back.ok());
    REQUIRE(back.value().has_value());
    CHECK(back.value()->outcome == "failed");
    CHECK_FALSE(back.value()->stop.has_value());
    REQUIRE(back.value()->error.has_value());
    CHECK(back.value()->error->code == "TIER_GOAL_UNREACHABLE");
    auto j = back.value()->to_json();
    CHECK(j["error"]["message"] == "tier box: goal not reached");
    CHECK_FALSE(j.contains("stop"));
    // Only the record is left in the directory: no temp file.
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.tiers())) ++files;
    CHECK(files == 1);
}

TEST_CASE("tier store: a file that is not a record is CORRUPT, naming it") {
    test::Scratch s;
    auto dir = StateDir::open((s / "state").string()).value();
    TierStore store(dir);
    REQUIRE(write_file_atomic(store.path_of("box"), "{\"archived\": ").ok());
    auto torn = store.read("box");
    REQUIRE_FALSE(torn.ok());
    CHECK(torn.error().is(ErrorCode::CORRUPT));
    CHECK(torn.error().message.find("box.json") != std::string::npos);
    REQUIRE(write_file_atomic(store.path_of("box"), "{\"archived\": \"two\"}").ok());
    auto typed = store.read("box");
    REQUIRE_FALSE(typed.ok());
    CHECK(typed.error().is(ErrorCode::CORRUPT));
}
