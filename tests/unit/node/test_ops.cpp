// The typed node operations (lib/node/wire/ops.hpp): every struct writes the keys the handlers read
// and answer with, reads them back unchanged, and the facade reaches the handlers through a
// transport.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "lib/node/client/ops.hpp"
#include "tests/support/fakes.hpp"
#include "tests/unit/node/node_fixture.hpp"

using namespace archctl;
using namespace archctl::node;
using namespace archctl::node::test;
using nlohmann::json;

namespace {

// `v` as JSON equals `wire`, and `wire` read back writes the same JSON again.
template <class T>
void round_trip(const T& v, const json& wire) {
    json written = v;
    CHECK(written == wire);
    CHECK(json(wire.get<T>()) == wire);
}

InfoResult sample_info(std::vector<std::pair<std::string, std::optional<std::uint64_t>>> roots) {
    InfoResult info;
    for (auto& [path, free] : roots) {
        DirectoryInfo d;
        d.root.path = path;
        d.free_bytes = free;
        info.roots.push_back(d);
    }
    return info;
}

}  // namespace

TEST_CASE("request structs write the keys the handlers read") {
    std::vector<FileEntry> files = {{3, "dir/a.bin", 10}, {7, "b.bin", 0}};
    json files_wire = json::array({{{"index", 3}, {"path", "dir/a.bin"}, {"size", 10}}, {{"index", 7}, {"path", "b.bin"}, {"size", 0}}});

    round_trip(InfoRequest{}, json::object());
    round_trip(InfoRequest{{"/srv/a/x"}}, json{{"probe_dirs", {"/srv/a/x"}}});
    round_trip(TreeRequest{"/srv/a", {"x", "y/z"}}, json{{"base", "/srv/a"}, {"paths", {"x", "y/z"}}});

    StageRequest stage{.job_dir = "/sync/r/job", .source_base = "/qb/save", .files = files, .method = MethodChoice::automatic, .verify_transit = true,
                       .budget_bytes = std::nullopt,
                       .aux = {StageAux::with_bytes("resource.torrent", "d1:xi1ee"), StageAux::already_present("partfile")},
                       .min_free = 0};
    json stage_wire = {{"job_dir", "/sync/r/job"},
                       {"source_base", "/qb/save"},
                       {"files", files_wire},
                       {"verify_transit", true},
                       {"aux", {{{"name", "resource.torrent"}, {"data_b64", "ZDE6eGkxZWU="}}, {{"name", "partfile"}, {"present", true}}}}};
    CHECK(json(stage) == stage_wire);
    StageRequest parsed = stage_wire.get<StageRequest>();
    CHECK(parsed.method == MethodChoice::automatic);  // absent: the handler's default
    CHECK_FALSE(parsed.budget_bytes);
    stage.method = MethodChoice::copy;
    stage.budget_bytes = 4096;
    stage_wire["method"] = "copy";
    stage_wire["budget_bytes"] = 4096;
    round_trip(stage, stage_wire);
    stage_wire["method"] = "teleport";  // a method this build does not know makes the request invalid
    CHECK_THROWS_AS(stage_wire.get<StageRequest>(), json::exception);
    stage_wire["method"] = "copy";
    CHECK(parse_method_choice("auto") == MethodChoice::automatic);
    CHECK_FALSE(parse_method_choice("teleport"));
    stage.min_free = 30u << 20;  // the floor travels only when set
    stage_wire["min_free"] = 30u << 20;
    round_trip(stage, stage_wire);

    round_trip(ReceiveCheckRequest{"/sync/r/job", files, std::vector<std::string>{"p/3", "READY"}, false},
               json{{"job_dir", "/sync/r/job"}, {"files", files_wire}, {"indexed", {"p/3", "READY"}}, {"verify_transit", false}});
    round_trip(ReceiveCheckRequest{"/sync/r/job", files, std::nullopt, true},
               json{{"job_dir", "/sync/r/job"}, {"files", files_wire}, {"verify_transit", true}});
    // The receive check needs index and size only.
    auto lean = json{{"job_dir", "/j"}, {"files", {{{"index", 1}, {"size", 5}}}}}.get<ReceiveCheckRequest>();
    REQUIRE(lean.files.size() == 1);
    CHECK(lean.files[0].size == 5);
    CHECK_FALSE(lean.indexed);
    CHECK(json{{"job_dir", "/j"}, {"files", json::array()}, {"indexed", nullptr}}.get<ReceiveCheckRequest>().indexed == std::nullopt);

    round_trip(MergeRequest{"/sync/r/job", "/qb/save", files, std::nullopt, 0},
               json{{"job_dir", "/sync/r/job"}, {"save_path", "/qb/save"}, {"files", files_wire}});
    round_trip(MergeRequest{"/sync/r/job", "/qb/save", {}, "/qb/.archctl/m.jsonl", 4096},
               json{{"job_dir", "/sync/r/job"}, {"save_path", "/qb/save"}, {"files", json::array()}, {"record_path", "/qb/.archctl/m.jsonl"},
                    {"min_free", 4096}});
    round_trip(MergeRecordRequest{"/qb/save", "/sync/r/job", std::nullopt},
               json{{"save_path", "/qb/save"}, {"job_dir", "/sync/r/job"}});
    round_trip(UnmergeRequest{"/qb/save", "/sync/r/job", std::nullopt, {"/qb/save/x"}, json::array()},
               json{{"save_path", "/qb/save"}, {"job_dir", "/sync/r/job"}, {"referenced", {"/qb/save/x"}}, {"provenance", json::array()}});
    round_trip(ChmodReadableRequest{"/qb/save", {"a", "b/c"}}, json{{"base", "/qb/save"}, {"paths", {"a", "b/c"}}});
    round_trip(CleanupRequest{"/sync/r/job", {}, std::nullopt, std::nullopt, {}, {}}, json{{"job_dir", "/sync/r/job"}, {"referenced", json::array()}});
    round_trip(CleanupRequest{"/sync/r/job", {"/sync/r/job/p/1"}, "/qb/save", std::nullopt, {}, {}},
               json{{"job_dir", "/sync/r/job"}, {"referenced", {"/sync/r/job/p/1"}}, {"save_path", "/qb/save"}});
    round_trip(CleanupRequest{"/sync/r/job", {}, std::nullopt, "/cache/qb/done", {1, 4}, {"resource.torrent"}},
               json{{"job_dir", "/sync/r/job"}, {"referenced", json::array()}, {"source_base", "/cache/qb/done"}, {"files", {1, 4}},
                    {"aux", {"resource.torrent"}}});
    // A path without a record is a plain string; with one, an object.
    round_trip(UnlinkOwnedRequest{{{"/qb/x/a", std::nullopt, std::nullopt}, {"/qb/x/b", 12, 99}}, {}, "/qb/x"},
               json{{"paths", json::array({"/qb/x/a", {{"path", "/qb/x/b"}, {"size", 12}, {"ino", 99}}})}, {"stop_at", "/qb/x"}});
    round_trip(UnlinkOwnedRequest{{{"/qb/x/a", std::nullopt, std::nullopt}}, {"/qb/x/a"}, "/qb/x"},
               json{{"paths", {"/qb/x/a"}}, {"referenced", {"/qb/x/a"}}, {"stop_at", "/qb/x"}});
    round_trip(NonceWriteRequest{"/sync/f/.n", "hello", false}, json{{"path", "/sync/f/.n"}, {"content", "hello"}});
    round_trip(NonceWriteRequest{"/sync/f/.n", "hello", true},
               json{{"path", "/sync/f/.n"}, {"content", "hello"}, {"create_parents", true}});
    round_trip(NonceObserveRequest{"/sync/f/.n"}, json{{"path", "/sync/f/.n"}});
    round_trip(PartfileReadRequest{"/qb/save/.abc.parts", qb_partfile_check(8, 16384)},
               json{{"path", "/qb/save/.abc.parts"}, {"expect_pieces", 8}, {"expect_piece_size", 16384}, {"allow_short_last_slot", true}});
    round_trip(PartfileCopyRequest{"/a", "/b", true, false, qb_partfile_check()},
               json{{"from", "/a"}, {"to", "/b"}, {"create_parents", true}, {"replace", false}, {"allow_short_last_slot", true}});
    round_trip(PartfileCopyRequest{"/a", "/b", false, true, PartfileCheck{}},
               json{{"from", "/a"}, {"to", "/b"}, {"create_parents", false}, {"replace", true}});
    round_trip(PartfileCopyRequest{"/a", "/b", false, true, PartfileCheck{}, 4096},
               json{{"from", "/a"}, {"to", "/b"}, {"create_parents", false}, {"replace", true}, {"min_free", 4096}});
    {
        PartfileBuildRequest b;
        b.to = "/sync/r/job/a/partfile";
        b.create_parents = true;
        b.piece_count = 3;
        b.piece_size = 16384;
        b.source_partfile = "/qb/save/.abc.parts";
        b.min_free = 4096;
        PartfileBuildPiece piece;
        piece.piece = 1;
        piece.length = 16384;
        piece.sha1 = std::string(40, 'a');
        PartfileBuildRange disk;
        disk.length = 100;
        disk.path = "/qb/save/T/a.bin";
        disk.offset = 7;
        PartfileBuildRange kept;
        kept.at = 100;
        kept.length = 16284;
        kept.from_partfile = true;
        kept.keep = true;
        piece.ranges = {disk, kept};
        b.pieces = {piece};
        round_trip(b, json{{"to", "/sync/r/job/a/partfile"},
                           {"create_parents", true},
                           {"piece_count", 3},
                           {"piece_size", 16384},
                           {"source_partfile", "/qb/save/.abc.parts"},
                           {"min_free", 4096},
                           {"pieces",
                            {{{"piece", 1},
                              {"length", 16384},
                              {"sha1", std::string(40, 'a')},
                              {"ranges",
                               {{{"at", 0}, {"length", 100}, {"path", "/qb/save/T/a.bin"}, {"offset", 7}},
                                {{"at", 100}, {"length", 16284}, {"from_partfile", true}, {"keep", true}}}}}}}});
        b.dry_run = true;
        b.source_partfile.reset();
        b.min_free = 0;
        b.pieces.clear();
        round_trip(b, json{{"to", "/sync/r/job/a/partfile"}, {"create_parents", true}, {"piece_count", 3}, {"piece_size", 16384},
                           {"pieces", json::array()}, {"dry_run", true}});
    }
    round_trip(VerifyPiecesRequest{"/qb/save", "ZDE6eGkxZWU=", std::nullopt, "0-3"},
               json{{"save_path", "/qb/save"}, {"torrent_b64", "ZDE6eGkxZWU="}, {"files", "0-3"}});
    round_trip(VerifyPiecesRequest{"/qb/save", std::nullopt, "/qb/x.torrent", std::nullopt},
               json{{"save_path", "/qb/save"}, {"torrent_path", "/qb/x.torrent"}});
    round_trip(VerifyPiecesRequest{"/qb/save", std::nullopt, "/qb/x.torrent", std::nullopt, {{2, "a.bin"}}},
               json{{"save_path", "/qb/save"}, {"torrent_path", "/qb/x.torrent"}, {"paths", {{2, "a.bin"}}}});
}

