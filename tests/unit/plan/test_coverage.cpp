// Archive coverage and the one decision behind it, plan::judge_file: a table of the ways an
// archive copy stops being one (docs/evict-proof.md), each a case evict, plan evict and status share.

#include <doctest/doctest.h>

#include "lib/plan/coverage.hpp"

using namespace archctl;
using namespace archctl::plan;
using torrent::Selection;

namespace {

std::vector<CoverageFile> five_files() {
    return {{0, "pay/a.bin", 100}, {1, "pay/b.bin", 200}, {2, "pay/sub/c.bin", 300}, {3, "pay/d.bin", 400}, {4, "pay/e.bin", 0}};
}

std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& f : five_files()) out.push_back(f.path);
    return out;
}

PlacementView view(const std::string& node, const Selection& selected, const Selection& complete) {
    PlacementView v;
    v.node = node;
    v.qb_id = "abcd";
    v.save_path = "/srv/" + node + "/res";
    v.run_state = "running";
    v.selected = selected;
    v.complete = complete;
    v.names = names();
    return v;
}

FileStamp stamp_of(std::uint32_t i) {
    return {7, 1000 + i, five_files()[i].size, 1'700'000'000'000'000'000 + i, 0, 1'700'000'000'500'000'000 + i};
}

// An archive placement holding `sel`, committed by archctl with every file still as committed.
ArchiveEvidence archive(const std::string& node, const std::string& sel) {
    ArchiveEvidence a;
    a.view = view(node, *Selection::parse(sel), *Selection::parse(sel));
    a.state = "stalledUP";
    a.generation = 1;
    a.disk.resize(5);
    for (std::uint32_t i : Selection::parse(sel)->indices()) {
        a.committed[i] = stamp_of(i);
        a.disk[i] = {OnDisk::file, stamp_of(i), {}};
    }
    return a;
}

CoverageInput input() {
    CoverageInput in;
    in.cache = view("seedbox", Selection::all(5), Selection::all(5));
    in.files = five_files();
    return in;
}

const CoverageFile k_d{3, "pay/d.bin", 400};

}  // namespace

