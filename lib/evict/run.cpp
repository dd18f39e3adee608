// Evictor::run and Evictor::cancel: drive an evict job through hold → remove → unlink →
// partfile → release, revalidating every proof right before anything is deleted.

#include <unistd.h>

#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/base64.hpp"
#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/evict/evict.hpp"
#include "lib/evict/evict_internal.hpp"
#include "lib/jobs/archive_evidence.hpp"
#include "lib/jobs/referenced.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/reservations.hpp"

namespace archctl::evict {

namespace qb = clients::qbittorrent;

Result<plan::PlacementView> read_view(jobs::NodeHandle& node, const qb::TorrentInfo& info) {
    ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(info.id));
    return jobs::placement_view(node.name(), info, files);
}

Result<plan::ArchiveEvidence> read_evidence(jobs::NodeHandle& node, const qb::TorrentInfo& info, const std::vector<plan::CoverageFile>& files,
                                            const state::StateDir& dir, const std::vector<std::string>& aliases, plan::VerifyArchive verify) {
    ARCHCTL_TRY_ASSIGN(auto committed, jobs::committed_files(dir, aliases, node.name()));
    return jobs::archive_evidence(node, info, files, committed, verify);
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

namespace {

struct StepError {
    Error error;
};

// One evict job being driven.
struct EvictRun {
    const state::StateDir& dir;
    jobs::Nodes& nodes;
    state::JobStore& store;
    jobs::EngineIo& io;
    EvictDefinition def;
    EvictLedger ledger;
    RunOptions options;
    std::string metainfo;
    // Archive node → the stamps its files had when this run piece-checked them: later
    // revalidations in the run compare with these instead of checking the pieces again.
    std::map<std::string, std::vector<plan::ProvenFile>> pieces_verified;
    nlohmann::json session = nlohmann::json::object();

    Status save() { return store.write_ledger(def.id, ledger.to_json()); }
    Status event(const std::string& type, nlohmann::json fields = nlohmann::json::object()) {
        return store.append_event(def.id, type, std::move(fields));
    }
    void log(const std::string& line) const {
        if (io.log) io.log(line);
    }
    bool verify_pieces() const { return def.verify_archive || options.verify_archive == VerifyArchive::yes; }
    std::string abs(const std::string& rel) const { return def.save_path + "/" + rel; }
};

Result<jobs::NodeHandle*> node_of(EvictRun& run, const std::string& name) { return run.nodes.get(name); }

Status hold(EvictRun& run, bool on) {
    for (const auto& proof : run.def.proofs) {
        ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * n, node_of(run, proof.node));
        if (on) {
            ARCHCTL_TRY_STATUS(n->qb().add_tags({proof.qb_id}, {k_hold_tag}));
        } else {
            ARCHCTL_TRY_STATUS(n->qb().remove_tags({proof.qb_id}, {k_hold_tag}));
        }
    }
    return {};
}

Status step_hold(EvictRun& run) {
    ARCHCTL_TRY_STATUS(hold(run, true));
    crash_point("evict.held");
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& p : run.def.proofs) nodes.push_back({{"node", p.node}, {"qb_id", p.qb_id}});
    return run.event("held", {{"tag", k_hold_tag}, {"torrents", nodes}});
}

