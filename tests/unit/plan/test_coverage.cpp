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
    v.selected = selected;
    v.complete = complete;
    v.names = names();
    return v;
}

ArchiveEvidence archive(const std::string& node, const std::string& sel, Trust trust = Trust::committed) {
    ArchiveEvidence a;
    a.view = view(node, *Selection::parse(sel), *Selection::parse(sel));
    a.trust = trust;
    a.generation = 1;
    a.fingerprint = "fp-" + node;
    return a;
}

CoverageInput input() {
    CoverageInput in;
    in.cache = view("seedbox", Selection::all(5), Selection::all(5));
    in.files = five_files();
    return in;
}

}  // namespace

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

TEST_CASE("a missing file makes coverage incomplete and is listed with its size") {
    auto in = input();
    in.archives = {archive("nas", "0-1,3-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK_FALSE(c->complete());
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].index == 2);
    CHECK(c->missing[0].path == "pay/sub/c.bin");
    CHECK(c->missing_bytes == 300);
    CHECK(c->files[2].nodes.empty());
}

TEST_CASE("selected but incomplete on the archive does not count") {
    auto in = input();
    ArchiveEvidence a = archive("nas", "0-4");
    a.view.complete = *Selection::parse("0-3");
    in.archives = {a};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].index == 4);
}

TEST_CASE("complete but skipped on the archive does not count") {
    auto in = input();
    ArchiveEvidence a = archive("nas", "0-4");
    a.view.selected = *Selection::parse("0-3");
    in.archives = {a};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].index == 4);
}

TEST_CASE("an untrusted placement counts for nothing and says why") {
    auto in = input();
    in.archives = {archive("nas", "0-4", Trust::untrusted)};
    in.archives[0].why_untrusted = "no recheck committed by archctl (use --verify-archive)";
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->missing.size() == 5);
    CHECK(c->proofs.empty());
    REQUIRE(c->notes.size() == 1);
    CHECK(c->notes[0].find("nas: not counted: no recheck committed") == 0);
}

TEST_CASE("a placement to be verified by pieces counts and its proof says so") {
    auto in = input();
    in.archives = {archive("nas", "0-4", Trust::verify_pieces)};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    CHECK(c->complete());
    CHECK(c->proofs[0].trust == Trust::verify_pieces);
}

TEST_CASE("a file renamed in the archive's qBittorrent does not count") {
    auto in = input();
    ArchiveEvidence a = archive("nas", "0-4");
    a.view.names[1] = "pay/renamed.bin";
    in.archives = {a};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    REQUIRE(c->missing.size() == 1);
    CHECK(c->missing[0].index == 1);
    REQUIRE(c->notes.size() == 1);
    CHECK(c->notes[0] == "nas: 1 file(s) renamed in qBittorrent do not count");
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
    in.archives[0].generation = 2;
    auto b = compute_coverage(in);
    REQUIRE(b.ok());
    CHECK(a->digest != b->digest);
    auto again = compute_coverage(in);
    CHECK(again->digest == b->digest);
}

TEST_CASE("proof_drift: a proof holds until its placement changes") {
    auto in = input();
    in.archives = {archive("nas", "0-4")};
    auto c = compute_coverage(in);
    REQUIRE(c.ok());
    const ArchiveProof& p = c->proofs[0];
    PlacementView live = in.archives[0].view;
    CHECK(proof_drift(p, live, "fp-nas", 1).empty());
    CHECK(proof_drift(p, std::nullopt, "", 0) == "'nas' no longer has the archive placement");
    CHECK(proof_drift(p, live, "other", 1) == "the placement on 'nas' changed since it was proven");
    CHECK(proof_drift(p, live, "fp-nas", 2) == "the placement on 'nas' is at generation 2, not 1");
    PlacementView deselected = live;
    deselected.selected = *Selection::parse("0-2,4");
    CHECK(proof_drift(p, deselected, "fp-nas", 1) == "file 3 'pay/d.bin' is no longer selected and complete on 'nas'");
    PlacementView two = live;
    two.complete = *Selection::parse("0-2");
    CHECK(proof_drift(p, two, "fp-nas", 1) == "file 3 'pay/d.bin' and 1 more are no longer selected and complete on 'nas'");
    PlacementView moved = live;
    moved.save_path = "/elsewhere";
    CHECK(proof_drift(p, moved, "fp-nas", 1).find("moved from") != std::string::npos);
    PlacementView other = live;
    other.qb_id = "ffff";
    CHECK(proof_drift(p, other, "fp-nas", 1).find("is now qB id ffff") != std::string::npos);
}

TEST_CASE("proofs round-trip through JSON") {
    ArchiveProof p{"nas", "abcd", "/srv/nas/res", *Selection::parse("0-3,7"), 4, "fp", Trust::verify_pieces};
    auto back = ArchiveProof::from_json(p.to_json());
    REQUIRE(back.ok());
    CHECK(back->node == "nas");
    CHECK(back->files.to_string() == "0-3,7");
    CHECK(back->generation == 4);
    CHECK(back->trust == Trust::verify_pieces);
    CHECK_FALSE(ArchiveProof::from_json(nlohmann::json{{"node", 1}}).ok());
}
