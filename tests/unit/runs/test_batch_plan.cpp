// Planning a batch with the real planners (LivePlanner over jobs::transfer::TransferPlanner) on the
// recording fakes: whatever the number of resources, each node's torrent list is read once and
// each route is looked up once; per resource only its file list and its metainfo are read, and
// for one the target already holds whole only the target's file list.

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/runs/batch.hpp"
#include "lib/torrent/sha.hpp"
#include "tests/unit/jobs/job_fixture.hpp"

using namespace archctl;
using nlohmann::json;

namespace {

namespace qb = clients::qbittorrent;

// `count` complete two-file torrents on seedbox ("show-000" …, 10 and 20 bytes), none on nas;
// both nodes' disks answer as the plan's checks read them.
class ManyTorrents : public test::JobFixture {
public:
    explicit ManyTorrents(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) put(fmt::format("show-{:03}", i));
        seedbox.ops.handlers["tree"] = [](const json& args) -> Result<json> { return tree(args, true); };
        nas.ops.handlers["tree"] = [](const json& args) -> Result<json> { return tree(args, false); };
        nas.ops.handlers["info"] = [](const json& args) -> Result<json> {
            node::InfoResult r;
            for (const auto& dir : args.get<node::InfoRequest>().probe_dirs) {
                node::DirectoryInfo d;
                d.root.path = dir;
                d.free_bytes = 1ull << 40;
                d.total_bytes = 1ull << 41;
                r.probes.push_back(d);
            }
            return json(r);
        };
        io.clock = &clock;
        io.log = [this](const std::string& line) { log.push_back(line); };
    }

    runs::Planned plan(runs::PlanMode mode = runs::PlanMode::read_only) {
        jobs::transfer::TransferPlanner transfers(config, state, nodes, io);
        jobs::evict::Evictor evictor(config, state, nodes, io);
        runs::LivePlanner planner(transfers, evictor, spec);
        auto p = runs::plan_batch(nodes, clock, spec, planner, mode);
        REQUIRE_MESSAGE(p.ok(), p.error().message);
        return std::move(p.value());
    }

    // nas holds torrent `i` too, complete, with only `selected_files` of its files selected.
    void hold_on_nas(std::size_t i, int selected_files = 2) {
        qb::TorrentInfo t = seedbox.qb.torrent_list.at(i).info;
        t.save_path = fmt::format("/tank/{}", t.name);
        t.state = "pausedUP";
        std::vector<qb::TorrentFile> files = seedbox.qb.torrent_list.at(i).files;
        if (selected_files < 2) files[1].priority = 0, files[1].progress = 0;
        nas.qb.put(t, files);
    }

    runs::BatchSpec spec = every_torrent();
    jobs::JobIo io;

private:
    static runs::BatchSpec every_torrent() {
        runs::BatchSpec s;
        config::Criteria all;
        all.all = true;
        s.criteria = all;
        s.from = "seedbox";
        s.to = "nas";
        return s;
    }

    void put(const std::string& name) {
        const std::string info = fmt::format("d5:filesld6:lengthi10e4:pathl5:a.bineed6:lengthi20e4:pathl5:b.bineee4:name{}:{}"
                                             "12:piece lengthi16384e6:pieces20:{}e",
                                             name.size(), name, std::string(20, 'x'));
        const std::string v1 = torrent::to_hex(torrent::sha1(info));
        qb::TorrentInfo t;
        t.id = t.infohash_v1 = v1;
        t.name = name;
        t.save_path = fmt::format("/srv/cache/{}", name);
        t.state = "stalledUP";
        t.progress = 1;
        t.size = t.total_size = 30;
        auto& added = seedbox.qb.put(t, {fakes::qb_file(0, name + "/a.bin", 10), fakes::qb_file(1, name + "/b.bin", 20)});
        added.metainfo = "d4:info" + info + "e";
    }

    // A node's tree: every asked-for file at its size (`present`), or absent.
    static Result<json> tree(const json& args, bool present) {
        auto request = args.get<node::TreeRequest>();
        json out = node::TreeResult{true, {}};
        out["entries"] = json::array();
        std::uint64_t ino = 100;
        for (const auto& p : request.paths) {
            // The entry as the wire carries it.
            const bool a = p.ends_with("/a.bin"), b = p.ends_with("/b.bin");
            if (present && (a || b))
                out["entries"].push_back(
                    {{"path", p}, {"type", "file"}, {"size", a ? 10 : 20}, {"dev", 1}, {"ino", ino++}, {"nlink", 1}, {"mtime_ns", 5}, {"mode", 0644}});
            else
                out["entries"].push_back({{"path", p}, {"type", "absent"}});
        }
        return out;
    }
};

// Calls of the fakes, by what they read.
struct Reads {
    std::size_t lists = 0, one_torrent = 0, files = 0, exports = 0, syncthing = 0;
};

Reads reads_of(const test::FakeNode& n) {
    return {n.qb.count("all_torrents"), n.qb.count("torrents"), n.qb.count("files"), n.qb.count("export_torrent"), n.st.calls.size()};
}

}  // namespace

