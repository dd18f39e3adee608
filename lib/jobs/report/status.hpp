#pragma once
// What `archctl status` reports, read live (docs/design.md "Commands"): every node probed, the free space at
// its qBittorrent root, the routes in live Syncthing config, every job, and the placements and
// coverage of each resource a job names — or, for one resource or job, that resource alone.
// Nothing here fails because a node is down: an unreadable node is reported in its row.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/lock_file.hpp"
#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/jobs/report/placements.hpp"
#include "lib/jobs/transfer/summary.hpp"
#include "lib/routes/routes.hpp"
#include "lib/session/node_probe.hpp"
#include "lib/state/state_dir.hpp"

namespace archctl::jobs::report {

struct Overview {
    std::vector<session::NodeProbe> probes;          // every configured node, by name
    std::map<std::string, std::uint64_t> free;       // free bytes at each node's qBittorrent root
    std::map<std::string, std::string> free_errors;  // why a node has no `free`: it cannot be measured
    std::optional<routes::Listing> routes;
    std::string routes_error;                        // why `routes` is missing
    std::vector<JobSummary> jobs;
    std::string jobs_error;                          // why `jobs` is missing
    std::vector<ResourceStatus> resources;           // each resource a job names, oldest job first
    bool state_readable = false;
};

// The overview over `sessions` (one per node, shared by every read). `state` is null when the
// state directory could not be opened (`state_error` says why): nodes are still reported.
[[nodiscard]] Overview read_overview(const config::Config& config, const state::StateDir* state, const std::string& state_error,
                                     Nodes& sessions);

// One resource: named by a job id (that job) or by RES (every job of it).
struct Focus {
    ResourceStatus resource;
    std::vector<JobSummary> jobs;
    std::string job_id;   // set when a job id named it
    std::string qb_id;    // set when RES named it
};
// `count_shared`: evict.count_shared_copies (the coverage counts copies other torrents share).
[[nodiscard]] Result<Focus> read_focus(const state::StateDir& state, Nodes& sessions, const std::string& target, bool count_shared = false);

// What `status` says about one job beyond its row: the process driving it (the live holder of
// its lock), its step and percent, and — for a job that needs a look or a rerun — the commands
// that resolve it, in the order to run them ("archctl resume ID", "archctl job show ID", …).
struct JobActivity {
    std::string job_id, state, step;
    std::optional<LockRecord> driver;   // set while a live archctl holds the job
    std::optional<double> percent;      // transfers: bytes on the target of the job's delta
    std::uint64_t bytes_done = 0, bytes_total = 0;
    std::vector<std::string> resolve;   // empty: nothing to do (running, waiting for room, or done)
    std::string why;                    // one line: why it is listed
    // A job whose target cannot take it (docs/design.md "A job that cannot land"): nothing a
    // person must do, the next run goes on with it and, past the bound, undoes and releases it.
    struct WaitingForRoom {
        std::string node, since, reason;  // since: RFC 3339, when a run first stopped on it
        std::uint32_t runs = 0;           // runs that ended on it so far
        std::string release_from;         // RFC 3339: the first time a run may release it ("" when since does not read)
        std::uint32_t release_runs = 0;   // ... once the job has ended this many runs on it
    };
    std::optional<WaitingForRoom> waiting;

    bool running() const { return driver.has_value(); }
    bool needs_action() const { return !resolve.empty(); }
    nlohmann::json to_json() const;
};
[[nodiscard]] JobActivity activity_of(const state::StateDir& state, const JobSummary& job);

// "job X is being driven by another archctl (pid N)" — the holder its lock record names (with its
// host when that is another machine); without the pid when the lock is gone or unreadable.
[[nodiscard]] std::string driven_elsewhere(const state::StateDir& state, const std::string& job_id);

// Free bytes at each node's qBittorrent root, as NodeSession::space measures them; a node it
// cannot measure (its operations do not answer, or its filesystem does not say) is in `errors`
// with why instead.
struct FreeAtRoots {
    std::map<std::string, std::uint64_t> free;
    std::map<std::string, std::string> errors;
};
[[nodiscard]] FreeAtRoots free_at_qb_roots(Nodes& sessions);

}  // namespace archctl::jobs::report