TEST_CASE("a request without a required key is refused when read") {
    const json no_base = {{"paths", json::array()}};
    CHECK_THROWS_AS((void)no_base.get<TreeRequest>(), json::exception);
    const json no_path = {{"job_dir", "/j"}, {"source_base", "/b"}, {"files", {{{"index", 1}, {"size", 2}}}}};
    CHECK_THROWS_AS((void)no_path.get<StageRequest>(), json::exception);  // stage needs each file's path
    const json no_torrent = {{"save_path", "/s"}};
    CHECK_THROWS_AS((void)no_torrent.get<VerifyPiecesRequest>(), json::exception);
    const json no_stop = {{"paths", json::array()}};
    CHECK_THROWS_AS((void)no_stop.get<UnlinkOwnedRequest>(), json::exception);
}

TEST_CASE("result structs write the keys the handlers answered with") {
    InfoResult info;
    info.archctl = "0.1.0";
    info.pid = 42;
    DirectoryInfo root;
    root.root.path = "/srv/a";
    root.root.fs_type = "ext4";
    root.root.fs_id = "ab12";
    root.root.capabilities.hardlink = true;
    root.free_bytes = 100;
    root.total_bytes = 1000;
    root.dev = 2049;
    info.roots = {root};
    DirectoryInfo probe = root;
    probe.free_bytes.reset();
    probe.total_bytes.reset();
    probe.dev.reset();
    info.probes = {probe};
    json caps = {{"hardlink", true}, {"reflink", false}, {"copy_file_range", false}, {"sparse", false}};
    round_trip(info, json{{"archctl", "0.1.0"},
                          {"protocol", k_protocol_version},
                          {"pid", 42},
                          {"roots", {{{"path", "/srv/a"}, {"fs_type", "ext4"}, {"fs_id", "ab12"}, {"capabilities", caps},
                                      {"free_bytes", 100}, {"total_bytes", 1000}, {"dev", 2049}}}},
                          {"probes", {{{"path", "/srv/a"}, {"fs_type", "ext4"}, {"fs_id", "ab12"}, {"capabilities", caps}}}}});

    TreeResult tree;
    tree.base_exists = true;
    tree.entries.push_back(TreeEntry{"a", EntryType::file, EntryStat{5, 1, 77, 2, 123456789, 0644}, std::nullopt});
    tree.entries.push_back(TreeEntry{"b", EntryType::absent, std::nullopt, std::nullopt});
    tree.entries.push_back(TreeEntry{"../c", EntryType::refused, std::nullopt, Error(ErrorCode::PATH_OUTSIDE_ROOT, "no")});
    round_trip(tree, json{{"base_exists", true},
                          {"entries",
                           {{{"path", "a"}, {"type", "file"}, {"size", 5}, {"dev", 1}, {"ino", 77}, {"nlink", 2}, {"mtime_ns", 123456789},
                             {"mode", 0644}},
                            {{"path", "b"}, {"type", "absent"}},
                            {{"path", "../c"}, {"type", "refused"}, {"error", {{"code", "PATH_OUTSIDE_ROOT"}, {"message", "no"}}}}}}});
    // Every entry type reads back as itself under its wire name; a type no node sends does not read
    // (the facade's PROTOCOL), and an entry without a type is one the node refused.
    for (EntryType type : {EntryType::file, EntryType::dir, EntryType::symlink, EntryType::fifo, EntryType::socket,
                           EntryType::char_device, EntryType::block, EntryType::other, EntryType::absent, EntryType::refused}) {
        CHECK(parse_entry_type(to_string(type)) == type);
        CHECK(json(TreeEntry{"x", type, std::nullopt, std::nullopt}).get<TreeEntry>().type == type);
    }
    CHECK(to_string(EntryType::char_device) == "char");
    CHECK_FALSE(parse_entry_type("hole").has_value());
    CHECK_THROWS_AS(json({{"path", "x"}, {"type", "hole"}}).get<TreeEntry>(), json::exception);
    CHECK(json({{"path", "x"}}).get<TreeEntry>().type == EntryType::refused);

    json counters = {{"files_linked", 1}, {"files_reflinked", 2}, {"files_copied", 3}, {"files_reused", 4}, {"bytes_linked", 5},
                     {"bytes_reflinked", 6}, {"bytes_copied", 7}, {"bytes_hashed", 8}, {"files_done", 9}, {"bytes_done", 10}};
    StageResult stage;
    stage.counters = counters.get<StageCounters>();
    CHECK(stage.counters.bytes_copied == 7);
    stage.stopped = Stop::budget;
    json stopped = counters;
    stopped.update({{"complete", false}, {"stopped", "budget"}});
    round_trip(stage, stopped);
    stage = StageResult{true, Stop::none, false, "ff00", stage.counters, 0, 0};
    json done = counters;
    done.update({{"complete", true}, {"stopped", ""}, {"already_ready", false}, {"manifest_xxh3", "ff00"}});
    round_trip(stage, done);
    CHECK_THROWS_AS(json({{"complete", false}, {"stopped", "nap"}}).get<StageResult>(), json::exception);

    ReceiveCheckResult check;
    check.complete = false;
    check.job_exists = true;
    check.manifest = true;
    check.index_evidence = true;
    check.files = {ReceivedFile{"manifest.json", Arrival::present, 10, std::nullopt, std::nullopt, ""},
                   ReceivedFile{"p/3", Arrival::in_transit, 4, 3, 10, "syncthing temp file"}};
    check.ignored = {"p/.syncthing.3.tmp"};
    check.bytes_present = 4;
    check.bytes_total = 10;
    check.files_present = 0;
    check.files_total = 1;
    round_trip(check, json{{"complete", false},
                           {"stopped", ""},
                           {"job_exists", true},
                           {"manifest", true},
                           {"index_evidence", true},
                           {"files",
                            {{{"name", "manifest.json"}, {"state", "present"}, {"have_bytes", 10}},
                             {{"name", "p/3"}, {"state", "in_transit"}, {"have_bytes", 4}, {"index", 3}, {"size", 10}, {"detail", "syncthing temp file"}}}},
                           {"ignored", {"p/.syncthing.3.tmp"}},
                           {"bytes_present", 4},
                           {"bytes_total", 10},
                           {"files_present", 0},
                           {"files_total", 1},
                           {"bytes_hashed", 0}});
    ReceiveCheckResult cancelled;
    cancelled.stopped = Stop::cancel;
    round_trip(cancelled, json{{"complete", false}, {"stopped", "cancel"}});
    // A stop reason this build does not know makes the result invalid (the facade's PROTOCOL).
    CHECK_THROWS_AS(json({{"complete", false}, {"stopped", "nap"}}).get<ReceiveCheckResult>(), json::exception);
    // So does an arrival state it does not know; an absent one is "absent".
    CHECK_THROWS_AS(json({{"files", {{{"name", "p/0"}, {"state", "arrived"}}}}}).get<ReceiveCheckResult>(), json::exception);
    CHECK(json({{"name", "p/0"}}).get<ReceivedFile>().state == Arrival::absent);

    MergeResult merge{true, Stop::none, {MergedFile{3, "d/a", "created", "rename", 77}, MergedFile{4, "b", "preexisting", "none", 5}},
                      {"/qb/save/d"}, "/qb/.archctl/merge-j.jsonl", 0, 10, 0, 0, ""};
    round_trip(merge, json{{"complete", true},
                           {"stopped", ""},
                           {"provenance",
                            {{{"index", 3}, {"path", "d/a"}, {"provenance", "created"}, {"how", "rename"}, {"ino", 77}},
                             {{"index", 4}, {"path", "b"}, {"provenance", "preexisting"}, {"how", "none"}, {"ino", 5}}}},
                           {"dirs_created", {"/qb/save/d"}},
                           {"record_path", "/qb/.archctl/merge-j.jsonl"},
                           {"bytes_copied", 0},
                           {"bytes_renamed", 10}});
    round_trip(MergeResult{false, Stop::cancel, {}, {}, "/r.jsonl", 0, 0, 0, 0, ""},
               json{{"complete", false}, {"stopped", "cancel"}, {"record_path", "/r.jsonl"}, {"bytes_copied", 0}});
    round_trip(MergeResult{false, Stop::disk, {}, {}, "/r.jsonl", 1048576, 0, 5000, 9000, "/qb/save/d/a"},
               json{{"complete", false}, {"stopped", "disk"}, {"record_path", "/r.jsonl"}, {"bytes_copied", 1048576},
                    {"free_bytes", 5000}, {"need_bytes", 9000}, {"stopped_at", "/qb/save/d/a"}});
    round_trip(MergeRecordResult{MergeRecord::present, "/qb/.archctl/merge-j.jsonl", {3, 4}, {3}},
               json{{"record", "present"}, {"record_path", "/qb/.archctl/merge-j.jsonl"}, {"files", {3, 4}}, {"placed", {3}}});
    CHECK_THROWS_AS(json({{"complete", false}, {"stopped", "full"}}).get<MergeResult>(), json::exception);
    CHECK_THROWS_AS(json({{"record", "lost"}}).get<MergeRecordResult>(), json::exception);
    CHECK_THROWS_AS(json({{"record", "lost"}}).get<UnmergeResult>(), json::exception);
    CHECK_THROWS_AS(json({{"path", "/a"}, {"code", "mine"}}).get<KeptEntry>(), json::exception);
    CHECK(json({{"path", "/a"}, {"reason", "x"}}).get<KeptEntry>().code == KeptCode::none);

    round_trip(UnmergeResult{UnmergeRecord::removed, {"/qb/save/a"}, {KeptEntry{"/qb/save/d", "directory is not empty", KeptCode::not_empty}}, {"/qb/save/b"}},
               json{{"record", "removed"},
                    {"removed", {"/qb/save/a"}},
                    {"kept", {{{"path", "/qb/save/d"}, {"reason", "directory is not empty"}, {"code", "not_empty"}}}},
                    {"preexisting", {"/qb/save/b"}}});
    round_trip(UnmergeResult{UnmergeRecord::absent, {}, {}, {}},
               json{{"record", "absent"}, {"removed", json::array()}, {"kept", json::array()}, {"preexisting", json::array()}});
    round_trip(ChmodReadableResult{2, 1, {"gone"}}, json{{"files_changed", 2}, {"dirs_changed", 1}, {"missing", {"gone"}}});
    // Unknown content is kept without a code.
    round_trip(CleanupResult{JobDirEnd::kept, {"/j/READY"}, {KeptEntry{"/j/other", "not a file of this job", KeptCode::none}}, {}, {}},
               json{{"job_dir", "kept"}, {"removed", {"/j/READY"}}, {"kept", {{{"path", "/j/other"}, {"reason", "not a file of this job"}}}}});
    // Source metadata the cleanup put back, with modes as octal text.
    round_trip(CleanupResult{JobDirEnd::removed, {}, {}, {RestoredStamp{3, "d/f", 978307200000000000, 1700000000123456789, 0644, 0644}}, {"d/g"}},
               json{{"job_dir", "removed"}, {"removed", json::array()}, {"kept", json::array()},
                    {"restored", {{{"index", 3}, {"path", "d/f"}, {"mtime_found", 978307200000000000}, {"mtime_restored", 1700000000123456789},
                                   {"mode_found", "0644"}, {"mode_restored", "0644"}}}},
                    {"replaced", {"d/g"}}});
    CHECK_THROWS_AS(json({{"job_dir", "gone"}}).get<CleanupResult>(), json::exception);
    round_trip(UnlinkOwnedResult{{"/qb/x/a"}, {KeptEntry{"/qb/x/b", "referenced by another torrent", KeptCode::referenced}}},
               json{{"removed", {"/qb/x/a"}},
                    {"kept", {{{"path", "/qb/x/b"}, {"reason", "referenced by another torrent"}, {"code", "referenced"}}}}});
    round_trip(NonceWriteResult{"/n", 5}, json{{"path", "/n"}, {"size", 5}});
    round_trip(NonceObserveResult{"/n", true, "hi"}, json{{"path", "/n"}, {"present", true}, {"content", "hi"}});
    round_trip(NonceObserveResult{"/n", false, ""}, json{{"path", "/n"}, {"present", false}});

    PartfileReadResult header{4, 16384, 1024, 1, {PartfileSlot{2, 0}}, 1024 + 100, {2}};
    json header_wire = {{"piece_count", 4}, {"piece_size", 16384}, {"header_size", 1024}, {"used_slots", 1},
                        {"slots", {{{"piece", 2}, {"slot", 0}}}}, {"file_size", 1124}, {"short_slots", {2}}};
    round_trip(header, header_wire);
    json copied = header_wire;
    copied.update({{"to", "/b"}, {"xxh3", "ab"}, {"already", false}, {"bytes", 1124}});
    round_trip(PartfileCopyResult{header, "/b", "ab", false, 1124}, copied);
    json already = header_wire;
    already.update({{"to", "/b"}, {"xxh3", "ab"}, {"already", true}});
    round_trip(PartfileCopyResult{header, "/b", "ab", true, std::nullopt}, already);

    round_trip(VerifyPiecesResult{json{{"pieces_failed", 0}}, "/qb/save"}, json{{"pieces_failed", 0}, {"save_path", "/qb/save"}});
}