TEST_CASE("judge_file: the ways an archive copy stops being one") {
    struct Case {
        const char* what;
        void (*change)(ArchiveEvidence&);
        FileProof expect;
        const char* why;  // a part of the reason
    };
    const Case cases[] = {
        {"as committed", [](ArchiveEvidence&) {}, FileProof::proven, ""},
        {"deleted on the archive's disk", [](ArchiveEvidence& a) { a.disk[3] = {OnDisk::absent, {}, {}}; }, FileProof::unproven, "absent on disk"},
        {"replaced by a file of another size", [](ArchiveEvidence& a) { a.disk[3].stamp.size = 9; }, FileProof::unproven,
         "size 9 on disk, 400 in the metainfo"},
        {"replaced by a file of the same size", [](ArchiveEvidence& a) { a.disk[3].stamp.ino = 5; }, FileProof::piece_check,
         "replaced since archctl's recheck (inode 5, was 1003)"},
        {"rewritten in place", [](ArchiveEvidence& a) { a.disk[3].stamp.mtime_ns += 1; }, FileProof::piece_check, "modified since"},
        {"rewritten in place, its mtime put back", [](ArchiveEvidence& a) { a.disk[3].stamp.ctime_ns += 1; }, FileProof::piece_check,
         "its ctime changed since archctl's recheck"},
        {"a record without ctime (an older archctl)", [](ArchiveEvidence& a) { a.committed[3].ctime_ns = 0; }, FileProof::piece_check,
         "no ctime"},
        {"a share limit would remove the torrent",
         [](ArchiveEvidence& a) { a.will_not_stay = "a global share limit (ratio 0) would remove the torrent and its files"; },
         FileProof::unproven, "share limit"},
        {"another torrent's files", [](ArchiveEvidence& a) { a.shared_with = {"'other' (0123456789ab)"}; }, FileProof::unproven,
         "shared with torrent 'other' (0123456789ab)"},
        {"another torrent's files, counted by the config",
         [](ArchiveEvidence& a) {
             a.shared_with = {"'other' (0123456789ab)"};
             a.count_shared = true;
         },
         FileProof::proven, ""},
        {"replaced by a new file that reuses the inode number, its mtime restored",
         [](ArchiveEvidence& a) {
             a.committed[3].btime_ns = 1'700'000'000'000'000'000;
             a.disk[3].stamp.btime_ns = 1'700'000'000'000'000'001;
         },
         FileProof::piece_check, "replaced since archctl's recheck (a new file with the same inode 1003)"},
        {"a birth time known on one side only proves nothing either way",
         [](ArchiveEvidence& a) { a.disk[3].stamp.btime_ns = 1'700'000'000'000'000'001; }, FileProof::proven, ""},
        {"on another device", [](ArchiveEvidence& a) { a.disk[3].stamp.dev = 8; }, FileProof::piece_check, "on device 8"},
        {"a directory now", [](ArchiveEvidence& a) { a.disk[3] = {OnDisk::other, {}, "directory"}; }, FileProof::unproven, "a directory on disk"},
        {"not read on the node", [](ArchiveEvidence& a) { a.disk[3] = {}; }, FileProof::unproven, "not read"},
        {"torrent missingFiles (re-added with skip_checking)",
         [](ArchiveEvidence& a) {
             a.view.run_state = "missing_files";
             a.state = "missingFiles";
         },
         FileProof::unproven, "qBittorrent reports the torrent missingFiles"},
        {"torrent in error", [](ArchiveEvidence& a) { a.view.run_state = "error"; a.state = "error"; }, FileProof::unproven, "error"},
        {"torrent checking", [](ArchiveEvidence& a) { a.view.run_state = "checking"; a.state = "checkingUP"; }, FileProof::unproven,
         "checkingUP"},
        {"torrent moving", [](ArchiveEvidence& a) { a.view.run_state = "moving"; a.state = "moving"; }, FileProof::unproven, "moving"},
        {"a stopped torrent still holds its files", [](ArchiveEvidence& a) { a.view.run_state = "stopped"; }, FileProof::proven, ""},
        {"skipped in qBittorrent", [](ArchiveEvidence& a) { a.view.selected = *Selection::parse("0-2,4"); }, FileProof::unproven,
         "skipped"},
        {"below 100% in qBittorrent", [](ArchiveEvidence& a) { a.view.complete = *Selection::parse("0-2,4"); }, FileProof::unproven,
         "not at 100%"},
        {"renamed in qBittorrent", [](ArchiveEvidence& a) { a.view.names[3] = "pay/x.bin"; }, FileProof::unproven, "renamed"},
        {"a content layout is no rename",
         [](ArchiveEvidence& a) {
             a.view.names[3] = "d.bin";
             a.expected.assign(5, "");
             a.expected[3] = "d.bin";
         },
         FileProof::proven, ""},
        {"renamed from where the content layout puts it",
         [](ArchiveEvidence& a) {
             a.view.names[3] = "pay/d.bin";
             a.expected.assign(5, "");
             a.expected[3] = "d.bin";
         },
         FileProof::unproven, "renamed"},
        {"never committed by archctl", [](ArchiveEvidence& a) { a.committed.clear(); a.generation = 0; }, FileProof::piece_check,
         "no recheck committed by archctl"},
        {"committed by an older archctl (no stamps)", [](ArchiveEvidence& a) { a.committed.clear(); }, FileProof::piece_check,
         "no file stamp"},
        {"--verify-archive: a replaced file is piece-checked",
         [](ArchiveEvidence& a) {
             a.disk[3].stamp.ino = 5;
             a.verify = VerifyArchive::yes;
         },
         FileProof::piece_check, ""},
        {"--verify-archive: an uncommitted placement is piece-checked",
         [](ArchiveEvidence& a) {
             a.committed.clear();
             a.generation = 0;
             a.verify = VerifyArchive::yes;
         },
         FileProof::piece_check, ""},
        {"--verify-archive: a file of another size is still refused",
         [](ArchiveEvidence& a) {
             a.disk[3].stamp.size = 9;
             a.verify = VerifyArchive::yes;
         },
         FileProof::unproven, "size 9"},
        {"--verify-archive: missingFiles is still refused",
         [](ArchiveEvidence& a) {
             a.view.run_state = "missing_files";
             a.state = "missingFiles";
             a.verify = VerifyArchive::yes;
         },
         FileProof::unproven, "missingFiles"},
    };
    for (const auto& c : cases) {
        const std::string what = c.what;
        CAPTURE(what);
        ArchiveEvidence a = archive("nas", "0-4");
        c.change(a);
        FileVerdict v = judge_file(a, k_d);
        CHECK(v.proof == c.expect);
        CHECK(v.why.find(c.why) != std::string::npos);
    }
}

