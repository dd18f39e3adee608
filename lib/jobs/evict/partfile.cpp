// Evict step 4, partfile: remove `.<qB id>.parts` only when its header proves it is this
// torrent's and no torrent with that id is in qBittorrent again.

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/torrent/partfile.hpp"

namespace archctl::jobs::evict {

jobs::StepResult step_partfile(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, cache->ops());
    node::Ops ops(*transport);
    std::string name = torrent::partfile_name(run.def.qb_id);
    std::string path = run.abs(name);
    ARCHCTL_TRY_ASSIGN(auto tree, ops.tree({run.def.save_path, {name}}));
    node::TreeEntry entry = tree.entries.empty() ? node::TreeEntry{name, node::EntryType::absent, {}, {}} : tree.entries[0];
    std::string outcome;
    if (entry.type == node::EntryType::absent) {
        outcome = "absent";
    } else if (entry.type != node::EntryType::file) {
        outcome = fmt::format("kept: a {}, not a part file", node::to_string(entry.type));
    } else {
        ARCHCTL_TRY_ASSIGN(auto infos, cache->qb().torrents({run.def.qb_id}));
        auto header = ops.partfile_read({path, node::qb_partfile_check(run.def.piece_count, run.def.piece_length)});
        if (!infos.empty()) {
            outcome = "kept: a torrent with this qB id is in qBittorrent again";
        } else if (!header.ok()) {
            outcome = fmt::format("kept: its header does not match this torrent ({})", header.error().message);
        } else {
            node::UnlinkOwnedRequest request;
            request.paths.push_back({path, entry.stat ? entry.stat->size : 0, entry.stat ? entry.stat->ino : 0});
            request.stop_at = run.def.save_path;
            ARCHCTL_TRY_ASSIGN(auto r, ops.unlink_owned(request));
            outcome = r.removed.empty() ? "kept: it changed while it was checked" : "removed";
        }
    }
    crash_point("evict.partfile");
    run.ledger.partfile = outcome;
    return jobs::StepResult::of(run.event("partfile", {{"path", path}, {"outcome", outcome}}));
}

}  // namespace archctl::jobs::evict