// The piece verifier on the archive node's disk, for the files the proof names.
Result<nlohmann::json> verify_proof(EvictRun& run, jobs::NodeHandle& node, const plan::ArchiveProof& proof) {
    ARCHCTL_TRY_ASSIGN(node::Transport * ops, node.ops());
    ARCHCTL_TRY_ASSIGN(auto report, node::call_operation(*ops, "verify_pieces",
                                                         {{"save_path", strip_trailing_slashes(proof.save_path)},
                                                          {"torrent_b64", base64_encode(run.metainfo)},
                                                          {"files", proof.files.to_string()}}));
    if (report.value("verified", false)) return nlohmann::json{{"verified", true}, {"summary", report.value("summary", nlohmann::json())}};
    std::vector<std::string> bad;
    for (const auto& f : report.value("files", nlohmann::json::array()))
        if (f.value("verdict", "") != "ok") bad.push_back(fmt::format("{} '{}' ({})", f.value("index", 0), f.value("path", ""), f.value("verdict", "")));
    return Error("PROOF_FAILED", fmt::format("the piece check on '{}' did not verify {} file(s): {}", proof.node, bad.size(),
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
// file at 100% there, and the node's stat of each file equal to the stamp it was proven at (and,
// with --verify-archive, a piece check once per run).
Result<nlohmann::json> revalidate_proof(EvictRun& run, const plan::ArchiveProof& proof) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * n, node_of(run, proof.node));
    ARCHCTL_TRY_ASSIGN(auto infos, n->qb().torrents({proof.qb_id}));
    bool pieces = run.verify_pieces() || proof.trust == plan::Trust::verify_pieces;
    std::optional<plan::ArchiveEvidence> live;
    if (!infos.empty()) {
        ARCHCTL_TRY_ASSIGN(live, read_evidence(*n, infos[0], files_of(proof), run.dir, run.def.aliases,
                                               pieces ? plan::VerifyArchive::yes : plan::VerifyArchive::no));
    }
    // With a piece check due now, the bytes are proven by it, whatever the stamps did since the
    // proof; after it, the stamps it checked are the reference for the rest of the run.
    plan::ArchiveProof reference = proof;
    auto checked = run.pieces_verified.find(proof.node);
    bool check_now = pieces && checked == run.pieces_verified.end();
    if (checked != run.pieces_verified.end()) reference.proven = checked->second;
    if (check_now && live)
        for (auto& f : reference.proven)
            if (f.index < live->disk.size() && live->disk[f.index].type == "file") f.stamp = live->disk[f.index].stamp;
    std::string drift = plan::proof_drift(reference, live);
    if (!drift.empty()) {
        std::string kept = run.ledger.files_removed == 0 && !run.ledger.removed
                               ? "nothing was deleted"
                               : fmt::format("nothing more was deleted ({} file(s) removed before, listed in 'archctl job show {}')",
                                             run.ledger.files_removed, run.def.id);
        return Error("PROOF_DRIFT", fmt::format("the archive proof for '{}' no longer holds: {}", run.def.qb_id.substr(0, 12), drift),
                     fmt::format("{}; run 'archctl plan evict {}' to see the coverage now", kept, run.def.qb_id.substr(0, 12)));
    }
    nlohmann::json verdict = {{"node", proof.node}, {"qb_id", proof.qb_id}, {"files", proof.files.to_string()},
                              {"generation", proof.generation}, {"state", live->state}, {"holds", true}};
    if (check_now) {
        ARCHCTL_TRY_ASSIGN(verdict["pieces"], verify_proof(run, *n, proof));
        run.pieces_verified[proof.node] = reference.proven;
    }
    return verdict;
}

// The cache placement must still be the one that was proven (while qBittorrent still has it).
Status revalidate_cache(EvictRun& run, jobs::NodeHandle& cache) {
    ARCHCTL_TRY_ASSIGN(auto infos, cache.qb().torrents({run.def.qb_id}));
    if (infos.empty()) return {};
    ARCHCTL_TRY_ASSIGN(auto view, read_view(cache, infos[0]));
    if (jobs::fingerprint(view) != run.def.cache_fingerprint)
        return Error("STALE_STATE", fmt::format("the cache placement of '{}' on '{}' changed since it was proven", run.def.qb_id.substr(0, 12),
                                                run.def.cache),
                     "nothing was deleted; run 'archctl plan evict' again");
    ARCHCTL_TRY_ASSIGN(auto record, committed_record(run.dir, run.def.aliases, run.def.cache));
    std::uint64_t gen = record ? record->generation : 0;
    if (gen != run.def.cache_generation)
        return Error("STALE_STATE", fmt::format("the cache placement of '{}' on '{}' is at generation {}, not {}", run.def.qb_id.substr(0, 12),
                                                run.def.cache, gen, run.def.cache_generation),
                     "nothing was deleted; run 'archctl plan evict' again");
    return {};
}

// Right before every deletion (the removal, each batch of unlinks): every proof against live
// evidence, and the cache placement while qBittorrent still has it.
Status revalidate(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, node_of(run, run.def.cache));
    if (!run.ledger.removed) ARCHCTL_TRY_STATUS(revalidate_cache(run, *cache));
    nlohmann::json verdicts = nlohmann::json::array();
    for (const auto& proof : run.def.proofs) {
        ARCHCTL_TRY_ASSIGN(auto v, revalidate_proof(run, proof));
        verdicts.push_back(std::move(v));
    }
    ARCHCTL_TRY_STATUS(run.event("revalidated", {{"proofs", verdicts}, {"pieces_verified", run.verify_pieces()}}));
    crash_point("evict.revalidated");
    return {};
}

