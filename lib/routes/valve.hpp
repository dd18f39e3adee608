#pragma once
// The route as a one-way valve (docs/routes.md "The valve"). A route folder holds hard links to
// the source's inodes while a job is staged, so the folder's Syncthing settings decide whether
// anything the far side does can reach those inodes:
//   versioning        off — a versioner moves a deleted or replaced staged link into .stversions
//                     (the source inode stays linked there, its mtime set by the versioner);
//   ignorePerms       true — otherwise a chmod on the far side is applied to the source inode;
//   ignoreDelete      false — otherwise the far side's merge never removes the staged links;
//   syncOwnership / syncXattrs (Syncthing 1.21+/1.22+) false — otherwise owner and extended
//                     attributes set on the far side are applied to the source inode.
// valve_problems() is pure; archctl creates folders with these settings, `route ensure --repair`
// sets them on a folder that lost them, and a job refuses to stage into a folder that breaks them.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/syncthing/types.hpp"

namespace archctl::routes {

// One setting of a folder that breaks the valve: "versioning 'trashcan' (must be off)".
struct ValveProblem {
    std::string setting;  // the Syncthing config key: versioning, ignorePerms, …
    std::string have;     // what the folder has, as text
    std::string want;     // what the valve needs, as text
    [[nodiscard]] std::string text() const;
};

// The settings of `folder` that break the valve (empty: it holds).
[[nodiscard]] std::vector<ValveProblem> valve_problems(const clients::syncthing::Folder& folder);

// The PATCH body (PATCH /rest/config/folders/{id}) that repairs the problems of `folder`.
[[nodiscard]] nlohmann::json valve_repair(const clients::syncthing::Folder& folder);

// "versioning 'trashcan' (must be off); ignorePerms false (must be true)"
[[nodiscard]] std::string valve_summary(const std::vector<ValveProblem>& problems);

// ROUTE_VALVE: route `route_id`'s folder on `node` breaks the valve; the hint names the repair.
[[nodiscard]] Error valve_error(const std::string& route_id, const std::string& node, const std::vector<ValveProblem>& problems);

}  // namespace archctl::routes
