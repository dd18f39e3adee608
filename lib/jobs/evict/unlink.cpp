// Evict step 3, unlink: in batches, each after a fresh revalidation and a fresh snapshot of what
// the remaining torrents on the cache node reference, unlink owned files nobody references and
// rmdir upward. Before each batch the ledger records its intent (which of the definition's files
// the batch unlinks), so a run killed between the unlinks and their record is accounted for by
// the next: the intent's files now absent were freed by that batch.

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::evict {

namespace {

// Every path the remaining torrents on the cache node reference (jobs::evidence::referenced_paths). The
// evicted torrent back in qBittorrent means someone added it again: its files are kept.
Result<std::set<std::string>> snapshot_referenced(EvictRun& run, jobs::NodeHandle& cache, std::size_t& torrents) {
    ARCHCTL_TRY_ASSIGN(auto ref, jobs::evidence::referenced_paths(cache, run.def.qb_id));
    if (ref.excluded_present)
        return Error(ErrorCode::STALE_STATE, fmt::format("torrent {} is back in qBittorrent on '{}'", run.def.qb_id.substr(0, 12), run.def.cache),
                     "someone added it again; its files are kept");
    torrents = ref.qb_ids.size();
    return std::move(ref.paths);
}

// Files unlinked per batch: each batch is preceded by a fresh revalidation of every proof and a
// fresh snapshot of what the remaining torrents reference. The test switch makes batches small
// enough for a test to change an archive copy between two of them.
std::size_t unlink_batch_size(const EvictRun& run) { return run.env.io.test.unlink_batch > 0 ? run.env.io.test.unlink_batch : 1000; }

// The files of the definition in [first, last).
std::vector<OwnedFile> files_in(const EvictRun& run, std::uint64_t first, std::uint64_t last) {
    const auto& all = run.def.files;
    last = std::min<std::uint64_t>(last, all.size());
    first = std::min(first, last);
    return {all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(last)};
}

// A batch whose intent the ledger holds was cut off after its intent was recorded: its files
// that are gone now were unlinked by it (each was on disk with the job's inode when the job was
// proved, and revalidated before the batch). They are counted and recorded; the batch's files
// still on disk are unlinked by the batch again.
Status recover_interrupted_batch(EvictRun& run, jobs::NodeHandle& cache) {
    if (!run.ledger.unlinking) return ok_status();
    const std::vector<OwnedFile> batch = files_in(run, run.ledger.unlinking->first, run.ledger.unlinking->second);
    node::TreeRequest request{.base = strip_trailing_slashes(run.def.save_path), .paths = {}};
    for (const auto& f : batch) request.paths.push_back(f.path);
    nlohmann::json files = nlohmann::json::array();
    if (!batch.empty()) {
        ARCHCTL_TRY_ASSIGN(node::Transport * transport, cache.ops());
        ARCHCTL_TRY_ASSIGN(auto tree, node::Ops(*transport).tree(request));
        if (tree.entries.size() != batch.size())
            return Error(ErrorCode::BAD_RESPONSE,
                         fmt::format("node '{}' answered {} entries for {} paths", cache.name(), tree.entries.size(), batch.size()));
        for (std::size_t k = 0; k < batch.size(); ++k) {
            if (tree.entries[k].type != node::EntryType::absent) continue;
            ++run.ledger.files_removed;
            run.ledger.bytes_freed += batch[k].size;
            files.push_back(run.abs(batch[k].path));
        }
    }
    run.ledger.unlinking.reset();
    if (!files.empty())
        ARCHCTL_TRY_STATUS(run.event("unlinked", {{"files", files}, {"dirs", nlohmann::json::array()}, {"kept", nlohmann::json::array()},
                                                  {"recovered", true}}));
    return run.save();
}

// One batch of unlinks: the definition's files [first, last) are new to this run's accounting.
// The last batch names every owned path (those already gone are skipped), so its upward rmdir
// sees every directory and its kept list is the final one.
Status unlink_batch(EvictRun& run, jobs::NodeHandle& cache, std::uint64_t first, std::uint64_t last, bool final_batch) {
    const std::vector<OwnedFile> batch = files_in(run, final_batch ? 0 : first, last);
    ARCHCTL_TRY_STATUS(revalidate(run));
    std::size_t torrents = 0;
    ARCHCTL_TRY_ASSIGN(auto referenced, snapshot_referenced(run, cache, torrents));
    node::UnlinkOwnedRequest request;
    request.stop_at = run.def.save_path;
    std::map<std::string, std::uint64_t> size_of;
    for (const auto& f : batch) {
        std::string p = run.abs(f.path);
        request.paths.push_back({p, f.size, f.ino});
        size_of[p] = f.size;
        if (referenced.count(p)) request.referenced.push_back(p);
    }
    nlohmann::json ours_referenced = request.referenced;
    ARCHCTL_TRY_STATUS(run.event("snapshot", {{"torrents", torrents}, {"referenced_paths", referenced.size()},
                                              {"owned_referenced", ours_referenced}}));
    crash_point("evict.snapshot");
    run.ledger.unlinking = std::make_pair(first, last);
    ARCHCTL_TRY_STATUS(run.save());
    crash_point("evict.intent");
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, cache.ops());
    auto answered = node::Ops(*transport).unlink_owned(request);
    if (!answered.ok()) {
        // The node may have unlinked part of the batch before it failed: the record accounts for
        // that now. When it cannot (the node is gone too), the intent stays and the next run does.
        if (!recover_interrupted_batch(run, cache).ok()) run.ledger.unlinking = std::make_pair(first, last);
        return answered.take_error();
    }
    node::UnlinkOwnedResult& result = answered.value();
    crash_point("evict.unlinked");
    nlohmann::json files = nlohmann::json::array(), dirs = nlohmann::json::array();
    for (const auto& r : result.removed) {
        auto it = size_of.find(r);
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
    for (const auto& k : result.kept)
        if (final_batch || size_of.count(k.path)) kept.push_back(k);
    if (final_batch) run.ledger.kept = kept;
    run.ledger.unlink_done = last;
    run.ledger.unlinking.reset();
    ARCHCTL_TRY_STATUS(run.event("unlinked", {{"files", files}, {"dirs", dirs}, {"kept", kept}}));
    return run.save();
}

}  // namespace

jobs::StepResult step_unlink(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
    ARCHCTL_TRY_STATUS(recover_interrupted_batch(run, *cache));
    const std::uint64_t count = run.def.files.size();
    const std::uint64_t size = unlink_batch_size(run);
    // Batches an earlier run accounted for are not asked again; the final batch names every
    // owned path all the same (see unlink_batch).
    std::uint64_t begin = std::min(run.ledger.unlink_done, count);
    for (; begin + size < count; begin += size) ARCHCTL_TRY_STATUS(unlink_batch(run, *cache, begin, begin + size, false));
    ARCHCTL_TRY_STATUS(unlink_batch(run, *cache, begin, count, true));
    run.log(fmt::format("archctl: unlinked {} files ({}) of torrent {} on {}{}", run.ledger.files_removed, format_size(run.ledger.bytes_freed),
                        run.def.qb_id.substr(0, 12), run.def.cache,
                        run.ledger.kept.empty() ? std::string()
                                                : fmt::format("; {} kept ('archctl job show {}' says why)", run.ledger.kept.size(), run.def.id)));
    return {};
}

}  // namespace archctl::jobs::evict