TEST_CASE("batch plan: each node's torrent list is read once and each route looked up once, whatever the number of resources") {
    std::vector<Reads> source, target;
    for (std::size_t count : {3u, 12u}) {
        CAPTURE(count);
        ManyTorrents f(count);
        runs::Planned planned = f.plan();
        REQUIRE(planned.items.size() == count);
        for (const auto& it : planned.items) {
            CAPTURE(it.reason);
            CHECK(it.action == runs::Action::new_job);
            CHECK(it.bytes == 30);
        }
        source.push_back(reads_of(f.seedbox));
        target.push_back(reads_of(f.nas));
        CHECK(source.back().lists == 1);
        CHECK(target.back().lists == 1);
        CHECK(source.back().one_torrent == 0);
        CHECK(target.back().one_torrent == 0);
        // Per resource: its file list and metainfo on the source; nas holds none of them.
        CHECK(source.back().files == count);
        CHECK(source.back().exports == count);
        CHECK(target.back().files == 0);
    }
    // Syncthing is asked about the route once: the same for 3 resources as for 12.
    CHECK(source[0].syncthing == source[1].syncthing);
    CHECK(target[0].syncthing == target[1].syncthing);
}

TEST_CASE("batch plan: one resource planned on its own reads each list once and its own placement") {
    ManyTorrents f(4);
    jobs::transfer::TransferPlanner transfers(f.config, f.state, f.nodes, f.io);
    jobs::transfer::TransferRequest r;
    r.res = f.seedbox.qb.torrent_list[2].info.id.substr(0, 10);
    r.route_mode = jobs::transfer::TransferRequest::RouteMode::look_up;
    auto p = transfers.prepare(r);
    REQUIRE_MESSAGE(p.ok(), p.error().message);
    CHECK(p->resource.name == "show-002");
    CHECK(p->plan.delta_bytes == 30);
    CHECK(f.seedbox.qb.count("all_torrents") == 1);
    CHECK(f.nas.qb.count("all_torrents") == 1);
    CHECK(f.seedbox.qb.count("files") == 1);
    CHECK(f.seedbox.qb.count("export_torrent") == 1);
}

TEST_CASE("batch plan: a re-plan reads the lists afresh") {
    ManyTorrents f(2);
    runs::Planned planned = f.plan();
    REQUIRE(planned.items.size() == 2);
    CHECK(f.seedbox.qb.count("all_torrents") == 1);
    jobs::transfer::TransferPlanner transfers(f.config, f.state, f.nodes, f.io);
    jobs::evict::Evictor evictor(f.config, f.state, f.nodes, f.io);
    runs::LivePlanner planner(transfers, evictor, f.spec);
    jobs::transfer::PlanSnapshot fresh(f.nodes);
    runs::prepare_item(planner, f.clock, planned.source, runs::PlanMode::read_only, fresh, planned.items[1]);
    CHECK(planned.items[1].action == runs::Action::new_job);
    CHECK(f.seedbox.qb.count("all_torrents") == 2);
    CHECK(f.nas.qb.count("all_torrents") == 2);
}

TEST_CASE("batch plan: a resource the target holds whole is nothing to do, from the target's file list alone") {
    ManyTorrents f(4);
    f.hold_on_nas(1);
    f.hold_on_nas(2, 1);  // one file not selected there: the other is still to copy
    runs::Planned planned = f.plan();
    REQUIRE(planned.items.size() == 4);
    CHECK(planned.items[0].action == runs::Action::new_job);
    CHECK(planned.items[1].action == runs::Action::nothing_to_do);
    CHECK(planned.items[1].reason == "'nas' already holds it");
    CHECK(planned.items[2].action == runs::Action::new_job);
    CHECK(planned.items[2].bytes == 20);
    CHECK(planned.items[3].action == runs::Action::new_job);
    CHECK(f.seedbox.qb.count("all_torrents") == 1);
    CHECK(f.nas.qb.count("all_torrents") == 1);
    // The held one: nas's file list only; the others: the source's files and metainfo, and
    // nas's file list for the one it holds in part.
    CHECK(f.seedbox.qb.count("files") == 3);
    CHECK(f.seedbox.qb.count("export_torrent") == 3);
    CHECK(f.nas.qb.count("files") == 2);
}

// With two archive nodes and no --to, every line of the batch is refused: the refusal names
// --to NODE and the archive nodes there are to choose from.
TEST_CASE("batch plan: without --to and with several archive nodes, each refusal names --to and the nodes") {
    ManyTorrents f(2);
    test::FakeNode nas2{"nas2"};
    f.config.nodes["nas2"] = f.config.nodes["nas"];
    f.config.nodes["nas2"].name = "nas2";
    f.nodes.add(std::make_unique<session::NodeSession>(f.config.nodes["nas2"], clients::Tuning{},
                                                       session::NodeSession::Injected{&nas2.qb, &nas2.st, &nas2.ops}));
    f.spec.to.clear();
    runs::Planned planned = f.plan();
    REQUIRE(planned.items.size() == 2);
    for (const auto& it : planned.items) {
        CHECK(it.action == runs::Action::refused);
        CHECK_MESSAGE(it.reason.find("several archive nodes are configured (nas, nas2): name the target with --to NODE") == 0, it.reason);
    }
}
