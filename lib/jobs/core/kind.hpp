#pragma once
// Internal to lib/jobs: what the one job driver (driver.cpp) asks of a kind of job.
//
// A kind — transfer (archive, unarchive) or evict — owns its definition and ledger shapes, its
// steps, and what failing or cancelling means for it. The driver owns everything they share:
// load the definition, take the job's lock, open (or rebuild) the ledger, run the steps in order
// with a durable ledger write and a crash point after each, stop cleanly, and finish.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/core/ledger.hpp"
#include "lib/jobs/core/outage.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/jobs/core/step.hpp"
#include "lib/jobs/core/job_row.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {

// One job of a kind, loaded from its definition. The driver holds the job's lock around every
// call that changes it.
class KindRun {
public:
    virtual ~KindRun() = default;

    // "archive 1838bf9a70c1 seedbox → nas": the lock's owner text.
    virtual std::string summary() const = 0;
    // Take the stored ledger (NOT_FOUND before the first step boundary, CORRUPT when unreadable)
    // or rebuild it from evidence, to run the job.
    [[nodiscard]] virtual Status open(Result<nlohmann::json> ledger) = 0;
    // After an outage interrupted a step: forget what the step did in memory and take the stored
    // ledger again (as a rerun after a crash would); by default open().
    [[nodiscard]] virtual Status reload(Result<nlohmann::json> ledger) { return open(std::move(ledger)); }
    // Take the stored ledger as it is (a lost one reads as a fresh ledger), to cancel the job.
    virtual void read(const Result<nlohmann::json>& ledger) = 0;
    virtual JobState state() const = 0;
    // The steps' names, in order; the next step to run is the ledger's, an index into them
    // (steps().size(): done).
    virtual std::vector<std::string> steps() const = 0;
    virtual std::size_t step_index() const = 0;
    virtual void set_step_index(std::size_t i) = 0;
    // The prefix of the crash point after each step's ledger write: "job.step.", "evict.step.".
    virtual const char* crash_prefix() const = 0;

    // A new session of this process: its record, and whatever every run restores first.
    [[nodiscard]] virtual Status begin() = 0;
    // Before each step: the live checks and the stops (budgets, deadline, Ctrl-C).
    virtual StepResult before_step() = 0;
    virtual StepResult run_step(std::size_t i) = 0;
    // Durable records: the ledger and one event.
    [[nodiscard]] virtual Status save() = 0;
    [[nodiscard]] virtual Status event(const std::string& type, nlohmann::json fields) = 0;
    // Close this session's record in the ledger (saved with the next save()): "complete", "error".
    virtual void end_session(const std::string& reason) = 0;
    // The session ends with a clean stop: whatever the kind does at a stop, then its record.
    virtual void stop_session(StopReason reason) { end_session(to_string(reason)); }
    // The last step ran: mark the job done; returns the "done" event's fields.
    virtual nlohmann::json mark_done() = 0;
    // After the "done" record, and for a job found ended (its run killed before it released):
    // give the resource back (release the job's reservation).
    virtual void release() = 0;
    // A failure: compensate or leave an explicit cleanup-required state, record it.
    virtual RunResult fail(const Error& e) = 0;
    // A job left `compensating` (its compensation could not finish): finish it now. Done: the
    // job ends in the state its failure or cancel decided; an outage leaves it compensating.
    virtual RunResult finish_compensation() { return fail(Error(ErrorCode::INTERNAL, "this kind of job never compensates later")); }
    // Cancel (under the lock): compensate before the point of no return, finish after it.
    virtual RunResult cancel() = 0;
    // True when cancelling can only mean finishing the job (evict after the removal), and why.
    virtual bool cancel_finishes() const { return false; }
    virtual std::string cancel_finishes_text() const { return {}; }
    // What this kind reports with a run's result (evict: files removed, bytes freed).
    virtual nlohmann::json detail() const { return nlohmann::json::object(); }
    // Payload bytes this run moved for the job (copied and synced).
    virtual std::uint64_t bytes_moved() const { return 0; }
};

// A kind's steps before `done` (StepNames in ledger.hpp), for steps().
template <class Step, std::size_t N>
std::vector<std::string> step_names(const StepNames<Step, N>& steps) {
    return {steps.names.begin(), steps.names.end() - 1};
}

// A kind of job.
struct Kind {
    const char* name;
    bool (*owns)(const nlohmann::json& definition);
    Result<std::unique_ptr<KindRun>> (*load)(RunEnv& env, const nlohmann::json& definition);
    // One row for `job list` and `status`. The row keeps the definition: a caller done with its
    // document moves it in (at 100,000 files it is ~70 MB of JSON).
    JobSummary (*summarize)(const state::JobStore& store, const std::string& id, nlohmann::json definition);
    // One line of `job show` for an event (empty: the type alone says it).
    std::string (*describe_event)(const nlohmann::json& event);
};

const Kind& transfer_kind();
const Kind& evict_kind();
// The kind that owns a stored definition. A definition no kind claims is read as a transfer,
// whose parser names what is wrong with it.
const Kind& kind_of(const nlohmann::json& definition);

}  // namespace archctl::jobs
