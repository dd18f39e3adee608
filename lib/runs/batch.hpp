#pragma once
// A batch (docs/design.md "Many resources and tier policies"): several RES and/or filters over the
// source node's live torrent list, one ordinary job per chosen resource, unfinished jobs first,
// under shared budgets, past failures.
//
// Call order (cli/batch.cpp renders each stage):
//   LivePlanner planner(transfers, evictor, spec);
//   auto planned = plan_batch(nodes, clock, spec, planner, PlanMode::for_run);  // choose, plan each
//   ... show the plan, confirm the batch_digest ...
//   BatchRun run = run_batch(*planned, tools, options, on_event);               // create and drive
//
// Planning reads one snapshot (jobs::transfer::PlanSnapshot): each node's torrent list once, the filters
// choosing from the source's, and each route once, whatever the number of resources.
// A plan older than k_replan_after when its job is about to be created (earlier jobs of the
// batch ran since) is made again from live state (a fresh snapshot); one that changed runs only
// with `yes`, never on a confirmation given for the old one.
//
// What a crash leaves: what each job left (lib/jobs); the batch itself writes nothing, and a
// rerun of the same command continues the unfinished jobs first.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/base/result.hpp"
#include "lib/config/criteria.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/runs/run_many.hpp"

namespace archctl::runs {

enum class BatchOp { archive, unarchive, evict };
// "archive", "unarchive", "evict".
[[nodiscard]] const char* to_string(BatchOp op);

// What the plan says to do with one resource.
enum class Action {
    new_job,        // a new job of the batch's operation
    continue_job,   // an unfinished job of the resource, continued first
    nothing_to_do,  // the target already holds it, or it was named twice
    refused,        // its own command would refuse it (the others go ahead)
    skipped,        // not on the source node
    stopped,        // cannot be planned now (a route not ready): a clean stop
};
// The action as --json says it: the operation's name for a new job, "continue",
// "nothing_to_do", "refused", "skipped", "stopped".
[[nodiscard]] std::string to_string(Action action, BatchOp op);

// How the resource's run ended.
enum class ItemOutcome { not_run, done, stopped, failed, nothing_to_do };
// "not_run", "done", "stopped", "failed", "nothing_to_do".
[[nodiscard]] const char* to_string(ItemOutcome outcome);

// What the batch works on: the resources named, the filters (when any), the nodes and options
// each resource's own command would take.
struct BatchSpec {
    BatchOp op = BatchOp::archive;
    std::vector<std::string> res;
    std::optional<config::Criteria> criteria;  // filters given: choose from the source's torrents
    std::string from, to;
    bool verify_transit = false;
    plan::VerifyArchive verify_archive = plan::VerifyArchive::no;
    bool no_wait = false;
};

// One resource of the batch: how it was chosen, what its plan says, and how its run ended.
struct BatchItem {
    std::string res;       // as given, or the full qB id a filter chose
    std::string id, short_id, name;
    std::string rule;      // why a filter chose it
    Action action = Action::new_job;
    std::string reason;
    std::optional<Error> error;
    std::uint64_t files = 0, bytes = 0;
    std::string digest;
    std::optional<jobs::transfer::Prepared> transfer;
    std::optional<jobs::evict::EvictPrepared> evict;
    std::optional<std::string> existing_job;
    ItemOutcome outcome = ItemOutcome::not_run;
    std::optional<jobs::RunResult> result;
    SteadyTime prepared_at{};
};

// A resource as chosen, not yet planned.
[[nodiscard]] BatchItem item_of(std::string res, std::string id, std::string name, std::string rule);

// read_only: `plan` looks routes up; for_run: the command provisions them on demand.
enum class PlanMode { read_only, for_run };

// How each resource is planned and its job created: the kind's planner in a command
// (LivePlanner), anything a test scripts in a unit test.
class ItemPlanner {
public:
    virtual ~ItemPlanner() = default;
    // Plan `it` as its own command would, from `snapshot` (what the batch read once): action,
    // reason/error, id, name, files, bytes, digest, the existing job and the prepared plan. `it`
    // comes with its plan fields cleared.
    virtual void prepare(BatchItem& it, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot) = 0;
    // Create the job of a new_job item; its id.
    [[nodiscard]] virtual Result<std::string> create(const BatchItem& it) = 0;
};

// TransferPlanner for archive/unarchive, Evictor for evict.
class LivePlanner final : public ItemPlanner {
public:
    LivePlanner(jobs::transfer::TransferPlanner& transfers, jobs::evict::Evictor& evictor, const BatchSpec& spec);
    void prepare(BatchItem& it, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot) override;
    [[nodiscard]] Result<std::string> create(const BatchItem& it) override;

private:
    void prepare_evict(BatchItem& it, const std::string& source);
    void prepare_transfer(BatchItem& it, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot);