Status wait_absent(Clock& clock, jobs::NodeHandle& cache, const std::string& id) {
    auto deadline = clock.steady() + std::chrono::seconds(30);
    while (true) {
        ARCHCTL_TRY_ASSIGN(auto infos, cache.qb().torrents({id}));
        if (infos.empty()) return {};
        if (clock.steady() > deadline)
            return Error("QB_TIMEOUT", fmt::format("qBittorrent on '{}' still lists torrent {} 30 s after removing it", cache.name(), id));
        clock.sleep_for(std::chrono::milliseconds(100));
    }
}

Status step_remove(EvictRun& run) {
    ARCHCTL_TRY_STATUS(revalidate(run));
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, node_of(run, run.def.cache));
    ARCHCTL_TRY_ASSIGN(auto infos, cache->qb().torrents({run.def.qb_id}));
    bool present = !infos.empty();
    if (present) {
        ARCHCTL_TRY_STATUS(cache->qb().remove({run.def.qb_id}, qb::DeleteData::no));
        ARCHCTL_TRY_STATUS(wait_absent(*run.io.clock, *cache, run.def.qb_id));
        crash_point("evict.removed");
    }
    run.ledger.removed = true;
    ARCHCTL_TRY_STATUS(run.event("removed", {{"node", run.def.cache}, {"qb_id", run.def.qb_id}, {"delete_files", false},
                                             {"already_absent", !present}}));
    run.log(fmt::format("archctl: removed torrent {} from qBittorrent on {} (files kept by qBittorrent)", run.def.qb_id.substr(0, 12),
                        run.def.cache));
    return {};
}

// Every path the remaining torrents on the cache node reference (jobs::referenced_paths). The
// evicted torrent back in qBittorrent means someone added it again: its files are kept.
Result<std::set<std::string>> snapshot_referenced(EvictRun& run, jobs::NodeHandle& cache, std::size_t& torrents) {
    ARCHCTL_TRY_ASSIGN(auto ref, jobs::referenced_paths(cache, run.def.qb_id));
    if (ref.excluded_present)
        return Error("STALE_STATE", fmt::format("torrent {} is back in qBittorrent on '{}'", run.def.qb_id.substr(0, 12), run.def.cache),
                     "someone added it again; its files are kept");
    torrents = ref.qb_ids.size();
    return std::move(ref.paths);
}

// Files unlinked per batch: each batch is preceded by a fresh revalidation of every proof and a
// fresh snapshot of what the remaining torrents reference. The test switch makes batches small
// enough for a test to change an archive copy between two of them.
std::size_t unlink_batch_size(const EvictRun& run) { return run.io.test.unlink_batch > 0 ? run.io.test.unlink_batch : 1000; }