TEST_CASE("free_bytes_at: the longest root that contains the path, component by component") {
    InfoResult info = sample_info({{"/srv", 100}, {"/srv/a", 200}, {"/srv/ab", 300}, {"/", 50}});
    CHECK(free_bytes_at(info, "/srv/a") == 200);
    CHECK(free_bytes_at(info, "/srv/a/") == 200);
    CHECK(free_bytes_at(info, "/srv/a/x/y") == 200);
    CHECK(free_bytes_at(info, "/srv/ab/x") == 300);
    CHECK(free_bytes_at(info, "/srv/abc") == 100);  // "/srv/ab" does not contain "/srv/abc"
    CHECK(free_bytes_at(info, "/srv") == 100);
    CHECK(free_bytes_at(info, "/srvx") == 50);
    CHECK(free_bytes_at(info, "/home/u") == 50);

    // The order of the roots does not matter.
    InfoResult reversed = sample_info({{"/srv/a", 200}, {"/srv", 100}});
    CHECK(free_bytes_at(reversed, "/srv/a/x") == 200);
    InfoResult forward = sample_info({{"/srv", 100}, {"/srv/a", 200}});
    CHECK(free_bytes_at(forward, "/srv/a/x") == 200);

    // No root holds the path, or the node could not measure the one that does.
    InfoResult narrow = sample_info({{"/srv/a", 200}});
    CHECK_FALSE(free_bytes_at(narrow, "/srv/b"));
    CHECK_FALSE(free_bytes_at(narrow, "/srv"));
    InfoResult unmeasured = sample_info({{"/srv", 100}, {"/srv/a", std::nullopt}});
    CHECK_FALSE(free_bytes_at(unmeasured, "/srv/a/x"));
    CHECK_FALSE(free_bytes_at(InfoResult{}, "/srv"));
}

