// Job functions run against the recording fakes (tests/support/fakes.hpp): no qBittorrent, no
// Syncthing, no node process, no sleeping.

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lib/base/signals.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/session/node_session.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using namespace archctl::jobs;
using namespace archctl::jobs::evidence;
using namespace archctl::jobs::transfer;
using archctl::fakes::FakeQb;
using archctl::fakes::FakeSyncthing;
using archctl::fakes::FakeTransport;
using archctl::fakes::ManualClock;
using nlohmann::json;
namespace qb = archctl::clients::qbittorrent;

namespace {

const std::string k_id = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

qb::TorrentInfo info(const std::string& id, const std::string& state, double progress, const std::string& save_path = "/tank/t") {
    qb::TorrentInfo i;
    i.id = id;
    i.name = "show";
    i.state = state;
    i.progress = progress;
    i.save_path = save_path;
    return i;
}

config::NodeConfig node_config(const std::string& name = "nas") {
    config::NodeConfig c;
    c.name = name;
    c.role = config::Role::archive;
    c.qb_root = "/tank";
    c.sync_root = "/tank/sync";
    return c;
}

// A stopped torrent that a recheck will take through `states`.
FakeQb recheckable(std::vector<fakes::QbState> states) {
    FakeQb fake;
    fake.put(info(k_id, "pausedUP", 1.0), {fakes::qb_file(0, "show/a.bin", 10, 1.0), fakes::qb_file(1, "show/b.bin", 20, 1.0)});
    fake.script_recheck(k_id, std::move(states));
    return fake;
}

}  // namespace

TEST_CASE("recheck_and_wait: a recheck that ends stopped at 100% returns the files") {
    FakeQb fake = recheckable({{"checkingUP", 0.4}, {"checkingUP", 0.9}, {"pausedUP", 1.0}});
    ManualClock clock;
    auto files = recheck_and_wait(clock, fake, k_id);
    REQUIRE(files.ok());
    CHECK(files->size() == 2);
    CHECK(fake.count("recheck") == 1);
    CHECK(fake.args_of("recheck").front()["ids"] == json::array({k_id}));
    CHECK(fake.count("torrents") == 4);  // one read before the recheck (a running check is stopped first)
    CHECK(fake.count("files") == 1);
    CHECK(fake.calls.back().name == "files");
    CHECK(clock.sleeps == 3);
    CHECK(clock.slept == std::chrono::milliseconds(150));  // a short recheck is seen ending within 50 ms
}

TEST_CASE("recheck_and_wait: Ctrl-C ends the wait at the next poll, not the check (in a child process: the stop flag is process-wide)") {
    json out = test::in_child([] {
        // A check that would run for an hour of polls.
        FakeQb fake = recheckable(std::vector<fakes::QbState>(2000, {"checkingUP", 0.5}));
        ManualClock clock;
        fake.on_call = [&](const std::string& name) {
            if (name == "recheck") {
                install_interrupt_handlers();
                std::raise(SIGINT);
            }
        };
        auto files = recheck_and_wait(clock, fake, k_id);
        return json{{"ok", files.ok()}, {"code", files.ok() ? "" : files.error().code}, {"message", files.ok() ? "" : files.error().message},
                    {"rechecks", fake.count("recheck")}, {"stops", fake.count("stop")}, {"reads", fake.count("torrents")}};
    });
    CHECK_FALSE(stop_requested());  // this process never saw it
    CHECK(out["ok"] == false);
    CHECK(out["code"] == "CANCELLED");
    CHECK(out["message"] == "stopped waiting for qBittorrent's recheck of 'aaaaaaaaaaaa'");
    CHECK(out["rechecks"] == 1);
    CHECK(out["stops"] == 0);  // the check goes on in qBittorrent
    CHECK(out["reads"] == 1);  // the read before the recheck; none after the stop
}

