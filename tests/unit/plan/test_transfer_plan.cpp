#include <doctest/doctest.h>

#include "lib/plan/transfer_plan.hpp"
#include "lib/torrent/creator.hpp"
#include "tests/support/scratch.hpp"

using namespace archctl;
using namespace archctl::plan;
using torrent::Selection;

namespace {

// A v1 torrent with three files straddling pieces (as docs/torrent-format.md "The three-file v1
// torrent") or a hybrid of the same.
torrent::Metainfo make(const test::Scratch& s, torrent::Kind kind) {
    s.write("pay1/a.bin", std::string(100001, 'a'));
    s.write("pay1/b.bin", std::string(50001, 'b'));
    s.write("pay1/c.bin", std::string(70001, 'c'));
    torrent::CreateOptions o;
    o.kind = kind;
    o.piece_length = 16384;
    o.creation_date = 0;
    auto bytes = torrent::create_torrent(s / "pay1", o);
    REQUIRE(bytes.ok());
    auto meta = torrent::parse_metainfo(*bytes, "test");
    REQUIRE(meta.ok());
    return std::move(meta).value();
}

PlacementView source_view(const Selection& complete) {
    PlacementView v;
    v.node = "seedbox";
    v.qb_id = "x";
    v.save_path = "/srv/cache/torrents/linux";
    v.selected = complete;
    v.complete = complete;
    return v;
}

PlanInput input(const torrent::Metainfo& meta, const Selection& complete) {
    PlanInput in;
    in.meta = &meta;
    in.source = source_view(complete);
    in.source_qb_root = "/srv/cache/torrents";
    in.target_qb_root = "/tank/torrents/";
    in.caps.target_free = 1ull << 40;
    in.caps.min_free = 2ull << 30;
    return in;
}

}  // namespace

TEST_CASE("new target: everything selected-complete is requested; save path is re-rooted") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto p = compute(input(meta, Selection::all(3)));
    REQUIRE(p.ok());
    CHECK(p->target_save_path == "/tank/torrents/linux");
    CHECK(p->requested.to_string() == "0-2");
    CHECK(p->delta.to_string() == "0-2");
    CHECK(p->union_set.to_string() == "0-2");
    CHECK(p->delta_bytes == 220003);
    CHECK(p->copy_bytes == 0);
    CHECK(p->disk_ok);
    CHECK_FALSE(p->extends_existing);
    CHECK(p->partfile == PartfileNeed::none);
    CHECK(p->digest.size() == 64);
}

TEST_CASE("existing target: delta is requested minus verified baseline") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto in = input(meta, Selection::all(3));
    PlacementView t = source_view(Selection::of({0}));
    t.node = "nas";
    t.save_path = "/tank/other/place";
    in.target = t;
    auto p = compute(in);
    REQUIRE(p.ok());
    CHECK(p->extends_existing);
    CHECK(p->target_save_path == "/tank/other/place");
    CHECK(p->baseline.to_string() == "0");
    CHECK(p->delta.to_string() == "1-2");
    CHECK(p->union_set.to_string() == "0-2");
    CHECK(p->baseline_bytes == 100001);
    // Nothing to do: empty delta.
    in.target->selected = in.target->complete = Selection::all(3);
    auto none = compute(in);
    REQUIRE(none.ok());
    CHECK(none->empty_delta());
}

TEST_CASE("a selected-incomplete target file is stale state, never downloaded") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto in = input(meta, Selection::all(3));
    PlacementView t = source_view(Selection::of({0}));
    t.selected = Selection::of({0, 1});
    in.target = t;
    auto p = compute(in);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == "TARGET_INCOMPLETE");
    CHECK(p.error().message.find(": 1") != std::string::npos);
}

TEST_CASE("--files, --file and --dir expand against the source; incomplete files refuse") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto in = input(meta, Selection::of({0, 2}));
    in.request.files = Selection::of({2});
    CHECK(compute(in)->requested.to_string() == "2");
    in.request.files.reset();
    in.request.file_paths = {"pay1/c.bin"};
    CHECK(compute(in)->requested.to_string() == "2");
    in.request.file_paths = {"pay1/nope.bin"};
    CHECK(compute(in).error().code == "NOT_IN_TORRENT");
    in.request.file_paths.clear();
    in.request.dir_paths = {"pay1/"};
    CHECK(compute(in)->requested.to_string() == "0,2");  // only selected-complete descendants
    in.request.dir_paths.clear();
    in.request.files = Selection::of({1});
    auto p = compute(in);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == "SOURCE_INCOMPLETE");
    in.request.files = Selection::of({7});
    CHECK(compute(in).error().code == "SELECTION_OUT_OF_RANGE");
}

TEST_CASE("v1 boundary pieces: a new target with a skipped middle file needs the source partfile") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::v1);
    auto p = compute(input(meta, Selection::of({0, 2})));
    REQUIRE(p.ok());
    CHECK(p->partfile == PartfileNeed::carry_source);
    // a.bin|b.bin share piece 6, b.bin|c.bin share piece 9 (docs/torrent-format.md "The three-file v1 torrent").
    CHECK(p->boundary_pieces == std::vector<std::int64_t>{6, 9});
    auto hybrid = make(s, torrent::Kind::hybrid);
    CHECK(compute(input(hybrid, Selection::of({0, 2})))->partfile == PartfileNeed::none);
}

