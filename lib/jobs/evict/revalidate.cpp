// The evidence evict reads, and the revalidation before every deletion: every archive proof
// against live evidence from its node, and the cache placement while qBittorrent still has it.

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/json_member.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::evict {

namespace {

// What a file's piece check found, from the verifier's report entry: "corrupt: piece(s) 3-4
// failed their hash", "missing: …" (the verifier's detail), "short: …".
std::string failure_of(const nlohmann::json& f) {
    std::string verdict = f.value("verdict", "");
    std::string detail = f.value("detail", "");
    std::string corrupt = f.value("corrupt_pieces", ""), skipped = f.value("needs_skipped_pieces", "");
    std::string blocked = f.value("blocked_pieces", "");
    std::string why;
    if (!corrupt.empty()) why = fmt::format("piece(s) {} failed their hash", corrupt);
    else if (verdict == "needs_skipped" && !skipped.empty()) why = fmt::format("piece(s) {} need bytes of a file not on the archive", skipped);
    else if (verdict == "incomplete" && !blocked.empty()) why = fmt::format("piece(s) {} need bytes of a missing file", blocked);
    else if (!detail.empty()) why = detail;
    else if (verdict == "short" || verdict == "oversized")
        why = fmt::format("{} bytes, the torrent says {}", f.value("actual_size", nlohmann::json(0)).dump(), f.value("size", 0));
    return why.empty() ? verdict : fmt::format("{}: {}", verdict, why);
}

// The piece verifier on the archive node's disk, for `files` of the proof (the ones its stamps do
// not prove, or all of them with --verify-archive): only those files' pieces are read.
Result<nlohmann::json> verify_proof(EvictRun& run, jobs::NodeHandle& node, const plan::ArchiveProof& proof, const torrent::Selection& files) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, node.ops());
    node::VerifyPiecesRequest request;
    request.save_path = strip_trailing_slashes(proof.save_path);
    request.torrent_b64 = base64_encode(run.metainfo);
    request.files = files.to_string();
    // A v1 piece at a file boundary also holds bytes of its neighbours: those of the proof's
    // other files are read where such a piece needs them (and fail the check if they are wrong).
    request.readable = proof.files.to_string();
    for (const auto& p : proof.proven)
        if (!p.disk.empty() && p.disk != p.path) request.paths[p.index] = p.disk;
    ARCHCTL_TRY_ASSIGN(auto verified, node::Ops(*transport).verify_pieces(request));
    const nlohmann::json& report = verified.report;
    if (report.value("verified", false)) return nlohmann::json{{"verified", true}, {"summary", report.value("summary", nlohmann::json())}};
    std::vector<std::string> bad;
    for (const auto& f : member_or_empty(report, "files"))
        if (f.value("verdict", "") != "complete")
            bad.push_back(fmt::format("{} '{}' ({})", f.value("index", 0), f.value("path", ""), failure_of(f)));
    return Error(ErrorCode::PROOF_FAILED, fmt::format("the piece check on '{}' did not verify {} file(s): {}", proof.node, bad.size(),
                                             fmt::join(bad, "; ")),
                 "nothing was deleted; repair the archive copy (a recheck in its qBittorrent) and rerun");
}

// The resource's files as far as `proof` names them, by index (others are placeholders).
std::vector<plan::CoverageFile> files_of(const plan::ArchiveProof& proof) {
    std::vector<plan::CoverageFile> files;
    for (const auto& p : proof.proven) {
        if (files.size() <= p.index)
            for (std::uint32_t i = static_cast<std::uint32_t>(files.size()); i <= p.index; ++i) files.push_back({i, "", 0});
        files[p.index] = {p.index, p.path, p.size};
    }
    return files;
}