TEST_CASE("recheck_poll_interval: 50 ms for the first 2 s of a recheck, then less and less often, every 2 s after a minute") {
    CHECK(recheck_poll_interval(std::chrono::milliseconds(0)) == std::chrono::milliseconds(50));
    CHECK(recheck_poll_interval(std::chrono::milliseconds(1999)) == std::chrono::milliseconds(50));
    CHECK(recheck_poll_interval(std::chrono::seconds(2)) == std::chrono::milliseconds(200));
    CHECK(recheck_poll_interval(std::chrono::seconds(5)) == std::chrono::milliseconds(500));
    CHECK(recheck_poll_interval(std::chrono::seconds(20)) == std::chrono::milliseconds(1000));
    CHECK(recheck_poll_interval(std::chrono::minutes(5)) == std::chrono::milliseconds(2000));
}

TEST_CASE("recheck_and_wait: a recheck that ends below 100% returns the files as they are") {
    FakeQb fake = recheckable({{"checkingDL", 0.3}, {"pausedDL", 0.6}});
    fake.find(k_id)->files[1].progress = 0.2;
    ManualClock clock;
    auto files = recheck_and_wait(clock, fake, k_id);
    REQUIRE(files.ok());
    CHECK(qb::complete_files(*files) == std::vector<std::uint32_t>{0});
    CHECK(fake.count("torrents") == 3);
}

TEST_CASE("recheck_and_wait: a download attempt during the recheck fails DOWNLOAD_ATTEMPT") {
    for (const char* state : {"downloading", "stalledDL", "metaDL"}) {
        CAPTURE(state);
        FakeQb fake = recheckable({{"checkingDL", 0.3}, {state, 0.3}});
        ManualClock clock;
        auto files = recheck_and_wait(clock, fake, k_id);
        REQUIRE_FALSE(files.ok());
        CHECK(files.error().code == "DOWNLOAD_ATTEMPT");
        CHECK(fake.count("files") == 0);
    }
}

TEST_CASE("recheck_and_wait: an error state fails QB_ERROR") {
    FakeQb fake = recheckable({{"checkingUP", 0.5}, {"error", 0.5}});
    ManualClock clock;
    auto files = recheck_and_wait(clock, fake, k_id);
    REQUIRE_FALSE(files.ok());
    CHECK(files.error().code == "QB_ERROR");
}

TEST_CASE("recheck_and_wait: without a checking state seen, a stopped torrent below 100% settles after 4 s") {
    FakeQb fake = recheckable({{"pausedDL", 0.5}});
    ManualClock clock;
    auto begun = clock.steady();
    auto files = recheck_and_wait(clock, fake, k_id);
    REQUIRE(files.ok());
    CHECK(clock.steady() - begun > std::chrono::seconds(4));
    CHECK(clock.steady() - begun < std::chrono::seconds(5));
    CHECK(static_cast<std::size_t>(clock.sleeps) + 1 == fake.count("torrents"));  // + the read before the recheck
}