// One batch of unlinks. The last batch names every owned path (those already gone are skipped),
// so its upward rmdir sees every directory and its kept list is the final one.
Status unlink_batch(EvictRun& run, jobs::NodeHandle& cache, const std::vector<OwnedFile>& batch, bool last) {
    ARCHCTL_TRY_STATUS(revalidate(run));
    std::size_t torrents = 0;
    ARCHCTL_TRY_ASSIGN(auto referenced, snapshot_referenced(run, cache, torrents));
    nlohmann::json paths = nlohmann::json::array(), ours_referenced = nlohmann::json::array();
    std::map<std::string, std::uint64_t> size_of;
    for (const auto& f : batch) {
        std::string p = run.abs(f.path);
        paths.push_back({{"path", p}, {"size", f.size}, {"ino", f.ino}});
        size_of[p] = f.size;
        if (referenced.count(p)) ours_referenced.push_back(p);
    }
    ARCHCTL_TRY_STATUS(run.event("snapshot", {{"torrents", torrents}, {"referenced_paths", referenced.size()},
                                              {"owned_referenced", ours_referenced}}));
    crash_point("evict.snapshot");
    ARCHCTL_TRY_ASSIGN(node::Transport * ops, cache.ops());
    ARCHCTL_TRY_ASSIGN(auto result, node::call_operation(*ops, "unlink_owned", {{"paths", paths}, {"referenced", ours_referenced},
                                                                                 {"stop_at", run.def.save_path}}));
    crash_point("evict.unlinked");
    nlohmann::json files = nlohmann::json::array(), dirs = nlohmann::json::array();
    for (const auto& r : result.value("removed", nlohmann::json::array())) {
        auto it = size_of.find(r.get<std::string>());
        if (it != size_of.end()) {
            ++run.ledger.files_removed;
            run.ledger.bytes_freed += it->second;
            files.push_back(r);
        } else {
            ++run.ledger.dirs_removed;
            dirs.push_back(r);
        }
    }
    // A directory that still holds a later batch's files is no news; the last batch decides.
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& k : result.value("kept", nlohmann::json::array()))
        if (last || size_of.count(k.value("path", ""))) kept.push_back(k);
    if (last) run.ledger.kept = kept;
    ARCHCTL_TRY_STATUS(run.event("unlinked", {{"files", files}, {"dirs", dirs}, {"kept", kept}}));
    return run.save();
}

Status step_unlink(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, node_of(run, run.def.cache));
    const std::vector<OwnedFile>& all = run.def.files;
    const std::size_t size = unlink_batch_size(run);
    for (std::size_t begin = 0; begin + size < all.size(); begin += size) {
        std::vector<OwnedFile> batch(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                     all.begin() + static_cast<std::ptrdiff_t>(begin + size));
        ARCHCTL_TRY_STATUS(unlink_batch(run, *cache, batch, false));
    }
    return unlink_batch(run, *cache, all, true);
}

Status step_partfile(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, node_of(run, run.def.cache));
    ARCHCTL_TRY_ASSIGN(node::Transport * ops, cache->ops());
    std::string name = "." + run.def.qb_id + ".parts";
    std::string path = run.abs(name);
    ARCHCTL_TRY_ASSIGN(auto tree, node::call_operation(*ops, "tree", {{"base", run.def.save_path}, {"paths", {name}}}));
    nlohmann::json entry = tree.value("entries", nlohmann::json::array()).empty() ? nlohmann::json::object() : tree["entries"][0];
    std::string outcome;
    if (entry.value("type", "absent") == "absent") {
        outcome = "absent";
    } else if (entry.value("type", "") != "file") {
        outcome = fmt::format("kept: a {}, not a part file", entry.value("type", ""));
    } else {
        ARCHCTL_TRY_ASSIGN(auto infos, cache->qb().torrents({run.def.qb_id}));
        auto header = node::call_operation(*ops, "partfile_read", {{"path", path}, {"expect_pieces", run.def.piece_count},
                                                                    {"expect_piece_size", run.def.piece_length},
                                                                    {"allow_short_last_slot", true}});
        if (!infos.empty()) {
            outcome = "kept: a torrent with this qB id is in qBittorrent again";
        } else if (!header.ok()) {
            outcome = fmt::format("kept: its header does not match this torrent ({})", header.error().message);
        } else {
            nlohmann::json args = {{"paths", {{{"path", path}, {"size", entry.value("size", std::uint64_t{0})},
                                              {"ino", entry.value("ino", std::uint64_t{0})}}}},
                                   {"stop_at", run.def.save_path}};
            ARCHCTL_TRY_ASSIGN(auto r, node::call_operation(*ops, "unlink_owned", args));
            outcome = r.value("removed", nlohmann::json::array()).empty() ? "kept: it changed while it was checked" : "removed";
        }
    }
    crash_point("evict.partfile");
    run.ledger.partfile = outcome;
    return run.event("partfile", {{"path", path}, {"outcome", outcome}});
}

