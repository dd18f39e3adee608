// Which files status says each placement holds, and what it asks qBittorrent for them: a
// placement whose torrent entry proves every file selected and complete takes the resource's file
// table (read once per resource, then kept in the state directory), every other placement reads
// its own file list (docs/status.md "What status reads").

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "lib/jobs/report/placements.hpp"
#include "lib/session/node_session.hpp"
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

qb::TorrentFile file(std::uint32_t index, const std::string& name, std::int64_t size, double progress, int priority) {
    return {index, name, size, progress, priority};
}

// A torrent entry as qBittorrent 4.5 reports it for `files`: size counts the wanted files,
// amount_left what of them is missing.
qb::TorrentInfo entry(const std::string& v1, const std::string& v2, const std::vector<qb::TorrentFile>& files) {
    qb::TorrentInfo t;
    t.infohash_v1 = v1;
    t.infohash_v2 = v2;
    t.id = v2.empty() ? v1 : v2.substr(0, 40);
    t.name = "t-" + t.id.substr(0, 4);
    t.save_path = "/q/t";
    // Each torrent in a place of its own, so no other torrent shares its files.
    t.content_path = t.save_path + "/" + files.front().name.substr(0, files.front().name.find('/'));
    for (const auto& f : files) {
        t.total_size += f.size;
        if (f.priority <= 0) continue;
        t.size += f.size;
        t.amount_left += static_cast<std::int64_t>(static_cast<double>(f.size) * (1.0 - f.progress));
    }
    t.progress = t.size ? 1.0 - static_cast<double>(t.amount_left) / static_cast<double>(t.size) : 0.0;
    t.state = t.amount_left == 0 ? "pausedUP" : "downloading";
    return t;
}

jobs::report::ResourceStatus resource(const qb::TorrentInfo& t) {
    jobs::report::ResourceStatus r;
    auto id = torrent::Identity::from_qb(t.infohash_v1, t.infohash_v2);
    REQUIRE(id.ok());
    r.identity = id.value();
    r.name = t.name;
    return r;
}

const jobs::report::PlacementSummary& on(const jobs::report::ResourceStatus& r, const std::string& node) {
    for (const auto& p : r.placements)
        if (p.node == node) return p;
    FAIL("no placement on " << node);
    return r.placements.front();
}

std::string hex(char c, std::size_t n) { return std::string(n, c); }

struct Lab {
    Lab() {
        cfg.state_dir = (scratch / "state").string();
        cfg.nodes["cache1"] = test::canned_node("cache1", config::Role::cache);
        cfg.nodes["archive1"] = test::canned_node("archive1", config::Role::archive);
        auto d = state::StateDir::open(cfg.state_dir);
        REQUIRE(d.ok());
        dir = std::make_unique<state::StateDir>(d.value());
    }
    // A fresh session per status run, over the same fakes.
    std::vector<jobs::report::ResourceStatus> status(const std::vector<jobs::report::ResourceStatus>& resources) {
        session::NodeSessions nodes;
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("cache1"), clients::Tuning{},
                                                         session::NodeSession::Injected{&cache_qb, &cache_st, &cache_ops}));
        nodes.add(std::make_unique<session::NodeSession>(cfg.nodes.at("archive1"), clients::Tuning{},
                                                         session::NodeSession::Injected{&archive_qb, &archive_st, &archive_ops}));
        return jobs::report::resource_status(nodes, *dir, resources);
    }
    test::Scratch scratch;
    config::Config cfg;
    std::unique_ptr<state::StateDir> dir;
    FakeQb cache_qb, archive_qb;
    FakeSyncthing cache_st, archive_st;
    FakeTransport cache_ops{"cache1"}, archive_ops{"archive1"};
};

}  // namespace