TEST_CASE("judge_file: an empty file has no bytes to lose") {
    ArchiveEvidence a = archive("nas", "0-4");
    a.disk[4] = {OnDisk::absent, {}, {}};
    CHECK(judge_file(a, {4, "pay/e.bin", 0}).proof == FileProof::proven);
}

TEST_CASE("one archive node holding every file covers the cache placement") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    CHECK(c->required.count() == 5);
    CHECK(c->required_bytes == 1000);
    REQUIRE(c->proofs.size() == 1);
    CHECK(c->proofs[0].node == "nas");
    CHECK(c->proofs[0].files.to_string() == "0-4");
    REQUIRE(c->proofs[0].proven.size() == 5);
    CHECK(c->proofs[0].proven[3].stamp == stamp_of(3));
    CHECK(c->files[2].nodes == std::vector<std::string>{"nas"});
    CHECK_FALSE(c->digest.empty());
}

TEST_CASE("coverage is the union over archive nodes") {
    auto in = input();
    in.archives = {archive("nas2", "3-4"), archive("nas", "0-2")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    REQUIRE(c->proofs.size() == 2);
    CHECK(c->proofs[0].node == "nas");  // sorted by node
    CHECK(c->proofs[0].files.to_string() == "0-2");
    CHECK(c->proofs[1].files.to_string() == "3-4");
    CHECK(c->files[3].nodes == std::vector<std::string>{"nas2"});
}

TEST_CASE("a file held by two nodes names both, and each proof lists it") {
    auto in = input();
    in.archives = {archive("nas", "0-3"), archive("nas2", "3-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->files[3].nodes == std::vector<std::string>{"nas", "nas2"});
    CHECK(c->proofs[1].files.to_string() == "3-4");
}

TEST_CASE("a file deleted on the archive is missing, named with the node and what differs") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.archives[0].disk[2] = {OnDisk::absent, {}, {}};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK_FALSE(c->complete());
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].path == "pay/sub/c.bin");
    CHECK(c->missing_bytes == 300);
    CHECK(c->files[2].refused == std::vector<std::string>{"nas: absent on disk"});
    CHECK(c->files[2].piece_checked.empty());
    REQUIRE(c->notes.size() == 1);
    CHECK(c->notes[0] == "nas: 1 file(s) do not count: file 2 'pay/sub/c.bin': absent on disk");
}

TEST_CASE("a torrent in missingFiles covers nothing, even its files still on disk") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.archives[0].view.run_state = "missing_files";
    in.archives[0].state = "missingFiles";
    in.archives[0].disk[1] = {OnDisk::absent, {}, {}};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->missing.size() == 5);
    CHECK(c->proofs.empty());
}

TEST_CASE("a second archive node covers what the first one lost") {
    auto in = input();
    in.archives = {archive("nas", "0-4"), archive("nas2", "2")};
    in.archives[0].disk[2] = {OnDisk::absent, {}, {}};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    CHECK(c->files[2].nodes == std::vector<std::string>{"nas2"});
    CHECK(c->files[2].refused == std::vector<std::string>{"nas: absent on disk"});
}

