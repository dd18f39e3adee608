#pragma once
// The transfer planner: plan and create archive/unarchive jobs, which jobs::Driver then drives
// (docs/design.md "Commands" to "The job", "Budgets, outages and stops").
//
// Call order for a command:
//   TransferPlanner transfers(config, state, nodes, io);
//   auto prepared = transfers.prepare(request);   // resolve RES, pick nodes, read live trees, plan
//   ... show prepared->plan, confirm (TTY, --yes or --confirm TOKEN) ...
//   auto job = transfers.create(*prepared);       // reserve aliases, write the definition
//   auto result = driver.run(job_id, budgets);    // drive it as far as it can go (driver.hpp)
// A rerun of the same command finds the identical unfinished job in prepare() and continues it
// (prepare() returns it in `existing_job` and create() is skipped); a different unfinished job on
// the same resource is refused naming it.
//
// What a crash leaves: every step records its result durably before the next starts; a rerun
// re-derives the rest from evidence (node journals, qBittorrent, Syncthing).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/ui/progress.hpp"

namespace archctl::jobs::transfer {

struct TransferRequest {
    plan::Operation op = plan::Operation::archive;
    std::string res;
    std::string from, to;                     // empty: the one suitable node
    std::optional<torrent::Selection> files;
    std::vector<std::string> file_paths, dir_paths;
    bool verify_transit = false;
    // plan is read-only: it looks up the route; archive/unarchive provision one on demand.
    enum class RouteMode { look_up, ensure } route_mode = RouteMode::ensure;
    std::optional<SteadyTime> stop_at;        // --max-minutes also bounds route provisioning
    bool no_wait = false;                     // --no-wait: a route not ready now is a clean stop, not a wait
    // A batch: a target that holds every file of the torrent complete is nothing to do, settled
    // from the target's file list without reading the source's files or the metainfo (`plan` of
    // one resource reads them to show its arithmetic).
    bool settle_held = false;
};

struct Prepared {
    TransferRequest request;
    evidence::Resource resource;
    std::string source, target;
    // The source's torrent (BT_backup copy or export), parsed: its bytes are written beside the
    // job's definition. Empty until prepare() reads it (not for a held or existing job).
    std::optional<torrent::Metainfo> metainfo;
    plan::Plan plan;
    RouteRef route;
    std::string route_state;
    std::string source_fingerprint, target_fingerprint;
    std::string source_data_path;             // where the job reads the source's files (data_path)
    std::vector<JobFile> preexisting;         // delta files already on the target at full size (kept, rechecked)
    std::string request_digest;
    std::optional<std::string> existing_job;  // identical unfinished job to continue
    bool held = false;                        // settle_held: the target holds every file; no plan was made
    std::vector<JobFile> delta_files, union_files;
    std::size_t file_count = 0;
    std::int64_t piece_count = 0, piece_length = 0;
    std::uint64_t target_free = 0;
    std::uint64_t min_free = 0;
    // A part file built from the source: the files outside the union whose boundary bytes are
    // read from the source's disk, and from its own part file.
    std::vector<std::uint32_t> partfile_from_disk, partfile_from_partfile;
    nlohmann::json partfile_bytes = nlohmann::json::array();  // [{piece, file, from: disk|partfile}]
    // What the target qBittorrent's share limits will do to the copy: a line for the plan, and
    // {node, global, effective, protected, removes, stops} for --json.
    std::string share_limits_text;
    nlohmann::json share_limits;

    nlohmann::json to_json() const;
    // Why the job would be refused before it starts because of the target's free space above
    // the floor (plan prints the arithmetic first), the same for `plan` and for the command that
    // runs it; nullopt when it may start. The job preflight's checks of the real source and
    // target (preflight.hpp) are made by prepare() itself, which returns their error.
    [[nodiscard]] std::optional<Error> refusal() const;
};

// What planning many resources shares, read once per command (docs/design.md "Many resources and
// tier policies"): each node's torrent list and free space (jobs::evidence::Snapshot), and what the route
// between each pair of nodes was found to be — looked up or ensured once, error included, so a
// plan of thousands of resources asks Syncthing about each route once.
struct PlanSnapshot {
    explicit PlanSnapshot(Nodes& nodes) : live(nodes) {}

    struct FoundRoute {
        RouteRef route;
        std::string state;
        std::optional<Error> error;
    };
    evidence::Snapshot live;
    std::map<std::string, FoundRoute> routes;  // by operation, cache node, archive node and route mode
};

class TransferPlanner {
public:
    TransferPlanner(const config::Config& config, const state::StateDir& state, Nodes& nodes, JobIo io);

    // Plan one resource from live state: a snapshot of its own.
    [[nodiscard]] Result<Prepared> prepare(const TransferRequest& request);
    // Plan one resource of many from the command's snapshot: no torrent list is read again, and
    // only this resource's placements' file lists and its metainfo are read.
    [[nodiscard]] Result<Prepared> prepare(const TransferRequest& request, PlanSnapshot& snapshot);
    // Reserve every alias and write the definition and first event. Returns the job id; the
    // job is then driven by jobs::Driver (driver.hpp).
    [[nodiscard]] Result<std::string> create(const Prepared& prepared);

private:
    // The route as found for this pair in `snapshot`, else found now and kept there.
    Status route_for(Prepared& p, const TransferRequest& request, PlanSnapshot& snapshot);
    Status find_route(Prepared& p, const TransferRequest& request);

    const config::Config& m_config;
    state::StateDir m_state;
    Nodes& m_nodes;
    JobIo m_io;
};

// Digest of "the same command": operation, resource, source, target, request.
std::string request_digest(const TransferRequest& request, const std::vector<std::string>& aliases,
                           const std::string& source, const std::string& target);

}  // namespace archctl::jobs::transfer
