#pragma once
// The job engine: plan, create, and drive archive/unarchive jobs (docs/design.md "Commands" to
// "The job", "Budgets, outages and stops").
//
// Call order for a command:
//   Engine engine(config, state, nodes, io);
//   auto prepared = engine.prepare(request);      // resolve RES, pick nodes, read live trees, plan
//   ... show prepared->plan, confirm (TTY, --yes or --confirm TOKEN) ...
//   auto job = engine.create(*prepared);          // reserve aliases, write the definition
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
#include <optional>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/transfer/job.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/jobs/evidence/resolve.hpp"
#include "lib/plan/transfer_plan.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/ui/progress.hpp"

namespace archctl::jobs {

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
};

struct Prepared {
    TransferRequest request;
    Resource resource;
    std::string source, target;
    std::string metainfo;                     // exported .torrent bytes (source qB)
    plan::Plan plan;
    RouteRef route;
    std::string route_state;
    std::string source_fingerprint, target_fingerprint;
    std::string source_data_path;             // where the job reads the source's files (data_path)
    std::vector<JobFile> preexisting;         // delta files already on the target at full size (kept, rechecked)
    std::string request_digest;
    std::optional<std::string> existing_job;  // identical unfinished job to continue
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

struct Budgets {
    std::optional<std::uint64_t> max_bytes;          // bytes moved this session (copied + synced)
    std::optional<std::chrono::seconds> max_duration;
    std::uint64_t min_free = 0;                      // 0 disables the floor
    bool no_wait = false;
    // How long an unreachable qBittorrent, Syncthing or node is waited for, with backoff, before
    // the run stops with reason 'waiting' (the job stays unfinished; resume goes on).
    std::chrono::seconds outage_wait{300};
    // Budgets shared by the jobs of one run (resume, a batch, tier): what the run's earlier jobs
    // moved counts toward max_bytes, and max_duration counts from the run's start.
    std::uint64_t moved_before = 0;
    std::optional<SteadyTime> run_started;
};

enum class RunOutcome { done, stopped, failed };

struct RunResult {
    RunOutcome outcome = RunOutcome::done;
    std::string stop_reason;      // budget|deadline|disk|interrupt|waiting
    std::string stop_text;        // "budget reached (10.0 GiB moved this run, --max-bytes ...)"
    Error error;
    std::string job_id;
    std::string step;
    nlohmann::json detail = nlohmann::json::object();  // what the kind reports (evict: files removed, bytes freed)
    std::string ended;            // cancel of a job that had already ended: its state (done|failed|cancelled)
    bool compensated = false;     // this run finished a compensation an earlier run left; `ended` says how the job ended
    std::uint64_t bytes_moved = 0;  // payload bytes this run copied and synced for the job (shared budgets count them)
    nlohmann::json row;           // the job's row after the run (JobSummary::to_json), null when it could not be read
    // The run's outcome merged with the job row (man archctl-json, "RUN RESULT").
    nlohmann::json to_json() const;
};

// Test-only switches, set by the command from ARCHCTL_TEST_* (tests/README.md); the library
// never reads the environment. Empty/zero: the normal behaviour.
struct TestSwitches {
    std::string stage_method;        // force the node's stage method (reflink|hardlink|copy)
    std::size_t unlink_batch = 0;    // evict: files unlinked per revalidated batch (default 1000)
};

// How the engine talks to the person (log lines above the progress panel, progress), the clock
// every wait and deadline reads, and the test switches.
struct EngineIo {
    std::function<void(const std::string&)> log;
    ui::ProgressRenderer* progress = nullptr;
    Clock* clock = &real_clock();
    TestSwitches test;
};

class Engine {
public:
    Engine(const config::Config& config, const state::StateDir& state, Nodes& nodes, EngineIo io);

    [[nodiscard]] Result<Prepared> prepare(const TransferRequest& request);
    // Reserve every alias and write the definition and first event. Returns the job id; the
    // job is then driven by jobs::Driver (driver.hpp).
    [[nodiscard]] Result<std::string> create(const Prepared& prepared);

private:
    Status route_for(Prepared& p, const TransferRequest& request);

    const config::Config& m_config;
    state::StateDir m_state;
    Nodes& m_nodes;
    EngineIo m_io;
};

// Digest of "the same command": operation, resource, source, target, request.
std::string request_digest(const TransferRequest& request, const std::vector<std::string>& aliases,
                           const std::string& source, const std::string& target);

}  // namespace archctl::jobs