TEST_CASE("a placement archctl never committed counts, its files to be piece-checked; --verify-archive checks every file") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.archives[0].committed.clear();
    in.archives[0].generation = 0;
    auto without = compute_coverage(in);
    REQUIRE(without.ok());
    CHECK(without->complete());
    CHECK(without->files[0].piece_checked == std::vector<std::string>{"nas"});
    CHECK(without->proofs[0].trust == Trust::committed);
    CHECK(without->proofs[0].piece_files().to_string() == "0-3");  // the empty file needs no proof
    in.archives[0].verify = VerifyArchive::yes;
    auto with = compute_coverage(in);
    REQUIRE(with.ok());
    CHECK(with->complete());
    CHECK(with->proofs[0].trust == Trust::verify_pieces);
}

TEST_CASE("only the cache's selected files are required") {
    auto in = input();
    in.cache.selected = *Selection::parse("0-2");
    in.cache.complete = *Selection::parse("0-2");
    in.archives = {archive("nas", "0-2")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    CHECK(c->files.size() == 3);
    CHECK(c->proofs[0].files.to_string() == "0-2");
}

TEST_CASE("an archive file the cache does not hold is not part of the proof") {
    auto in = input();
    in.cache.selected = *Selection::parse("0-1");
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->proofs[0].files.to_string() == "0-1");
    CHECK(c->proofs[0].proven.size() == 2);
}

TEST_CASE("a cache selection past the file list is refused") {
    auto in = input();
    in.cache.selected = *Selection::parse("0-7");
    auto c = compute_coverage(in);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == "BAD_VALUE");
}

TEST_CASE("unreachable archive nodes are noted, and the digest changes with the facts") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.unreachable = {"nas2: connection refused"};
    auto a = compute_coverage(in);
    REQUIRE(a.ok());
    CHECK(a->notes == std::vector<std::string>{"nas2: connection refused (not counted)"});
    in.archives[0].committed[1].mtime_ns += 5;
    in.archives[0].disk[1].stamp.mtime_ns += 5;
    auto b = compute_coverage(in);
    REQUIRE(b.ok());
    CHECK(a->digest != b->digest);
    auto again = compute_coverage(in);
    CHECK(again->digest == b->digest);
}

TEST_CASE("proof_drift: a proof holds until the live evidence changes") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    const ArchiveProof& p = c->proofs[0];
    const ArchiveEvidence live = in.archives[0];
    CHECK(proof_drift(p, live).empty());
    CHECK(proof_drift(p, std::nullopt) == "'nas' no longer has the archive placement");

    ArchiveEvidence gone = live;
    gone.disk[3] = {OnDisk::absent, {}, {}};
    CHECK(proof_drift(p, gone) == "file 3 'pay/d.bin' on 'nas': absent on disk");
    ArchiveEvidence two = live;
    two.view.complete = *Selection::parse("0-2");
    CHECK(proof_drift(p, two) == "file 3 'pay/d.bin' on 'nas': not at 100% in qBittorrent (and 1 more files)");
    ArchiveEvidence missing = live;
    missing.view.run_state = "missing_files";
    missing.state = "missingFiles";
    CHECK(proof_drift(p, missing).find("qBittorrent reports the torrent missingFiles") != std::string::npos);
    ArchiveEvidence moved = live;
    moved.view.save_path = "/elsewhere";
    CHECK(proof_drift(p, moved).find("moved from") != std::string::npos);
    ArchiveEvidence other = live;
    other.view.qb_id = "ffff";
    CHECK(proof_drift(p, other).find("is now qB id ffff") != std::string::npos);
}

TEST_CASE("proof_drift: under --verify-archive a file replaced after the proof is drift, not a new proof") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.archives[0].verify = VerifyArchive::yes;
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    ArchiveEvidence replaced = in.archives[0];
    replaced.disk[0].stamp.ino = 99;
    CHECK(proof_drift(c->proofs[0], replaced).find("changed since it was proven: replaced") != std::string::npos);
}