TEST_CASE("recheck_and_wait: qBittorrent's failures and a vanished torrent end the wait") {
    SUBCASE("the recheck request fails") {
        FakeQb fake = recheckable({{"pausedUP", 1.0}});
        fake.fail_next("recheck", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent"));
        ManualClock clock;
        auto files = recheck_and_wait(clock, fake, k_id);
        REQUIRE_FALSE(files.ok());
        CHECK(files.error().code == "HTTP_UNREACHABLE");
        CHECK(fake.count("torrents") == 1);  // the read before the recheck
    }
    SUBCASE("the torrent disappears") {
        FakeQb fake = recheckable({{"checkingUP", 0.5}});
        ManualClock clock;
        fake.fail_next("torrents", Error("HTTP_TIMEOUT", "timed out"));
        auto first = recheck_and_wait(clock, fake, k_id);
        REQUIRE_FALSE(first.ok());
        CHECK(first.error().code == "HTTP_TIMEOUT");
        fake.torrent_list.clear();
        auto second = recheck_and_wait(clock, fake, k_id);
        REQUIRE_FALSE(second.ok());
        CHECK(second.error().code == "QB_GONE");
    }
}

TEST_CASE("referenced_paths through a session with an injected qBittorrent") {
    FakeQb fake;
    fake.put(info(k_id, "pausedUP", 1.0, "/tank/t/show"), {fakes::qb_file(0, "Show/a.bin", 1, 1.0)});
    fake.put(info("bbbb", "pausedUP", 1.0, "/tank/t/show/"), {fakes::qb_file(0, "Show/a.bin", 1, 1.0), fakes::qb_file(1, "Show/sub/b.bin", 1, 1.0)});
    fake.put(info("cccc", "pausedUP", 1.0, "/tank/other"), {fakes::qb_file(0, "x.iso", 1, 1.0)});
    config::NodeConfig cfg = node_config();
    session::NodeSession node(cfg, clients::Tuning{}, {.qb = &fake});

    auto all = referenced_paths(node);
    REQUIRE(all.ok());
    CHECK(all->paths == std::set<std::string>{"/tank/t/show/Show/a.bin", "/tank/t/show/Show/sub/b.bin", "/tank/other/x.iso"});
    CHECK(all->qb_ids == std::vector<std::string>{k_id, "bbbb", "cccc"});
    CHECK(all->torrents == 3);
    CHECK_FALSE(all->excluded_present);
    CHECK(fake.count("all_torrents") == 1);
    CHECK(fake.count("files") == 3);

    auto without = referenced_paths(node, k_id);
    REQUIRE(without.ok());
    CHECK(without->excluded_present);
    CHECK(without->qb_ids == std::vector<std::string>{"bbbb", "cccc"});
    CHECK(without->paths.count("/tank/t/show/Show/a.bin") == 1);  // bbbb still references it
    CHECK(fake.count("files") == 5);
    CHECK(fake.args_of("files")[3] == json{{"id", "bbbb"}});

    auto below = referenced_paths_below(node, "/tank/other/");
    REQUIRE(below.ok());
    CHECK(below->qb_ids == std::vector<std::string>{"cccc"});
    CHECK(below->paths == std::set<std::string>{"/tank/other/x.iso"});

    fake.fail_next("files", Error("QB_NOT_FOUND", "gone"));
    auto failed = referenced_paths(node);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().code == "QB_NOT_FOUND");
}

TEST_CASE("stat_files: one tree batch in columns below the stripped base, the stamp's fields only, entries by file index") {
    FakeTransport ops("nas");
    const json fields = {"size", "dev", "ino", "mtime_ns", "ctime_ns", "btime_ns"};
    ops.handlers["tree"] = [fields](const json& args) -> Result<json> {
        std::string types;
        json stats = json::array();
        for (const auto& p : args["paths"]) {
            if (p != "show/a.bin") {
                types += 'a';
                continue;
            }
            types += 'f';
            for (json v : {10, 1, 2, 3, 0, 0}) stats.push_back(v);
        }
        return json{{"base_exists", true}, {"types", types}, {"fields", fields}, {"stats", stats}};
    };
    config::NodeConfig cfg = node_config();
    session::NodeSession node(cfg, clients::Tuning{}, {.ops = &ops});

    auto stats = stat_files(node, "/tank/t/", {{0, "show/a.bin", 10}, {2, "show/c.bin", 5}}, 3);
    REQUIRE(stats.ok());
    REQUIRE(stats->size() == 3);
    CHECK((*stats)[0].on_disk == plan::OnDisk::file);
    CHECK((*stats)[0].stamp == plan::FileStamp{1, 2, 10, 3});
    CHECK((*stats)[1].on_disk == plan::OnDisk::unread);
    CHECK((*stats)[2].on_disk == plan::OnDisk::absent);
    REQUIRE(ops.count("tree") == 1);
    CHECK(ops.calls[0].args == json{{"base", "/tank/t"}, {"paths", {"show/a.bin", "show/c.bin"}}, {"columns", fields}});
    CHECK(stamps_of(*stats) == std::map<std::uint32_t, plan::FileStamp>{{0, {1, 2, 10, 3}}});

    SUBCASE("no files: nothing is asked") {
        auto none = stat_files(node, "/tank/t", {}, 2);
        REQUIRE(none.ok());
        CHECK(none->size() == 2);
        CHECK(ops.count("tree") == 1);
    }
    SUBCASE("a short answer is PROTOCOL") {
        ops.handlers["tree"] = [fields](const json&) -> Result<json> {
            return json{{"base_exists", true}, {"types", ""}, {"fields", fields}, {"stats", json::array()}};
        };
        auto bad = stat_files(node, "/tank/t", {{0, "show/a.bin", 10}}, 1);
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().code == "PROTOCOL");
    }
    SUBCASE("the operation's own failure is passed on") {
        ops.handlers["tree"] = [](const json&) -> Result<json> { return Error("PATH_OUTSIDE_ROOT", "outside"); };
        auto refused = stat_files(node, "/elsewhere", {{0, "a", 1}}, 1);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == "PATH_OUTSIDE_ROOT");
    }
}