Status step_release(EvictRun& run) {
    ARCHCTL_TRY_STATUS(hold(run, false));
    ARCHCTL_TRY_STATUS(state::PlacementStore(run.dir).forget(run.def.aliases, run.def.cache));
    crash_point("evict.released");
    return run.event("released", {{"tag", k_hold_tag}});
}

using StepFn = Status (*)(EvictRun&);
struct StepSpec {
    const char* name;
    StepFn fn;
};
const StepSpec k_steps[] = {{"hold", step_hold}, {"remove", step_remove}, {"unlink", step_unlink}, {"partfile", step_partfile},
                            {"release", step_release}};

void end_session(EvictRun& run, const std::string& reason) {
    run.session["ended"] = format_rfc3339(system_now());
    run.session["end_reason"] = reason;
    run.ledger.sessions.push_back(run.session);
}

// The owned files no longer on the cache's disk, read live (the ledger may not have recorded a
// batch a crash interrupted). Unknown when the cache node cannot be read: then the ledger's count.
nlohmann::json files_gone(EvictRun& run) {
    nlohmann::json gone = nlohmann::json::array();
    std::vector<plan::CoverageFile> files;
    std::size_t count = 0;
    for (const auto& f : run.def.files) {
        files.push_back({f.index, f.path, f.size});
        count = std::max<std::size_t>(count, f.index + 1);
    }
    auto cache = node_of(run, run.def.cache);
    auto stats = cache.ok() ? jobs::stat_files(*cache.value(), run.def.save_path, files, count)
                            : Result<std::vector<plan::DiskFile>>(cache.error());
    if (!stats.ok()) {
        for (std::uint64_t i = 0; i < run.ledger.files_removed; ++i) gone.push_back("?");
        return gone;
    }
    for (const auto& f : run.def.files) {
        const plan::DiskFile& d = stats.value()[f.index];
        if (d.type == "absent" || (d.type == "file" && d.stamp.ino != f.ino)) gone.push_back(run.abs(f.path));
    }
    return gone;
}

EvictResult failed(EvictRun& run, const Error& e) {
    nlohmann::json gone = nlohmann::json::array();
    EvictResult r;
    r.run.outcome = jobs::RunOutcome::failed;
    r.run.job_id = run.def.id;
    r.run.step = run.ledger.step;
    r.run.error = e;
    if (!run.ledger.removed) {
        // Nothing was deleted: drop the holds and give the resource back.
        Status unheld = hold(run, false);
        if (!unheld.ok()) run.log(fmt::format("archctl: warning: hold tag not removed: {}", unheld.error().message));
        run.ledger.state = jobs::JobState::failed;
        (void)state::release(run.dir, run.def.aliases, run.def.id);
    } else {
        run.ledger.state = jobs::JobState::cleanup_required;
        gone = files_gone(run);
        std::string removed = gone.empty() ? "no file of it was unlinked"
                                           : fmt::format("{} of its {} file(s) are no longer on the cache's disk (listed in 'archctl job "
                                                         "show {}'), the rest are kept",
                                                         gone.size(), run.def.files.size(), run.def.id);
        std::string hint = e.code == "PROOF_DRIFT"
                               ? fmt::format("the cache files left in '{}' are kept; restore the archive copy and run 'archctl evict {} "
                                             "--from {} --verify-archive' (its piece check proves the copy again), or add the torrent "
                                             "back to qBittorrent on '{}' from '{}'",
                                             run.def.save_path, run.def.qb_id.substr(0, 12), run.def.cache, run.def.cache,
                                             run.store.dir_of(run.def.id) + "/resource.torrent")
                               : fmt::format("its remaining files are kept; fix the cause and run 'archctl resume {}'", run.def.id);
        r.run.error = Error("CLEANUP_REQUIRED",
                            fmt::format("job {} removed the cache torrent, but finishing the eviction failed: {}; {}", run.def.id, e.message,
                                        removed),
                            hint);
    }
    run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", run.ledger.step}};
    if (!gone.empty()) run.ledger.failure["gone"] = gone;
    end_session(run, "error");
    (void)run.save();
    (void)run.event("failed", {{"code", e.code}, {"message", e.message}, {"step", run.ledger.step}, {"removed", run.ledger.removed},
                               {"files_removed", gone.size()}, {"gone", gone}});
    return r;
}