TEST_CASE("proof_drift: a proof without file stamps never holds") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    ArchiveProof old = c->proofs[0];
    old.proven.clear();
    CHECK(proof_drift(old, in.archives[0]).find("names no file stamps") != std::string::npos);
}

TEST_CASE("proof_drift: a proof an older archctl made without ctimes still holds on the rest of its stamps") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    ArchiveProof old = c->proofs[0];
    for (auto& f : old.proven) f.stamp.ctime_ns = 0;
    CHECK(proof_drift(old, in.archives[0]) == "");
    ArchiveEvidence moved = in.archives[0];
    moved.disk[1].stamp.mtime_ns += 1;
    CHECK(proof_drift(old, moved).find("changed since it was proven") != std::string::npos);
}

TEST_CASE("a changed ctime alone makes a file a piece check, noted, and the proof names it") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    in.archives[0].disk[2].stamp.ctime_ns += 7;
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    CHECK(c->proofs[0].piece_files().to_string() == "2");
    CHECK(c->files[2].piece_checked == std::vector<std::string>{"nas"});
    REQUIRE(c->notes.size() == 1);
    CHECK(c->notes[0].find("file 2 'pay/sub/c.bin': its ctime changed") != std::string::npos);
    auto back = ArchiveProof::from_json(c->proofs[0].to_json());
    REQUIRE(back.ok());
    CHECK(back->piece_files().to_string() == "2");
}

TEST_CASE("proofs and stamps round-trip through JSON") {
    ArchiveProof p{"nas", "abcd", "/srv/nas/res", *Selection::parse("0,3"), 4, Trust::verify_pieces,
                   {{0, "pay/a.bin", 100, stamp_of(0)}, {3, "pay/d.bin", 400, stamp_of(3)}}};
    auto back = ArchiveProof::from_json(p.to_json());
    REQUIRE(back.ok());
    CHECK(back->node == "nas");
    CHECK(back->files.to_string() == "0,3");
    CHECK(back->generation == 4);
    CHECK(back->trust == Trust::verify_pieces);
    REQUIRE(back->proven.size() == 2);
    CHECK(back->proven[1].stamp == stamp_of(3));
    CHECK_FALSE(ArchiveProof::from_json(nlohmann::json{{"node", 1}}).ok());

    std::map<std::uint32_t, FileStamp> stamps{{2, stamp_of(2)}, {4, stamp_of(4)}};
    auto again = stamps_from_json(stamps_to_json(stamps));
    REQUIRE(again.ok());
    CHECK(again.value() == stamps);
    CHECK(stamps_from_json(nlohmann::json()).value().empty());
    CHECK_FALSE(stamps_from_json(nlohmann::json::array({{1, 2}})).ok());
}

TEST_CASE("a file stamp carries the birth time when the filesystem gives one, and reads records without it") {
    FileStamp old{7, 1003, 400, 5};
    CHECK(old.to_json() == nlohmann::json::array({7, 1003, 400, 5}));
    FileStamp born{7, 1003, 400, 5, 9};
    CHECK(born.to_json() == nlohmann::json::array({7, 1003, 400, 5, 9}));
    CHECK(FileStamp::from_json(born.to_json()).value() == born);
    CHECK(FileStamp::from_json(old.to_json()).value() == old);
    auto rows = stamps_to_json({{3, born}, {4, old}});
    CHECK(rows == nlohmann::json::parse("[[3,7,1003,400,5,9],[4,7,1003,400,5]]"));
    auto back = stamps_from_json(rows);
    REQUIRE(back.ok());
    CHECK(back.value().at(3) == born);
    CHECK(back.value().at(4) == old);
    CHECK_FALSE(stamps_from_json(nlohmann::json::parse("[[3,7,1003]]")).ok());
}