    jobs::transfer::TransferPlanner& m_transfers;
    jobs::evict::Evictor& m_evictor;
    const BatchSpec& m_spec;
};

// Plan one resource (again) from `snapshot`: clears its plan, stamps prepared_at, asks the
// planner. A resource not on the source stays skipped.
void prepare_item(ItemPlanner& planner, Clock& clock, const std::string& source, PlanMode mode, jobs::transfer::PlanSnapshot& snapshot,
                  BatchItem& it);

// A torrent on the source the filters passed over: their conditions hold but an exclusion or its
// state blocks it, or it is still downloading and its category, tag and name do not rule it out
// (a torrent that is not complete is never chosen, whatever the other conditions say).
struct NotChosen {
    std::string id, short_id, name;
    std::string reason;  // "still downloading (63%)", "category keep", ...
};

struct Planned {
    std::vector<BatchItem> items;
    std::string source;                          // the node the filters read ("" for RES alone without --from)
    std::vector<NotChosen> not_chosen;          // every torrent the filters passed over, in the source's name order
};

// The chosen resources, in the source's name order (several RES alone: as given), each
// planned from one snapshot of `nodes`; the same resource named twice is one job. USAGE when the
// source node is ambiguous.
[[nodiscard]] Result<Planned> plan_batch(jobs::Nodes& nodes, Clock& clock, const BatchSpec& spec, ItemPlanner& planner, PlanMode mode);

struct Totals {
    std::size_t resources = 0, new_jobs = 0, continued = 0, nothing = 0, refused = 0, skipped = 0;
    std::uint64_t files = 0, bytes = 0;  // of the new jobs
};
[[nodiscard]] Totals totals_of(const std::vector<BatchItem>& items);

// Digest of what the batch would start: the plan of every new job, in order (what a
// confirmation token is bound to).
[[nodiscard]] std::string batch_digest(const std::vector<BatchItem>& items, BatchOp op);

// How old a plan may be when its job is created; older ones are made again from live state.
inline constexpr std::chrono::seconds k_replan_after{60};

// What a batch run works with.
struct BatchTools {
    ItemPlanner& planner;
    RunJob run;      // drive_with(driver, spec.verify_archive) in a command
    Clock& clock;
    jobs::Nodes& nodes;  // what a re-plan reads afresh
};

struct BatchRunOptions {
    jobs::Budgets budgets;
    SteadyTime started{};  // the run's start (planning counts toward the deadline)
    bool yes = false;      // a plan that changed at its re-plan still runs
};

// What happened to one item of the run, for the command to say as it happens.
enum class BatchStep {
    continuing,   // its unfinished job is driven next
    settled,      // its re-plan left no job to run (nothing to do, refused, stopped)
    changed,      // its re-plan changed and `yes` was not given: refused
    not_created,  // creating its job failed
    created,      // its job was created and is driven next
    ran,          // its job's turn ended (`turn`)
};
struct BatchEvent {
    BatchStep step;
    std::size_t n = 0, of = 0;  // the item's place in the run's order, from 1
    const BatchItem& item;
    std::string job_id;
    const JobRun* turn = nullptr;
};
using OnBatchEvent = std::function<void(const BatchEvent&)>;

// A job's stop as a batch says it: the stop's text, or for a job another archctl drives the
// LOCKED error's message; "" for a job that did not stop.
[[nodiscard]] std::string stop_text_of(const JobRun& turn);

struct BatchRun {
    RunSummary summary;
    // Why the run has work left when it has: the stop that ended it, else the last job's stop
    // (or that another archctl drives it); "" when nothing stopped.
    std::string stop_text;
};

// Create and drive the jobs: unfinished ones first, then the new ones in order, under shared
// budgets; a failure does not stop the rest (run_many's rule for every stop). Sets each item's
// outcome and result.
[[nodiscard]] BatchRun run_batch(Planned& planned, BatchTools tools, const BatchRunOptions& options, const OnBatchEvent& on_event);

// After a run: the items that failed and those with work left (stopped or not run).
struct Tally {
    std::size_t failures = 0, unfinished = 0;
    const BatchItem* first_failed = nullptr;
};
[[nodiscard]] Tally tally(const std::vector<BatchItem>& items);

}  // namespace archctl::runs
