// Evict's unlink step when the cache node fails part-way through a batch: the record accounts
// for what the node removed before it failed, at once, and a rerun finishes without counting a
// file twice.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "lib/node/wire/ops.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using archctl::test::EvictFixture;
using nlohmann::json;

namespace archctl {

TEST_CASE("evict unlink: a node that fails after unlinking part of a batch is accounted for by the failing run") {
    EvictFixture e;
    auto working = e.seedbox.ops.handlers["unlink_owned"];
    // The node unlinks the first path, then fails (as a disk error on the second would).
    e.seedbox.ops.handlers["unlink_owned"] = [&e](const json& args) -> Result<json> {
        auto request = args.get<node::UnlinkOwnedRequest>();
        e.unlinked.insert(request.paths.front().path);
        return Error(ErrorCode::IO, "cannot unlink '" + request.paths.at(1).path + "': Input/output error");
    };
    jobs::RunResult failed = e.run();
    REQUIRE(failed.outcome == jobs::RunOutcome::failed);
    CAPTURE(failed.error.message);
    CHECK(failed.error.code == "CLEANUP_REQUIRED");  // the torrent is out of qBittorrent already
    CHECK(failed.error.message.find("Input/output error") != std::string::npos);
    json l = e.ledger();
    CHECK(l["files_removed"] == 1);
    CHECK(l["bytes_freed"] == 10);  // show/a.bin
    CHECK_FALSE(l.contains("unlinking"));
    auto recovered = e.events_of("unlinked");
    REQUIRE(recovered.size() == 1);
    CHECK(recovered[0]["files"] == json{"/srv/cache/t/show/a.bin"});
    CHECK(recovered[0]["recovered"] == true);

    // The node works again: the rerun unlinks the rest and counts each file once.
    e.seedbox.ops.handlers["unlink_owned"] = working;
    jobs::RunResult done = e.run();
    REQUIRE_MESSAGE(done.outcome == jobs::RunOutcome::done, done.error.message);
    CHECK(done.detail["files_removed"] == 2);
    CHECK(done.detail["bytes_freed"] == 30);
    std::multiset<std::string> unlinked_events;
    for (const auto& ev : e.events_of("unlinked"))
        for (const auto& f : ev["files"]) unlinked_events.insert(f.get<std::string>());
    CHECK(unlinked_events == std::multiset<std::string>{"/srv/cache/t/show/a.bin", "/srv/cache/t/show/b.bin"});
}

}  // namespace archctl
