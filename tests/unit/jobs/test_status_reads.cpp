// What `status` asks of each node, counted on the recording fakes: one torrent list per node
// however many torrents and placement records there are (the probe reads it, the placements are
// found in it), one capabilities read, and a file list only for a placement that is present.

#include <doctest/doctest.h>

#include <optional>
#include <fmt/format.h>

#include <memory>
#include <string>

#include "lib/jobs/core/outage.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/state_dir.hpp"
#include "tests/support/fakes.hpp"
#include "tests/support/scratch.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using archctl::fakes::FakeQb;
using archctl::fakes::FakeSyncthing;
using archctl::fakes::FakeTransport;
namespace qb = archctl::clients::qbittorrent;

namespace {

std::string v1_of(std::size_t i) { return fmt::format("{:040x}", i + 1); }
std::string v2_of(std::size_t i) { return fmt::format("{:064x}", i + 0x1000); }

// `n` hybrid torrents, one file each, complete.
void fill(FakeQb& fake, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        qb::TorrentInfo t;
        t.infohash_v1 = v1_of(i);
        t.infohash_v2 = v2_of(i);
        t.id = t.infohash_v1;
        t.name = fmt::format("stub-{}", i);
        t.save_path = "/q/stubs";
        t.state = "pausedUP";
        t.progress = 1;
        qb::TorrentFile f;
        f.name = t.name + ".bin";
        f.size = 100;
        f.progress = 1;
        f.priority = 1;
        fake.put(t, {f});
    }
}

// A cache node (cache1) and an archive node (archive1) on the fakes, a state directory, and the
// sessions over them; a test fills the qBittorrents with what it needs.
struct TwoNodes {
    test::Scratch scratch;
    config::Config cfg = config_in(scratch);
    std::optional<state::StateDir> dir = state::StateDir::open(cfg.state_dir).value();
    FakeQb cache_qb, archive_qb;
    FakeSyncthing cache_st, archive_st;
    FakeTransport cache_ops{"cache1"}, archive_ops{"archive1"};
    session::NodeSessions nodes;

    TwoNodes() {
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("cache1"), clients::Tuning{},
                                                         session::NodeSession::Injected{&cache_qb, &cache_st, &cache_ops}));
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("archive1"), clients::Tuning{},
                                                         session::NodeSession::Injected{&archive_qb, &archive_st, &archive_ops}));
    }

    static config::Config config_in(const test::Scratch& scratch) {
        config::Config c;
        c.state_dir = (scratch / "state").string();
        c.nodes["cache1"] = test::canned_node("cache1", config::Role::cache);
        c.nodes["archive1"] = test::canned_node("archive1", config::Role::archive);
        return c;
    }
};

}  // namespace

TEST_CASE_FIXTURE(TwoNodes, "status: one torrent list per node for 2,000 torrents; files only of recorded placements that are present") {
    fill(cache_qb, 2000);
    fill(archive_qb, 2000);


    SUBCASE("no records: the probe's list is the only torrent read") {
        const jobs::report::Overview o = jobs::report::read_overview(cfg, &dir.value(), "", nodes);
        REQUIRE(o.probes.size() == 2);
        CHECK(o.probes[0].torrent_count == std::optional<std::size_t>(2000));
        CHECK(o.resources.empty());
        for (const FakeQb* fake : {&cache_qb, &archive_qb}) {
            CHECK(fake->count("all_torrents") == 1);
            CHECK(fake->count("torrents") == 0);
            CHECK(fake->count("files") == 0);
            CHECK(fake->count("capabilities") == 1);
        }
    }

    SUBCASE("records of 3 resources, present on cache1 only: 3 file lists there, none on archive1") {
        state::PlacementStore records(dir.value());
        for (std::size_t i : {5U, 700U, 1999U})
            REQUIRE(records.advance({v1_of(i), v2_of(i)}, "cache1", "fp", "job", {{"qb_id", v1_of(i)}}).ok());
        archive_qb.torrent_list.clear();
        const jobs::report::Overview o = jobs::report::read_overview(cfg, &dir.value(), "", nodes);
        REQUIRE(o.resources.size() == 3);
        for (const auto& r : o.resources) {
            REQUIRE(r.placements.size() == 2);
            for (const auto& p : r.placements) {
                CHECK(p.present == (p.node == "cache1"));
                if (p.node == "cache1") CHECK(p.record);
            }
            CHECK(r.name.rfind("stub-", 0) == 0);
        }
        CHECK(cache_qb.count("all_torrents") == 1);
        CHECK(cache_qb.count("files") == 3);
        CHECK(archive_qb.count("all_torrents") == 1);
        CHECK(archive_qb.count("files") == 0);
    }
}

