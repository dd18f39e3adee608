#pragma once
// The transfer plan (pure): live source and target views of one resource → the exact selection
// arithmetic and the preflight verdicts that `archctl plan` prints and `archive`/`unarchive`
// execute (docs/design.md "The job", "Creation").
//
//   requested = the request expanded against the source (default: every selected-complete file)
//   baseline  = target files that are selected and complete (verified by the target's qB)
//   delta     = requested − baseline
//   union     = baseline + delta
//
// Nothing here talks to a service or touches a disk; callers bring the views. The digest covers
// every fact the plan relies on, so a confirmation token bound to it is refused once any of them
// changes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/layout.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/selection.hpp"

namespace archctl::plan {

enum class Operation { archive, unarchive };
std::string to_string(Operation op);

// One qBittorrent placement as read live (qB's indices, pad files excluded).
struct PlacementView {
    std::string node;
    std::string qb_id;
    std::string save_path;          // absolute node path
    std::string run_state;          // "running", "stopped", ...
    torrent::Selection selected;    // priority > 0
    torrent::Selection complete;    // selected and progress == 1.0
    std::vector<std::string> names; // qB's `name` by index: the file's path below the save path on disk
    std::string content_path;       // where qB has the content now ("" when unknown)
    std::string download_path;      // qB's incomplete-downloads path of the torrent ("" if none)
};

struct Request {
    Operation op = Operation::archive;
    std::optional<torrent::Selection> files;  // --files 0-3,7
    std::vector<std::string> file_paths;      // --file P (metainfo path, root folder first)
    std::vector<std::string> dir_paths;       // --dir P (expands to selected-complete descendants)
};

// What the nodes can do, as proven live by the node operations.
struct Capabilities {
    bool source_can_link = true;     // hard link from the source save path into the route folder
    bool target_same_fs = true;      // rename from the target route folder into the save path
    std::uint64_t target_free = 0;   // free bytes at the target save path's filesystem
    std::uint64_t min_free = 0;      // the floor (0 = disabled)
};

struct PlanInput {
    const torrent::Metainfo* meta = nullptr;
    PlacementView source;
    std::optional<PlacementView> target;  // nullopt: new target
    std::string source_qb_root;
    std::string target_qb_root;
    Request request;
    Capabilities caps;
    std::string route_id;                 // empty: no route yet (provisioned on demand)
    std::string route_state;              // "ready", "unverified", "missing"
};

enum class PartfileNeed {
    none,            // no piece overlaps a selected and a skipped file (always for v2/hybrid)
    carry_source,    // new v1 target: its part file is built on the source from the boundary bytes
    target_own,      // existing target: its own partfile must hold the boundary bytes
};

struct Plan {
    Operation op = Operation::archive;
    std::string target_save_path;
    bool extends_existing = false;
    torrent::Selection requested, baseline, delta, union_set;
    std::int64_t requested_bytes = 0, baseline_bytes = 0, delta_bytes = 0, union_bytes = 0;
    std::uint64_t copy_bytes = 0;         // payload bytes that cannot be hard-linked or renamed
    bool disk_ok = true;
    PartfileNeed partfile = PartfileNeed::none;
    std::vector<std::int64_t> boundary_pieces;
    // Where each file is on the source's and the target's disk (torrent/layout.hpp): the source's
    // own layout, an existing target's own, a new target's the source's (it is added with it).
    torrent::PlacementLayout source_layout, target_layout;
    std::string digest;                   // sha256 hex over the decision-relevant facts

    bool empty_delta() const { return delta.empty(); }
    nlohmann::json to_json() const;
};

// The metainfo paths of `model`'s files by index (what torrent::infer_layout takes).
[[nodiscard]] std::vector<std::string> metainfo_paths(const torrent::FileModel& model);

// RENAMED_IN_QB when one of `files` has a name in qBittorrent (its path on disk) that the
// placement's content layout does not explain: renamed there. Files outside `files` may be
// renamed: a command refuses only the renames it is affected by. `name` is the torrent's name.
[[nodiscard]] Status check_names(const PlacementView& view, const torrent::PlacementLayout& layout, const torrent::FileModel& model,
                                 const torrent::Selection& files, const std::string& name);
// The RENAMED_IN_QB error of file `index` of `view` (metainfo path `path`, where its layout puts
// it `expected`; "" when that is the metainfo path): one wording for plan and the job's preflight.
[[nodiscard]] Error renamed_in_qb(const PlacementView& view, std::uint32_t index, const std::string& path, const std::string& name,
                                  const std::string& expected = "");

// Compute the plan, or the reason it cannot run (a clear, user-facing error).
[[nodiscard]] Result<Plan> compute(const PlanInput& input);

// "/srv/cache/torrents/linux" re-rooted: the save path's place under the source qB root, kept
// under the target qB root. PATH_OUTSIDE_ROOT when the source save path is not below its root.
[[nodiscard]] Result<std::string> rebase_save_path(const std::string& source_save_path, const std::string& source_root,
                                                   const std::string& target_root);

}  // namespace archctl::plan
