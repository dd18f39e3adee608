#pragma once
// Eviction: remove a cache placement once archive placements are proven to hold every file it
// holds (docs/design.md "Evict"). The one operation that deletes payload: it proves, revalidates right
// before deleting, and deletes only what it owns.
//
// Call order for a command:
//   Evictor evictor(config, state, nodes, io);
//   auto p = evictor.prepare(request);      // resolve RES, read cache + every archive placement fresh
//   ... p->coverage.complete()? show render_plan(*p), confirm (TTY, --yes, --confirm TOKEN) ...
//   auto job = evictor.create(*p);          // reserve aliases, write the definition with the proofs
//   auto r = driver.run(job, budgets, verify_archive);  // hold → remove → unlink → partfile → release
// (jobs::Driver, driver.hpp; the steps are evict/hold.cpp … evict/release.cpp).
// A rerun of the same command finds the unfinished job in prepare() (`existing_job`) and
// continues it; once the cache placement is gone, prepare() answers `nothing_to_do`.
//
// What a crash leaves: each step records its result before the next starts and checks live
// evidence first (is the torrent still in qBittorrent, which files are still on disk), so a
// rerun from any crash point converges. Archive placements are never changed, apart from the
// `archctl-hold` tag while the eviction is in flight.
//
// Crash points: evict.held, evict.revalidated, evict.removed, evict.snapshot, evict.unlinked,
// evict.partfile, evict.released, evict.step.<step> (after each ledger write), plus the node's
// unlink_owned.unlinked and unlink_owned.rmdir and the job store's job.defined, job.event.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/evict/job.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/jobs/core/job_row.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::jobs::evict {

using VerifyArchive = plan::VerifyArchive;

struct EvictRequest {
    std::string res;
    std::string from;                           // empty: the one cache node that has it
    VerifyArchive verify_archive = VerifyArchive::no;
};

struct EvictPrepared {
    EvictRequest request;
    jobs::evidence::Resource resource;
    std::string cache;
    std::optional<std::string> existing_job;    // unfinished evict job to continue
    bool nothing_to_do = false;                 // the cache holds no placement of the resource
    plan::PlacementView cache_view;
    std::string cache_fingerprint;
    std::uint64_t cache_generation = 0;
    plan::Coverage coverage;
    std::vector<OwnedFile> owned;               // required files present on the cache's disk
    std::vector<std::string> archive_nodes;     // configured archive nodes (for the hint)
    // The cache's torrent (BT_backup copy or export), parsed: its bytes are written beside the
    // job's definition. Empty until prepare() reads it.
    std::optional<torrent::Metainfo> metainfo;
    std::int64_t piece_count = 0, piece_length = 0;
    std::string request_digest;

    nlohmann::json to_json() const;
};

class Evictor {
public:
    Evictor(const config::Config& config, const state::StateDir& state, jobs::Nodes& nodes, jobs::JobIo io);

    [[nodiscard]] Result<EvictPrepared> prepare(const EvictRequest& request);
    // Reserve every alias and write the definition (with the proofs) and the first event.
    // Precondition: prepared.coverage.complete() and no existing job. The job is then driven by
    // jobs::Driver: cancel before the cache torrent is removed drops the hold tags and releases;
    // after, the removal cannot be undone, so cancel finishes the eviction.
    [[nodiscard]] Result<std::string> create(const EvictPrepared& prepared);

private:
    const config::Config& m_config;
    state::StateDir m_state;
    jobs::Nodes& m_nodes;
    jobs::JobIo m_io;
};

// The evict plan as `archctl plan evict` prints it: the coverage table (file → archive nodes),
// the covered summary and, when incomplete, the missing files.
std::string render_plan(const EvictPrepared& p);
// The refusal for incomplete coverage: "cannot evict '…' from seedbox: 2 of 40 files have no
// archive copy", the missing lines, and a hint naming the archive command that would cover them.
Error incomplete_error(const EvictPrepared& p);

// Progress of an evict job for `status` and `job list`, from its stored definition and ledger:
// "evicting: removing the cache torrent", "done: 5 files (4.1 MiB) freed", "CLEANUP_REQUIRED: …".
std::string evict_progress_text(const nlohmann::json& definition, const nlohmann::json& ledger);
// One line per event for `job show`: why something was deleted and what proved it safe.
std::string describe_event(const nlohmann::json& event);
// The row of one evict job for `status` and `job list` (every kind's rows come from
// jobs::summarize_jobs).
jobs::JobSummary summarize_evict(const state::JobStore& store, const std::string& id, nlohmann::json definition);

}  // namespace archctl::jobs::evict