TEST_CASE("status: complete placements take the file table, partial and downloading ones read their own list") {
    Lab lab;
    // whole: one file, complete on both nodes.
    std::vector<qb::TorrentFile> whole_files = {file(0, "whole.bin", 1500, 1.0, 1)};
    qb::TorrentInfo whole = entry(hex('a', 40), "", whole_files);
    // partial: a hybrid of two files, b.bin left out on cache1; complete with both on archive1.
    std::vector<qb::TorrentFile> partial_files = {file(0, "p/a.bin", 70000, 1.0, 1), file(1, "p/b.bin", 50000, 0.0, 0)};
    std::vector<qb::TorrentFile> partial_all = {file(0, "p/a.bin", 70000, 1.0, 1), file(1, "p/b.bin", 50000, 1.0, 1)};
    qb::TorrentInfo partial = entry(hex('b', 40), hex('c', 64), partial_files);
    qb::TorrentInfo partial_whole = entry(hex('b', 40), hex('c', 64), partial_all);
    // downloading: two files, one done.
    std::vector<qb::TorrentFile> dl_files = {file(0, "d/x.bin", 4000, 1.0, 1), file(1, "d/y.bin", 6000, 0.5, 1)};
    qb::TorrentInfo downloading = entry(hex('d', 40), hex('e', 64), dl_files);
    // several: a v1 torrent of two files, complete with both selected: its entry cannot prove
    // that (a skipped small file may leave the wanted size whole), so it reads its list.
    std::vector<qb::TorrentFile> several_files = {file(0, "s/1.bin", 300, 1.0, 1), file(1, "s/2.bin", 200, 1.0, 1)};
    qb::TorrentInfo several = entry(hex('f', 40), "", several_files);

    lab.cache_qb.put(whole, whole_files);
    lab.cache_qb.put(partial, partial_files);
    lab.cache_qb.put(downloading, dl_files);
    lab.cache_qb.put(several, several_files);
    lab.archive_qb.put(whole, whole_files);
    lab.archive_qb.put(partial_whole, partial_all);
    const std::vector<jobs::report::ResourceStatus> asked = {resource(whole), resource(partial), resource(downloading), resource(several)};

    auto check_claims = [&](const std::vector<jobs::report::ResourceStatus>& out) {
        REQUIRE(out.size() == 4);
        for (const char* node : {"cache1", "archive1"}) {
            const auto& p = on(out[0], node);
            CHECK(p.present);
            CHECK(p.error.empty());
            CHECK((p.files == 1 && p.selected == 1 && p.complete == 1));
            CHECK(p.selected_set.to_string() == "0");
            CHECK(p.complete_set.to_string() == "0");
            CHECK(p.complete_bytes == 1500);
            CHECK(p.names == std::vector<std::string>{"whole.bin"});
        }
        const auto& pc = on(out[1], "cache1");
        CHECK((pc.files == 2 && pc.selected == 1 && pc.complete == 1));
        CHECK(pc.selected_set.to_string() == "0");
        CHECK(pc.complete_set.to_string() == "0");
        CHECK(pc.complete_bytes == 70000);
        const auto& pa = on(out[1], "archive1");
        CHECK((pa.files == 2 && pa.selected == 2 && pa.complete == 2));
        CHECK(pa.complete_set.to_string() == "0-1");
        CHECK(pa.names == std::vector<std::string>{"p/a.bin", "p/b.bin"});
        const auto& d = on(out[2], "cache1");
        CHECK((d.files == 2 && d.selected == 2 && d.complete == 1));
        CHECK(d.selected_set.to_string() == "0-1");
        CHECK(d.complete_set.to_string() == "0");
        CHECK(d.complete_bytes == 4000);
        CHECK_FALSE(on(out[2], "archive1").present);
        const auto& s = on(out[3], "cache1");
        CHECK((s.files == 2 && s.selected == 2 && s.complete == 2));
        // The JSON row says the same.
        const auto j = on(out[1], "cache1").to_json();
        CHECK(j["selected"] == "0");
        CHECK(j["complete"] == "0");
        CHECK(j["files"] == 2);
    };

    // First run: no table is known. whole: one list for the resource (the first node's), the
    // other placement takes the table. partial: the first placement read gives the table;
    // cache1's entry (b.bin left out) does not prove it whole, so it reads its own list.
    // downloading and several: their own lists.
    auto first = lab.status(asked);
    check_claims(first);
    CHECK(lab.cache_qb.count("files") + lab.archive_qb.count("files") == 5);
    CHECK(std::filesystem::exists(lab.scratch / "state" / "cache" / "files" / (hex('a', 40) + ".json")));

    // Second run: the tables are kept; only the placements the entry cannot prove whole read a
    // list: partial on cache1, downloading, several — none on archive1, whose placements are whole.
    const std::size_t cache_before = lab.cache_qb.count("files"), archive_before = lab.archive_qb.count("files");
    auto second = lab.status(asked);
    check_claims(second);
    CHECK(lab.cache_qb.count("files") == cache_before + 3);
    CHECK(lab.archive_qb.count("files") == archive_before);

    // A file left out since: the entry no longer proves the placement whole, its own list says so.
    std::vector<qb::TorrentFile> one_left_out = {file(0, "p/a.bin", 70000, 1.0, 1), file(1, "p/b.bin", 50000, 1.0, 0)};
    lab.archive_qb.put(entry(hex('b', 40), hex('c', 64), one_left_out), one_left_out);
    auto third = lab.status(asked);
    const auto& pa = on(third[1], "archive1");
    CHECK((pa.selected == 1 && pa.complete == 1));
    CHECK(pa.complete_set.to_string() == "0");
    CHECK(lab.archive_qb.count("files") == archive_before + 1);
}

TEST_CASE("status: a kept file table that does not match the entry is not used") {
    Lab lab;
    std::vector<qb::TorrentFile> files = {file(0, "whole.bin", 1500, 1.0, 1)};
    qb::TorrentInfo t = entry(hex('a', 40), "", files);
    lab.cache_qb.put(t, files);
    std::filesystem::create_directories(lab.scratch / "state" / "cache" / "files");
    {
        std::ofstream out(lab.scratch / "state" / "cache" / "files" / (hex('a', 40) + ".json"));
        out << R"({"files":[["other.bin",999]]})";
    }
    auto out = lab.status({resource(t)});
    const auto& p = on(out[0], "cache1");
    CHECK(p.names == std::vector<std::string>{"whole.bin"});
    CHECK(p.complete == 1);
    CHECK(lab.cache_qb.count("files") == 1);
    // The list read replaced it: the next status takes the table.
    auto again = lab.status({resource(t)});
    CHECK(on(again[0], "cache1").names == std::vector<std::string>{"whole.bin"});
    CHECK(lab.cache_qb.count("files") == 1);
}