TEST_CASE("archive_evidence: qBittorrent's view, the committed record and a stat of the complete files") {
    FakeQb fake;
    fake.put(info(k_id, "pausedUP", 1.0, "/tank/t"),
             {fakes::qb_file(0, "show/a.bin", 10, 1.0), fakes::qb_file(1, "show/b.bin", 20, 0.5), fakes::qb_file(2, "show/c.bin", 30, 1.0, 0),
              fakes::qb_file(3, "show/empty", 0, 1.0)});
    FakeTransport ops("nas");
    ops.handlers["tree"] = [](const json& args) -> Result<json> {
        json entries = json::array();
        for (std::size_t k = 0; k < args["paths"].size(); ++k)
            entries.push_back({{"type", "file"}, {"dev", 1}, {"ino", 100 + k}, {"size", 10}, {"mtime_ns", 7}});
        return json{{"entries", entries}};
    };
    config::NodeConfig cfg = node_config();
    session::NodeSession node(cfg, clients::Tuning{}, {.qb = &fake, .ops = &ops});
    const std::vector<plan::CoverageFile> files = {{0, "show/a.bin", 10}, {1, "show/b.bin", 20}, {2, "show/c.bin", 30}, {3, "show/empty", 0}};
    CommittedFiles committed;
    committed.generation = 4;
    committed.stamps[0] = {1, 100, 10, 7};

    auto listed = fake.torrents({k_id});
    REQUIRE(listed.ok());
    auto evidence = archive_evidence(node, listed->front(), files, committed, EvidenceOptions{});
    REQUIRE(evidence.ok());
    CHECK(fake.count("files") == 1);
    CHECK(evidence->view.node == "nas");
    CHECK(evidence->view.save_path == "/tank/t");
    CHECK(evidence->view.selected.indices() == std::vector<std::uint32_t>{0, 1, 3});
    CHECK(evidence->view.complete.indices() == std::vector<std::uint32_t>{0, 3});
    CHECK(evidence->state == "pausedUP");
    CHECK(evidence->generation == 4);
    CHECK(evidence->committed == committed.stamps);
    // Only the complete files with data are stat'ed: a.bin (empty is skipped, b.bin incomplete,
    // c.bin not selected).
    REQUIRE(ops.count("tree") == 1);
    CHECK(ops.calls[0].args["paths"] == json::array({"show/a.bin"}));
    REQUIRE(evidence->disk.size() == 4);
    CHECK(evidence->disk[0].on_disk == plan::OnDisk::file);
    CHECK(evidence->disk[0].stamp == committed.stamps[0]);
    CHECK(evidence->disk[1].on_disk == plan::OnDisk::unread);

    SUBCASE("with qBittorrent's file list given, it is not read again") {
        auto qb_files = fake.files(k_id);
        REQUIRE(qb_files.ok());
        auto again = archive_evidence(node, listed->front(), *qb_files, files, committed, EvidenceOptions{.verify = plan::VerifyArchive::yes});
        REQUIRE(again.ok());
        CHECK(again->verify == plan::VerifyArchive::yes);
        CHECK(fake.count("files") == 2);
        CHECK(ops.count("tree") == 2);
    }
    SUBCASE("the node unreachable") {
        ops.fail_next("tree", Error("NODE_UNREACHABLE", "node 'nas' went away"));
        auto failed = archive_evidence(node, listed->front(), files, committed, EvidenceOptions{});
        REQUIRE_FALSE(failed.ok());
        CHECK(failed.error().code == "NODE_UNREACHABLE");
    }
}

