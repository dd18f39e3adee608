#pragma once
// What a run of any kind of job works with and ends with (docs/design.md "Budgets, outages and
// stops"): the budgets it runs under, how it talks to the person, the environment a kind's steps
// see, and its result.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/nodes.hpp"
#include "lib/node/wire/ops_transfer.hpp"
#include "lib/plan/coverage.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/ui/progress.hpp"

namespace archctl::jobs {

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

// Why a run stopped cleanly (exit 10: nothing is lost, a rerun goes on). Its name is the JSON's
// stop_reason and the reason a ledger's session records.
enum class StopReason { none, waiting, budget, deadline, disk, interrupt };

// "waiting", "budget", "deadline", "disk", "interrupt"; "" for none.
[[nodiscard]] const char* to_string(StopReason reason);

struct RunResult {
    RunOutcome outcome = RunOutcome::done;
    StopReason stop_reason = StopReason::none;  // set when stopped
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

// The result of a run of `job_id` that failed with `e` and did nothing more.
[[nodiscard]] RunResult failed_run(const std::string& job_id, Error e);

// Test-only switches, set by the command from ARCHCTL_TEST_* (tests/README.md); the library
// never reads the environment. Empty/zero: the normal behaviour.
struct TestSwitches {
    node::MethodChoice stage_method = node::MethodChoice::automatic;  // force the node's stage method
    std::size_t unlink_batch = 0;    // evict: files unlinked per revalidated batch (default 1000)
};

// How a job talks to the person (log lines above the progress panel, progress), the clock
// every wait and deadline reads, and the test switches.
struct JobIo {
    std::function<void(const std::string&)> log;
    ui::ProgressRenderer* progress = nullptr;
    Clock* clock = &real_clock();
    TestSwitches test;
};

// Everything a run of any kind works with.
struct RunEnv {
    const config::Config& config;
    const state::StateDir& state_dir;
    Nodes& nodes;
    state::JobStore& store;
    JobIo& io;
    Budgets budgets;
    plan::VerifyArchive verify_archive = plan::VerifyArchive::no;

    void log(const std::string& line) const {
        if (io.log) io.log(line);
    }
};

}  // namespace archctl::jobs
