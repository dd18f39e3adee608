// Evict step 3, unlink: in batches, each after a fresh revalidation and a fresh snapshot of what
// the remaining torrents on the cache node reference, unlink owned files nobody references and
// rmdir upward.

#include <map>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/jobs/evidence/referenced.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::evict {

namespace {

// Every path the remaining torrents on the cache node reference (jobs::referenced_paths). The
// evicted torrent back in qBittorrent means someone added it again: its files are kept.
Result<std::set<std::string>> snapshot_referenced(EvictRun& run, jobs::NodeHandle& cache, std::size_t& torrents) {
    ARCHCTL_TRY_ASSIGN(auto ref, jobs::referenced_paths(cache, run.def.qb_id));
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

// One batch of unlinks. The last batch names every owned path (those already gone are skipped),
// so its upward rmdir sees every directory and its kept list is the final one.
Status unlink_batch(EvictRun& run, jobs::NodeHandle& cache, const std::vector<OwnedFile>& batch, bool last) {
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
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, cache.ops());
    ARCHCTL_TRY_ASSIGN(auto result, node::Ops(*transport).unlink_owned(request));
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
        if (last || size_of.count(k.path)) kept.push_back(k);
    if (last) run.ledger.kept = kept;
    ARCHCTL_TRY_STATUS(run.event("unlinked", {{"files", files}, {"dirs", dirs}, {"kept", kept}}));
    return run.save();
}

}  // namespace

jobs::StepResult step_unlink(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
    const std::vector<OwnedFile>& all = run.def.files;
    const std::size_t size = unlink_batch_size(run);
    for (std::size_t begin = 0; begin + size < all.size(); begin += size) {
        std::vector<OwnedFile> batch(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                     all.begin() + static_cast<std::ptrdiff_t>(begin + size));
        ARCHCTL_TRY_STATUS(unlink_batch(run, *cache, batch, false));
    }
    return jobs::StepResult::of(unlink_batch(run, *cache, all, true));
}

}  // namespace archctl::evict
