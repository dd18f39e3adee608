#pragma once
// Internal to lib/evict: reads shared by prepare and run.

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "lib/jobs/nodes.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::evict {

// The live placement behind `info` on `node` (qB's id on that node, which differs between a
// v1-only and a hybrid torrent of the same resource).
[[nodiscard]] Result<plan::PlacementView> read_view(jobs::NodeHandle& node, const clients::qbittorrent::TorrentInfo& info);

// Live evidence for the archive placement `info` on `node` (jobs::archive_evidence), with the
// file stamps archctl committed there as this state directory records them.
[[nodiscard]] Result<plan::ArchiveEvidence> read_evidence(jobs::NodeHandle& node, const clients::qbittorrent::TorrentInfo& info,
                                                          const std::vector<plan::CoverageFile>& files, const state::StateDir& dir,
                                                          const std::vector<std::string>& aliases, plan::VerifyArchive verify);

// The placement record archctl committed for the resource on `node`, under any of its aliases.
[[nodiscard]] Result<std::optional<state::PlacementRecord>> committed_record(const state::StateDir& dir,
                                                                            const std::vector<std::string>& aliases,
                                                                            const std::string& node);


}  // namespace archctl::evict