TEST_CASE("the facade reaches the handlers and reads their answers") {
    NodeFixture f(Kind::local);
    Ops ops(f.transport());
    auto info = ops.info();
    REQUIRE(info.ok());
    CHECK(info->protocol == k_protocol_version);
    REQUIRE(info->roots.size() == 2);
    CHECK(info->roots[0].root.path == f.qb());
    CHECK(info->roots[0].free_bytes.has_value());
    CHECK(free_bytes_at(info.value(), f.sync() + "/route/job") == info->roots[1].free_bytes);

    f.write("qb/save/a.bin", "hello");
    auto tree = ops.tree({.base = f.qb() + "/save", .paths = {"a.bin", "missing", "../x"}});
    REQUIRE(tree.ok());
    CHECK(tree->base_exists);
    REQUIRE(tree->entries.size() == 3);
    CHECK(tree->entries[0].type == EntryType::file);
    REQUIRE(tree->entries[0].stat);
    CHECK(tree->entries[0].stat->size == 5);
    CHECK(tree->entries[1].type == EntryType::absent);
    CHECK(tree->entries[2].type == EntryType::refused);
    CHECK(tree->entries[2].error.has_value());

    std::string nonce = f.sync() + "/folder/.archctl-nonce-x";
    REQUIRE(ops.nonce_write({.path = nonce, .content = "value", .create_parents = true}).ok());
    auto seen = ops.nonce_observe({.path = nonce});
    REQUIRE(seen.ok());
    CHECK(seen->present);
    CHECK(seen->content == "value");

    auto refused = ops.tree({.base = f.outside(), .paths = {"x"}});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == "PATH_OUTSIDE_ROOT");
}