TEST_CASE("node sessions: injected implementations, NODE_UNKNOWN naming the configured nodes, one roots rule") {
    FakeQb fake_qb;
    FakeSyncthing fake_st;
    FakeTransport ops("cache1");
    config::NodeConfig cache = node_config("cache1");
    cache.role = config::Role::cache;
    config::NodeConfig archive = node_config("archive1");
    session::NodeSessions nodes;
    nodes.add(std::make_unique<session::NodeSession>(cache, clients::Tuning{}, session::NodeSession::Injected{&fake_qb, &fake_st, &ops}));
    nodes.add(std::make_unique<session::NodeSession>(archive, clients::Tuning{}));

    auto got = nodes.get("cache1");
    REQUIRE(got.ok());
    CHECK(&(*got)->qb() == &fake_qb);
    CHECK(&(*got)->st() == &fake_st);
    auto t = (*got)->ops();
    REQUIRE(t.ok());
    CHECK(*t == &ops);
    CHECK(nodes.with_role(config::Role::cache).size() == 1);
    CHECK(nodes.all().size() == 2);
    CHECK(nodes.all().front()->name() == "archive1");

    auto unknown = nodes.get("nas9");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == "NODE_UNKNOWN");
    CHECK(unknown.error().hint == "configured nodes: archive1, cache1");

    auto status = (*got)->st().status();
    REQUIRE(status.ok());
    CHECK(status->my_id == fake_st.system.my_id);
    CHECK(fake_st.count("status") == 1);

    config::NodeConfig n;
    n.qb_root = "/tank";
    n.sync_root = "/tank/";
    CHECK(session::node_roots(n) == std::vector<std::string>{"/tank"});
    n.sync_root = "/tank/sync";
    CHECK(session::node_roots(n) == std::vector<std::string>{"/tank", "/tank/sync"});
    n.qb_root = "";
    CHECK(session::node_roots(n) == std::vector<std::string>{"/tank/sync"});
}

TEST_CASE("the Syncthing event stream over the fake") {
    FakeSyncthing fake;
    clients::syncthing::EventStream stream(fake);
    fake.push_event("ItemFinished", {{"item", "a"}});
    fake.push_event("StateChanged", {{"to", "idle"}});
    auto batch = stream.next({"StateChanged"}, std::chrono::seconds(1));
    REQUIRE(batch.ok());
    REQUIRE(batch->events.size() == 1);
    CHECK(batch->events[0].type == "StateChanged");
    CHECK(fake.count("status") == 1);  // the first poll of a mask reads Syncthing's start time
    CHECK(fake.args_of("events").back() == json{{"since", 0}, {"types", {"StateChanged"}}, {"timeout_s", 1}});

    auto idle = stream.next({"StateChanged"}, std::chrono::seconds(1));
    REQUIRE(idle.ok());
    CHECK(idle->events.empty());
    CHECK_FALSE(idle->restarted);
    CHECK(fake.args_of("events").back()["since"] == 2);

    fake.push_event("StateChanged", {{"to", "syncing"}});
    auto more = stream.next({"StateChanged"}, std::chrono::seconds(1));
    REQUIRE(more.ok());
    REQUIRE(more->events.size() == 1);
    CHECK(more->events[0].data["to"] == "syncing");
}