TEST_CASE("a session's torrent list is read once, its error too") {
    config::NodeConfig cfg = test::canned_node("cache1", config::Role::cache);
    FakeQb fake;
    fill(fake, 3);
    session::NodeSession s(cfg, clients::Tuning{}, session::NodeSession::Injected{&fake, nullptr, nullptr});
    REQUIRE(s.torrent_list().ok());
    CHECK(s.torrent_list()->size() == 3);
    CHECK(fake.count("all_torrents") == 1);

    FakeQb down;
    down.fail_always("all_torrents", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'cache1'"));
    session::NodeSession t(cfg, clients::Tuning{}, session::NodeSession::Injected{&down, nullptr, nullptr});
    CHECK_FALSE(t.torrent_list().ok());
    CHECK_FALSE(t.torrent_list().ok());
    CHECK(down.count("all_torrents") == 1);
}

// A copy archctl recorded whose torrent has since gone from its qBittorrent: the overview says
// "recorded but gone", and `status RES` finds it by the same records instead of "no node has a
// torrent matching".
TEST_CASE_FIXTURE(TwoNodes, "status RES: a recorded placement whose torrent is gone resolves from the records and shows as gone") {
    fill(cache_qb, 3);
    fill(archive_qb, 3);
    // Resource 50 was committed on archive1, and its torrent is in no qBittorrent now.
    state::PlacementStore records(dir.value());
    REQUIRE(records.advance({v1_of(50), v2_of(50)}, "archive1", "fp", "job", {{"qb_id", v1_of(50)}}).ok());

    auto focus = jobs::report::read_focus(dir.value(), nodes, v1_of(50), false);
    REQUIRE_MESSAGE(focus.ok(), focus.error().message);
    CHECK(focus->resource.identity.v1_hex() == v1_of(50));
    CHECK(focus->qb_id == focus->resource.identity.qb_id());
    bool gone = false;
    for (const auto& p : focus->resource.placements)
        if (p.node == "archive1") gone = !p.present && p.record && p.record->generation == 1;
    CHECK(gone);
    // By its v2 alias too.
    auto by_v2 = jobs::report::read_focus(dir.value(), nodes, v2_of(50), false);
    REQUIRE_MESSAGE(by_v2.ok(), by_v2.error().message);
    CHECK(by_v2->resource.identity.v1_hex() == v1_of(50));

    // Nothing recorded or live matches: still refused.
    auto none = jobs::report::read_focus(dir.value(), nodes, std::string(40, 'e'), false);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().is(ErrorCode::NOT_FOUND));
}

// RES is an unambiguous prefix (8 or more hex digits) of a v1 (40) or v2 (64) hash: input that
// cannot be one, and a prefix that matches nothing at a length no hash has, say what a valid id
// looks like.
TEST_CASE("resolve: a bad or unmatched RES says what a valid id looks like") {
    config::NodeConfig cfg = test::canned_node("cache1", config::Role::cache);
    FakeQb fake;
    fill(fake, 3);
    FakeSyncthing st;
    FakeTransport ops("cache1");
    config::Config config;
    config.nodes["cache1"] = cfg;
    session::NodeSessions nodes;
    nodes.add(std::make_unique<session::NodeSession>(cfg, clients::Tuning{}, session::NodeSession::Injected{&fake, &st, &ops}));
    const std::string valid = "a v1 hash has 40 hex digits, a v2 hash 64, and a prefix of at least 8 of either also works";

    qb::TorrentInfo v2only;
    v2only.infohash_v2 = std::string(32, 'c') + std::string(32, 'd');
    v2only.id = v2only.infohash_v2.substr(0, 40);
    v2only.name = "v2-only";
    v2only.save_path = "/q";
    v2only.progress = 1;
    fake.put(v2only, {});
    auto v2_prefix = jobs::evidence::resolve(nodes, v2only.infohash_v2.substr(0, 44), jobs::evidence::Lists::session);  // 41–63 digits: a v2 prefix
    REQUIRE_MESSAGE(v2_prefix.ok(), v2_prefix.error().message);
    CHECK(v2_prefix->name == "v2-only");

    const std::string hex44 = std::string(44, 'a');
    auto unmatched = jobs::evidence::resolve(nodes, hex44, jobs::evidence::Lists::session);
    REQUIRE_FALSE(unmatched.ok());
    CHECK(unmatched.error().is(ErrorCode::NOT_FOUND));
    CHECK(unmatched.error().message == fmt::format("no torrent matches '{}' (44 hex digits): {}", hex44, valid));

    auto whole = jobs::evidence::resolve(nodes, std::string(40, 'a'), jobs::evidence::Lists::session);  // a whole v1 hash: no lecture
    REQUIRE_FALSE(whole.ok());
    CHECK(whole.error().message.find("no node has a torrent matching") == 0);

    for (const std::string& bad : std::vector<std::string>{"abc", "xyz12345678", std::string(65, 'a'), "ab\xff\xfe"}) {
        auto r = jobs::evidence::resolve(nodes, bad, jobs::evidence::Lists::session);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().is(ErrorCode::BAD_VALUE));
        CHECK_MESSAGE(r.error().message.find(valid) != std::string::npos, r.error().message);
    }
}

TEST_CASE("resolve: nothing found while a node's qBittorrent is out is that outage, not 'no node has it'") {
    config::NodeConfig cache = test::canned_node("cache1", config::Role::cache);
    config::NodeConfig archive = test::canned_node("nas", config::Role::archive);
    FakeQb up, down;
    fill(up, 3);
    down.fail_always("all_torrents", Error("HTTP_UNREACHABLE", "cannot reach qBittorrent on 'cache1'"));
    FakeSyncthing st1, st2;
    FakeTransport ops1("cache1"), ops2("nas");
    session::NodeSessions nodes;
    nodes.add(std::make_unique<session::NodeSession>(cache, clients::Tuning{}, session::NodeSession::Injected{&down, &st1, &ops1}));
    nodes.add(std::make_unique<session::NodeSession>(archive, clients::Tuning{}, session::NodeSession::Injected{&up, &st2, &ops2}));
    const std::string absent(40, 'e');
    for (jobs::evidence::Lists lists : {jobs::evidence::Lists::session, jobs::evidence::Lists::fresh}) {
        auto r = jobs::evidence::resolve(nodes, absent, lists);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().is(ErrorCode::HTTP_UNREACHABLE));
        CHECK(jobs::is_outage(r.error()));
        CHECK(r.error().message ==
              fmt::format("cannot tell which node has '{}': no node that answered has it, and cache1: cannot reach qBittorrent on 'cache1'", absent));
    }
    // What the node that answered has is found all the same.
    auto found = jobs::evidence::resolve(nodes, v1_of(1), jobs::evidence::Lists::session);
    CHECK(found.ok());
}