// The proof against fresh evidence from its node: the torrent and its state in qBittorrent, each
// file at 100% there, the copy still one that will stay (share limits, no other torrent's files),
// and the node's stat of each file equal to the stamp it was proven at — except the files a
// piece check proves (those the stamps did not prove, or every file with --verify-archive),
// checked once per run.
Result<nlohmann::json> revalidate_proof(EvictRun& run, const plan::ArchiveProof& proof, nlohmann::json& pieces_checked) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * n, run.node(proof.node));
    ARCHCTL_TRY_ASSIGN(auto infos, n->qb().torrents({proof.qb_id}));
    const bool all_pieces = run.verify_pieces() || proof.trust == plan::Trust::verify_pieces;
    const torrent::Selection piece_files = all_pieces ? proof.files : proof.piece_files();
    std::optional<plan::ArchiveEvidence> live;
    if (!infos.empty()) {
        jobs::evidence::EvidenceOptions options{.verify = all_pieces ? plan::VerifyArchive::yes : plan::VerifyArchive::no,
                                      .count_shared = run.env.config.count_shared_copies,
                                      .torrents = nullptr};
        ARCHCTL_TRY_ASSIGN(live, read_evidence(*n, infos[0], files_of(proof), run.env.state_dir, run.def.aliases, options));
    }
    // With a piece check due now, its files are proven by it, whatever their stamps did since
    // the proof; after it, the stamps it checked are the reference for the rest of the run.
    plan::ArchiveProof reference = proof;
    auto checked = run.pieces_verified.find(proof.node);
    bool check_now = !piece_files.empty() && checked == run.pieces_verified.end();
    if (checked != run.pieces_verified.end()) reference.proven = checked->second;
    if (check_now && live)
        for (auto& f : reference.proven)
            if (piece_files.contains(f.index) && f.index < live->disk.size() && live->disk[f.index].on_disk == plan::OnDisk::file)
                f.stamp = live->disk[f.index].stamp;
    std::string drift = plan::proof_drift(reference, live);
    if (!drift.empty()) {
        std::string kept = run.ledger.files_removed == 0 && !run.ledger.removed
                               ? "nothing was deleted"
                               : fmt::format("nothing more was deleted ({} file(s) removed before, listed in 'archctl job show {}')",
                                             run.ledger.files_removed, run.def.id);
        return Error(ErrorCode::PROOF_DRIFT, fmt::format("the archive proof for '{}' no longer holds: {}", run.def.qb_id.substr(0, 12), drift),
                     fmt::format("{}; run 'archctl plan evict {}' to see the coverage now", kept, run.def.qb_id.substr(0, 12)));
    }
    nlohmann::json verdict = {{"node", proof.node}, {"qb_id", proof.qb_id}, {"files", proof.files.to_string()},
                              {"generation", proof.generation}, {"state", live->state}, {"holds", true}};
    if (check_now) {
        ARCHCTL_TRY_ASSIGN(verdict["pieces"], verify_proof(run, *n, proof, piece_files));
        run.pieces_verified[proof.node] = reference.proven;
        pieces_checked[proof.node] = piece_files.to_string();
    }
    return verdict;
}

// The cache placement must still be the one that was proven (while qBittorrent still has it).
Status revalidate_cache(EvictRun& run, jobs::NodeHandle& cache) {
    ARCHCTL_TRY_ASSIGN(auto infos, cache.qb().torrents({run.def.qb_id}));
    if (infos.empty()) return {};
    ARCHCTL_TRY_ASSIGN(auto view, read_view(cache, infos[0]));
    if (jobs::evidence::fingerprint(view) != run.def.cache_fingerprint)
        return Error(ErrorCode::STALE_STATE, fmt::format("the cache placement of '{}' on '{}' changed since it was proven", run.def.qb_id.substr(0, 12),
                                                run.def.cache),
                     "nothing was deleted; run 'archctl plan evict' again");
    ARCHCTL_TRY_ASSIGN(auto record, committed_record(run.env.state_dir, run.def.aliases, run.def.cache));
    std::uint64_t gen = record ? record->generation : 0;
    if (gen != run.def.cache_generation)
        return Error(ErrorCode::STALE_STATE, fmt::format("the cache placement of '{}' on '{}' is at generation {}, not {}", run.def.qb_id.substr(0, 12),
                                                run.def.cache, gen, run.def.cache_generation),
                     "nothing was deleted; run 'archctl plan evict' again");
    return {};
}

}  // namespace

Result<plan::PlacementView> read_view(jobs::NodeHandle& node, const qb::TorrentInfo& info) {
    ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(info.id));
    return jobs::evidence::placement_view(node.name(), info, files);
}

Result<plan::ArchiveEvidence> read_evidence(jobs::NodeHandle& node, const qb::TorrentInfo& info, const std::vector<plan::CoverageFile>& files,
                                            const state::StateDir& dir, const std::vector<std::string>& aliases,
                                            const jobs::evidence::EvidenceOptions& options) {
    ARCHCTL_TRY_ASSIGN(auto committed, jobs::evidence::committed_files(dir, aliases, node.name()));
    return jobs::evidence::archive_evidence(node, info, files, committed, options);
}

Result<std::optional<state::PlacementRecord>> committed_record(const state::StateDir& dir, const std::vector<std::string>& aliases,
                                                               const std::string& node) {
    state::PlacementStore store(dir);
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_ASSIGN(auto rec, store.get(alias, node));
        if (rec) return rec;
    }
    return std::optional<state::PlacementRecord>();
}

Status revalidate(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
    if (!run.ledger.removed) ARCHCTL_TRY_STATUS(revalidate_cache(run, *cache));
    nlohmann::json verdicts = nlohmann::json::array(), pieces_checked = nlohmann::json::object();
    for (const auto& proof : run.def.proofs) {
        ARCHCTL_TRY_ASSIGN(auto v, revalidate_proof(run, proof, pieces_checked));
        verdicts.push_back(std::move(v));
    }
    ARCHCTL_TRY_STATUS(run.event("revalidated", {{"proofs", verdicts}, {"pieces_verified", run.verify_pieces()},
                                                 {"pieces_checked", pieces_checked}}));
    crash_point("evict.revalidated");
    return {};
}

}  // namespace archctl::jobs::evict
