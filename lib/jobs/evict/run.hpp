#pragma once
// Internal to lib/jobs: one evict job being driven, shared by the evict step files
// (evict/hold.cpp, evict/remove.cpp, evict/unlink.cpp, evict/partfile.cpp, evict/release.cpp)
// and the reads shared with the planner (evict/prepare.cpp).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/types.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::jobs::evict {

namespace qb = clients::qbittorrent;

// The live placement behind `info` on `node` (qB's id on that node, which differs between a
// v1-only and a hybrid torrent of the same resource).
[[nodiscard]] Result<plan::PlacementView> read_view(jobs::NodeHandle& node, const clients::qbittorrent::TorrentInfo& info);

// Live evidence for the archive placement `info` on `node` (jobs::evidence::archive_evidence), with the
// file stamps archctl committed there as this state directory records them.
[[nodiscard]] Result<plan::ArchiveEvidence> read_evidence(jobs::NodeHandle& node, const clients::qbittorrent::TorrentInfo& info,
                                                          const std::vector<plan::CoverageFile>& files, const state::StateDir& dir,
                                                          const std::vector<std::string>& aliases, const jobs::evidence::EvidenceOptions& options);

// The placement record archctl committed for the resource on `node`, under any of its aliases.
[[nodiscard]] Result<std::optional<state::PlacementRecord>> committed_record(const state::StateDir& dir,
                                                                            const std::vector<std::string>& aliases,
                                                                            const std::string& node);

// The records (ledger, session, events: core/ledger.hpp) and the state of one evict job being
// driven.
struct EvictRun : jobs::JobRecords<EvictLedger> {
    EvictRun(jobs::RunEnv& run_env, EvictDefinition definition) : JobRecords(run_env, definition.id), def(std::move(definition)) {}

    EvictDefinition def;
    std::string metainfo;
    // Archive node → the stamps its files had when this run piece-checked them: later
    // revalidations in the run compare with these instead of checking the pieces again.
    std::map<std::string, std::vector<plan::ProvenFile>> pieces_verified;

    bool verify_pieces() const { return def.verify_archive || env.verify_archive == plan::VerifyArchive::yes; }
    std::string abs(const std::string& rel) const { return def.save_path + "/" + rel; }
    Result<jobs::NodeHandle*> node(const std::string& name) { return env.nodes.get(name); }
};

// Tag (or untag) every covering archive torrent `archctl-hold`.
[[nodiscard]] Status hold(EvictRun& run, bool on);
// Right before every deletion (the removal, each batch of unlinks): every proof against live
// evidence, and the cache placement while qBittorrent still has it.
[[nodiscard]] Status revalidate(EvictRun& run);

// The steps, in order (evict/job.hpp says what each does).
jobs::StepResult step_hold(EvictRun& run);
jobs::StepResult step_remove(EvictRun& run);
jobs::StepResult step_unlink(EvictRun& run);
jobs::StepResult step_partfile(EvictRun& run);
jobs::StepResult step_release(EvictRun& run);

}  // namespace archctl::jobs::evict