TEST_CASE("disk verdict charges only bytes that cannot be linked, above the floor") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto in = input(meta, Selection::all(3));
    in.caps.target_free = (2ull << 30) + 100000;  // floor + less than the delta
    CHECK_FALSE(compute(in)->disk_ok);
    in.caps.min_free = 0;
    CHECK(compute(in)->disk_ok);
    in.caps.source_can_link = false;
    CHECK(compute(in)->copy_bytes == 220003);
}

TEST_CASE("a save path outside the qb root is refused naming both") {
    auto r = rebase_save_path("/elsewhere/x", "/srv/cache/torrents", "/tank");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "PATH_OUTSIDE_ROOT");
    CHECK(r.error().message.find("/elsewhere/x") != std::string::npos);
    CHECK(r.error().message.find("/srv/cache/torrents") != std::string::npos);
    CHECK(rebase_save_path("/srv/cache/torrents", "/srv/cache/torrents/", "/tank").value() == "/tank");
    CHECK_FALSE(rebase_save_path("/srv/cache/torrents2/x", "/srv/cache/torrents", "/tank").ok());
}

TEST_CASE("the digest changes with any fact the plan relies on") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::hybrid);
    auto in = input(meta, Selection::all(3));
    std::string d1 = compute(in)->digest;
    CHECK(compute(in)->digest == d1);
    in.source.complete = in.source.selected = Selection::of({0, 1});
    CHECK(compute(in)->digest != d1);
}

TEST_CASE("a file renamed in qBittorrent is refused with one wording for plan and the job's preflight") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::v1);
    auto in = input(meta, Selection::all(3));
    in.source.names = {"pay1/a.bin", "pay1/b-renamed.bin", "pay1/c.bin"};
    auto p = compute(in);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().is(ErrorCode::RENAMED_IN_QB));
    Error same = renamed_in_qb(in.source, 1, "pay1/b.bin", meta.name());
    CHECK(p.error().message == same.message);
    CHECK(p.error().hint == same.hint);
    CHECK(same.message == "file 1 of 'pay1' on seedbox is 'pay1/b-renamed.bin' in qBittorrent but 'pay1/b.bin' in the metainfo");
    in.source.names[1] = "pay1/b.bin";
    CHECK(compute(in).ok());
}

TEST_CASE("a content layout is no rename: NoSubfolder on the source, the new target added with it") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::v1);
    auto in = input(meta, Selection::all(3));
    in.source.names = {"a.bin", "b.bin", "c.bin"};
    auto p = compute(in);
    REQUIRE(p.ok());
    CHECK(p->source_layout.layout == torrent::ContentLayout::no_subfolder);
    CHECK(p->target_layout.layout == torrent::ContentLayout::no_subfolder);
    CHECK(p->source_layout.disk_path(1) == "b.bin");
    CHECK(p->target_layout.disk_path(1) == "b.bin");
    CHECK(p->to_json()["layout"]["target"] == "NoSubfolder");
    // An existing target keeps its own layout.
    PlacementView t = source_view(Selection::of({0}));
    t.node = "nas";
    t.save_path = "/tank/torrents/linux";
    t.names = {"pay1/a.bin", "pay1/b.bin", "pay1/c.bin"};
    in.target = t;
    auto extend = compute(in);
    REQUIRE(extend.ok());
    CHECK(extend->target_layout.layout == torrent::ContentLayout::original);
    CHECK(extend->target_layout.disk_path(2) == "pay1/c.bin");
    CHECK(extend->source_layout.disk_path(2) == "c.bin");
}

TEST_CASE("a renamed file blocks only the commands that touch it") {
    test::Scratch s;
    auto meta = make(s, torrent::Kind::v1);
    auto in = input(meta, Selection::all(3));
    in.source.names = {"a-renamed.bin", "b.bin", "c.bin"};  // NoSubfolder, file 0 renamed
    in.request.files = Selection::of({1, 2});
    auto others = compute(in);
    REQUIRE(others.ok());
    CHECK(others->delta.to_string() == "1-2");
    in.request.files.reset();
    auto all = compute(in);
    REQUIRE_FALSE(all.ok());
    CHECK(all.error().is(ErrorCode::RENAMED_IN_QB));
    CHECK(all.error().message ==
          "file 0 of 'pay1' on seedbox is 'a-renamed.bin' in qBittorrent but 'pay1/a.bin' in the metainfo (its content layout puts it at 'a.bin')");
    CHECK(all.error().hint.find("leave file 0 out of --files") != std::string::npos);
    // A rename on an existing target's baseline file blocks too (the recheck there reads it).
    in.source.names = {"a.bin", "b.bin", "c.bin"};
    in.request.files = Selection::of({1});
    PlacementView t = source_view(Selection::of({0}));
    t.node = "nas";
    t.save_path = "/tank/torrents/linux";
    t.names = {"pay1/zz.bin", "pay1/b.bin", "pay1/c.bin"};
    in.target = t;
    auto target_renamed = compute(in);
    REQUIRE_FALSE(target_renamed.ok());
    CHECK(target_renamed.error().message.find("on nas is 'pay1/zz.bin'") != std::string::npos);
    t.selected = t.complete = Selection();
    in.target = t;
    CHECK(compute(in).ok());  // file 0 not in the union: its name does not matter
}
