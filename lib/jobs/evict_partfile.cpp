// Evict step 4, partfile: remove `.<qB id>.parts` only when its header proves it is this
// torrent's and no torrent with that id is in qBittorrent again.

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/jobs/evict_run.hpp"

namespace archctl::evict {

Status step_partfile(EvictRun& run) {
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, run.node(run.def.cache));
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

}  // namespace archctl::evict