EvictResult drive(EvictRun& run) {
    EvictResult result;
    result.run.job_id = run.def.id;
    std::size_t first = 0;
    while (first < std::size(k_steps) && run.ledger.step != k_steps[first].name) ++first;
    for (std::size_t i = first; i < std::size(k_steps); ++i) {
        if (stop_requested()) {
            end_session(run, "interrupt");
            (void)run.save();
            (void)run.event("stopped", {{"reason", "interrupt"}, {"step", run.ledger.step}});
            result.run.outcome = jobs::RunOutcome::stopped;
            result.run.stop_reason = "interrupt";
            result.run.stop_text = "interrupted (Ctrl-C)";
            result.run.step = run.ledger.step;
            return result;
        }
        Status s = k_steps[i].fn(run);
        if (!s.ok()) return failed(run, s.error());
        run.ledger.step = i + 1 < std::size(k_steps) ? k_steps[i + 1].name : "done";
        Status saved = run.save();
        if (!saved.ok()) return failed(run, saved.error());
        crash_point(std::string("evict.step.") + k_steps[i].name);
    }
    run.ledger.state = jobs::JobState::done;
    run.ledger.failure = nullptr;
    end_session(run, "complete");
    (void)run.save();
    (void)run.event("done", {{"files_removed", run.ledger.files_removed}, {"bytes_freed", run.ledger.bytes_freed},
                             {"dirs_removed", run.ledger.dirs_removed}});
    (void)state::release(run.dir, run.def.aliases, run.def.id);
    result.run.outcome = jobs::RunOutcome::done;
    result.run.step = "done";
    return result;
}

nlohmann::json detail_of(const EvictLedger& l) {
    return {{"files_removed", l.files_removed}, {"bytes_freed", l.bytes_freed}, {"dirs_removed", l.dirs_removed},
            {"kept", l.kept}, {"partfile", l.partfile}};
}

EvictResult early_failure(const std::string& id, Error e) {
    EvictResult r;
    r.run.job_id = id;
    r.run.outcome = jobs::RunOutcome::failed;
    r.run.error = std::move(e);
    return r;
}

}  // namespace