TEST_CASE("a far end's result of the wrong shape is PROTOCOL, never undefined behaviour or an exception") {
    archctl::fakes::FakeTransport far("hostile");
    Ops ops(far);
    auto answer = [&far](const char* op, json result) {
        far.handlers[op] = [result](const json&) -> Result<json> { return result; };
    };
    auto protocol = [](const auto& r, const char* says) {
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == "PROTOCOL");
        CHECK_MESSAGE(r.error().message.find(says) != std::string::npos, r.error().message);
    };
    // A size beyond any integer, as a float: converting it is undefined behaviour.
    answer("space", {{"free_bytes", 2.2e32}, {"total_bytes", 10}});
    protocol(ops.space({.path = "/x"}), "a number that is not an integer");
    answer("tree", {{"base_exists", true}, {"entries", {{{"type", "file"}, {"stat", {{"size", 7.9e46}}}}}}});
    protocol(ops.tree({.base = "/x", .paths = {"a"}}), "a number that is not an integer");
    // A piece check's report is read field by field by evict: its shape is checked on arrival.
    VerifyPiecesRequest verify;
    verify.save_path = "/x";
    verify.files = "0";
    answer("verify_pieces", {{"verified", "yes"}});
    protocol(ops.verify_pieces(verify), "'verified' is not a boolean");
    answer("verify_pieces", {{"verified", false}, {"files", {{{"index", -1}, {"verdict", "short"}}}}});
    protocol(ops.verify_pieces(verify), "'index' is not a file index");
    answer("verify_pieces", {{"verified", false}, {"files", {{{"index", 0}, {"size", 1e300}}}}});
    protocol(ops.verify_pieces(verify), "a number that is not an integer");
    answer("verify_pieces", {{"verified", false}, {"files", "all"}});
    protocol(ops.verify_pieces(verify), "'files' is not a list");
    // What the verifier writes, a duration with a fraction included, is read.
    answer("verify_pieces", {{"verified", true}, {"summary", {{"files", 1}, {"seconds", 0.25}}},
                             {"files", {{{"index", 0}, {"path", "a"}, {"size", 3}, {"actual_size", nullptr}, {"verdict", "complete"}}}}});
    auto read = ops.verify_pieces(verify);
    REQUIRE_MESSAGE(read.ok(), read.error().message);
    CHECK(read->report["summary"]["seconds"] == 0.25);
}