EvictResult Evictor::run(const std::string& job_id, const RunOptions& options) {
    state::JobStore store(m_state);
    auto def_json = store.definition(job_id);
    if (!def_json.ok()) return early_failure(job_id, def_json.take_error());
    auto def = EvictDefinition::from_json(def_json.value());
    if (!def.ok()) return early_failure(job_id, def.take_error());
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), def->summary(), notices);
    for (const auto& n : notices) if (m_io.log) m_io.log("archctl: " + n);
    if (!lock.ok())
        return early_failure(job_id, Error("LOCKED", fmt::format("job {} is running: {}", job_id, lock.error().message), lock.error().hint));
    EvictRun run{m_state, m_nodes, store, m_io, def.value(), EvictLedger{}, options, {}, {}, nlohmann::json::object()};
    auto ledger = store.ledger(job_id);
    // A lost or unreadable ledger starts again from the first step: every step checks live
    // evidence (qBittorrent, the disk) before acting, so nothing is done twice.
    if (ledger.ok()) run.ledger = EvictLedger::from_json(ledger.value());
    else if (ledger.error().code != "NOT_FOUND" && m_io.log)
        m_io.log(fmt::format("archctl: warning: ledger of job {} is unreadable; continuing from live evidence", job_id));
    if (run.ledger.state == jobs::JobState::done || run.ledger.state == jobs::JobState::failed ||
        run.ledger.state == jobs::JobState::cancelled) {
        // A crash after the last ledger write may have left the reservation behind.
        (void)state::release(m_state, run.def.aliases, job_id);
        EvictResult r;
        r.run.job_id = job_id;
        r.run.step = run.ledger.step;
        r.run.outcome = run.ledger.state == jobs::JobState::done ? jobs::RunOutcome::done : jobs::RunOutcome::failed;
        if (run.ledger.state != jobs::JobState::done)
            r.run.error = Error("JOB_FINISHED", fmt::format("job {} already ended: {}", job_id, jobs::to_string(run.ledger.state)));
        r.detail = detail_of(run.ledger);
        return r;
    }
    run.ledger.state = jobs::JobState::running;
    auto torrent = read_file(store.dir_of(job_id) + "/resource.torrent");
    if (torrent.ok()) run.metainfo = torrent.value();
    else if (run.verify_pieces()) return early_failure(job_id, torrent.take_error());
    run.session = {{"started", format_rfc3339(system_now())}, {"host", host_name()}, {"pid", static_cast<long>(::getpid())}};
    // Every run restores the holds (a rerun after a crash, or a tag someone removed).
    if (run.ledger.step != "hold" && run.ledger.step != "release" && run.ledger.step != "done") {
        Status held = hold(run, true);
        if (!held.ok()) return failed(run, held.error());
    }
    EvictResult r = drive(run);
    r.detail = detail_of(run.ledger);
    return r;
}

EvictResult Evictor::cancel(const std::string& job_id) {
    state::JobStore store(m_state);
    auto def_json = store.definition(job_id);
    if (!def_json.ok()) return early_failure(job_id, def_json.take_error());
    auto def = EvictDefinition::from_json(def_json.value());
    if (!def.ok()) return early_failure(job_id, def.take_error());
    EvictLedger ledger;
    if (auto l = store.ledger(job_id); l.ok()) ledger = EvictLedger::from_json(l.value());
    if (ledger.removed) {
        // The cache torrent is gone; the only way forward is to finish.
        (void)store.append_event(job_id, "cancel_requested", {{"effect", "the cache torrent is removed already; finishing the eviction"}});
        return run(job_id);
    }
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), def->summary(), notices);
    if (!lock.ok())
        return early_failure(job_id, Error("LOCKED", fmt::format("job {} is running: {}", job_id, lock.error().message),
                                           "stop it first (Ctrl-C in its terminal), then cancel"));
    EvictRun run{m_state, m_nodes, store, m_io, def.value(), ledger, {}, {}, {}, nlohmann::json::object()};
    EvictResult r;
    r.run.job_id = job_id;
    r.run.step = ledger.step;
    if (ledger.state == jobs::JobState::done || ledger.state == jobs::JobState::cancelled || ledger.state == jobs::JobState::failed) {
        r.run.outcome = jobs::RunOutcome::done;
        return r;
    }
    (void)run.event("cancel_requested");
    Status unheld = hold(run, false);
    if (!unheld.ok()) return early_failure(job_id, unheld.take_error());
    run.ledger.state = jobs::JobState::cancelled;
    if (Status saved = run.save(); !saved.ok()) return early_failure(job_id, saved.take_error());
    (void)run.event("cancelled", {{"deleted", false}});
    (void)state::release(m_state, def->aliases, job_id);
    r.run.outcome = jobs::RunOutcome::done;
    return r;
}

Result<std::vector<std::string>> Evictor::unfinished() {
    state::JobStore store(m_state);
    ARCHCTL_TRY_ASSIGN(auto ids, store.list());
    std::vector<std::string> out;
    for (const auto& id : ids) {
        auto def = store.definition(id);
        if (!def.ok() || !is_evict(def.value())) continue;
        auto l = store.ledger(id);
        jobs::JobState s = l.ok() ? jobs::parse_job_state(l.value().value("state", "running")) : jobs::JobState::running;
        if (s == jobs::JobState::running || s == jobs::JobState::cleanup_required) out.push_back(id);
    }
    return out;
}

}  // namespace archctl::evict
