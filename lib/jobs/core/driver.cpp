// The one job driver: load → lock → ledger (or rebuild) → steps under budgets → finish, for
// every kind of job (kind.hpp).

#include "lib/jobs/core/driver.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/jobs/core/notify.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {
namespace {

const Kind* const k_kinds[] = {&transfer_kind(), &evict_kind()};

// Whether the stored definition of `id` is a job of a known kind, without building it (a
// 100,000-file job's definition is a JSON document of ~20 MB): it must be JSON — a torn
// definition never became a job — and its "op" one a kind claims. The definition is written with
// dump(2), so the top-level "op" is the line `  "op": "<op>"`; else it is parsed whole.
bool is_known_job(const state::JobStore& store, const std::string& id) {
    auto text = read_file(store.dir_of(id) + "/definition.json");
    if (!text.ok() || !nlohmann::json::accept(text.value())) return false;
    nlohmann::json op_only;
    constexpr std::string_view k_key = "\n  \"op\": \"";
    const std::size_t at = text->find(k_key);
    const std::size_t from = at + k_key.size();
    const std::size_t end = at == std::string::npos ? std::string::npos : text->find('"', from);
    if (end != std::string::npos && text->find('\\', from) > end) {
        op_only = {{"op", text->substr(from, end - from)}};
    } else {
        auto whole = nlohmann::json::parse(text.value(), nullptr, false);
        if (!whole.is_object() || !whole.contains("op")) return false;
        op_only = {{"op", whole["op"]}};
    }
    return std::any_of(std::begin(k_kinds), std::end(k_kinds), [&](const Kind* k) { return k->owns(op_only); });
}

// The ledger's next step by name ("done" after the last).
std::string step_name(const KindRun& job) {
    const std::vector<std::string> steps = job.steps();
    const std::size_t i = job.step_index();
    return i < steps.size() ? steps[i] : "done";
}

RunResult stopped(KindRun& job, const std::string& job_id, const StepResult& r) {
    RunResult result;
    result.job_id = job_id;
    result.outcome = RunOutcome::stopped;
    result.stop_reason = r.reason;
    result.stop_text = r.text;
    result.step = step_name(job);
    result.detail = job.detail();
    result.bytes_moved = job.bytes_moved();
    return result;
}

// An outage ended the run before the job's records could be read: nothing was written.
RunResult stopped_unopened(const std::string& job_id, const StepResult& r) {
    RunResult result;
    result.job_id = job_id;
    result.outcome = RunOutcome::stopped;
    result.stop_reason = r.reason;
    result.stop_text = r.text;
    return result;
}

// The stored ledger again, waiting out outages (a lost ledger is rebuilt from the nodes).
// next: reloaded; stop: the wait ended first; fail: the ledger cannot be read or rebuilt.
StepResult reload(KindRun& job, const RunEnv& env, const std::string& job_id, OutageWait& outage) {
    return retry_through_outage(outage, [&] { return job.reload(env.store.ledger(job_id)); });
}

// The ledger's step, after the live checks and stops before it (next when the ledger says done).
StepResult run_stored_step(KindRun& job, const std::vector<std::string>& steps) {
    const std::size_t i = job.step_index();
    if (i >= steps.size()) return {};
    StepResult r = job.before_step();
    return r.kind == StepResult::next ? job.run_step(i) : r;
}

// How the ledger's step ended, through outages.
struct StepEnd {
    StepResult result;
    // The stored ledger could not be read again after an outage: the job's records stay as they
    // are stored (nothing in memory may be written over them).
    bool unread = false;
};

// The ledger's step, tried again while an outage interrupts it and the window lasts. Whether the
// run goes on or stops, after an outage the job continues from what is stored (which may be
// another step), not from what the interrupted step left in memory.
StepEnd run_through_outages(KindRun& job, const RunEnv& env, const std::string& job_id, OutageWait& outage,
                            const std::vector<std::string>& steps) {
    StepEnd end;
    end.result = retry_through_outage(
        [&] { return run_stored_step(job, steps); },
        [](const StepResult& r) { return is_outage(r); },
        [&](const StepResult& interrupted) -> std::optional<StepResult> {
            StepResult w = outage.wait(interrupted.error);
            StepResult reloaded = reload(job, env, job_id, outage);
            end.unread = reloaded.kind != StepResult::next;
            if (end.unread) return reloaded;
            if (w.kind != StepResult::next) return w;
            return std::nullopt;
        });
    return end;
}

// The steps from the ledger's step to the end. A clean stop records the session and its reason;
// an outage that outlasts its window stops the run with reason 'waiting', the job unfinished.
RunResult drive(KindRun& job, const RunEnv& env, const std::string& job_id, OutageWait& outage) {
    RunResult result;
    result.job_id = job_id;
    const std::vector<std::string> steps = job.steps();
    while (job.step_index() < steps.size()) {
        StepEnd end = run_through_outages(job, env, job_id, outage, steps);
        const StepResult& r = end.result;
        if (end.unread) return r.kind == StepResult::fail ? job.fail(r.error) : stopped(job, job_id, r);
        if (r.kind == StepResult::fail) return job.fail(r.error);
        if (r.kind == StepResult::stop) {
            job.stop_session(r.reason);
            Status saved = job.save();
            if (!saved.ok()) return job.fail(saved.error());
            Status noted = job.event("stopped", {{"reason", to_string(r.reason)}, {"step", step_name(job)}, {"text", r.text}});
            if (!noted.ok()) return job.fail(noted.error());
            return stopped(job, job_id, r);
        }
        const std::size_t i = job.step_index();
        if (i >= steps.size()) break;  // the stored ledger read after an outage says the steps are done
        if (outage.waiting()) env.log(fmt::format("archctl: job {}: reachable again; going on", job_id));
        outage.clear();
        job.set_step_index(i + 1);
        Status saved = job.save();
        if (!saved.ok()) return job.fail(saved.error());
        crash_point(job.crash_prefix() + steps[i]);
    }
    nlohmann::json fields = job.mark_done();
    job.end_session("complete");
    Status saved = job.save();
    if (!saved.ok()) return failed_run(job_id, saved.take_error());
    Status noted = job.event("done", std::move(fields));
    if (!noted.ok()) return failed_run(job_id, noted.take_error());
    job.release();
    result.outcome = RunOutcome::done;
    result.step = "done";
    result.detail = job.detail();
    result.bytes_moved = job.bytes_moved();
    return result;
}

}  // namespace

const Kind& kind_of(const nlohmann::json& definition) {
    for (const Kind* k : k_kinds)
        if (k->owns(definition)) return *k;
    return transfer_kind();
}

SharedBudgets::SharedBudgets(Budgets base, SteadyTime started) : m_base(std::move(base)), m_started(started) {}

Budgets SharedBudgets::next() const {
    Budgets b = m_base;
    b.moved_before = m_moved;
    b.run_started = m_started;
    return b;
}

std::optional<SharedBudgets::Stop> SharedBudgets::exhausted(SteadyTime now) const {
    std::optional<StepResult> stop = budget_stop(m_base, m_moved, m_started, now);
    if (!stop) return std::nullopt;
    return Stop{stop->reason, std::move(stop->text)};
}

Driver::Driver(const config::Config& config, const state::StateDir& state, Nodes& nodes, JobIo io)
    : m_config(config), m_state(state), m_nodes(nodes), m_io(std::move(io)) {}

RunResult Driver::run(const std::string& job_id, const Budgets& budgets, plan::VerifyArchive verify_archive) {
    std::optional<JobState> before = state_of(job_id);
    return finish_run(run_job(job_id, budgets, verify_archive), before);
}

RunResult Driver::cancel(const std::string& job_id) {
    std::optional<JobState> before = state_of(job_id);
    return finish_run(cancel_job(job_id), before);
}

std::optional<JobState> Driver::state_of(const std::string& job_id) const {
    auto l = state::JobStore(m_state).ledger(job_id);
    if (!l.ok()) return std::nullopt;
    return parse_job_state(l.value().value("state", "running"));
}

RunResult Driver::finish_run(RunResult result, std::optional<JobState> before) {
    state::JobStore store(m_state);
    // The row counts the definition's files and reads none of them.
    auto definition = store.definition_outline(result.job_id);
    if (!definition.ok()) return result;
    const Kind& kind = kind_of(definition.value());
    JobSummary row = kind.summarize(store, result.job_id, std::move(definition).value());
    result.row = row.to_json();
    // The index is a cache: when this fails the next reader retires the job from its ledger.
    if (retirable(row)) {
        Status retired = state::JobIndex(m_state).retire(row.id, result.row, row.nodes);
        if (!retired.ok()) m_io.log("archctl: warning: the job index was not updated: " + retired.error().message);
    }
    // A job already in the state the run left it in (ended earlier, or still needing attention
    // after another try) was notified when it got there.
    bool unchanged = before && *before == row.ledger.state;
    bool elsewhere = result.error.is(ErrorCode::LOCKED) || result.error.is(ErrorCode::JOB_FINISHED);
    NotifySettings settings{m_config.notify_exec, m_config.notify_url, std::chrono::milliseconds(10000)};
    if (settings.empty() || unchanged || elsewhere || result.outcome == RunOutcome::stopped) return result;
    if (auto event = notify_event(row))
        notify_job_end(settings, notify_document(row, *event), [&](const std::string& line) { m_io.log("archctl: warning: " + line); });
    return result;
}

RunResult Driver::run_job(const std::string& job_id, const Budgets& budgets, plan::VerifyArchive verify_archive) {
    state::JobStore store(m_state);
    auto definition = store.definition(job_id);
    if (!definition.ok()) return failed_run(job_id, definition.take_error());
    RunEnv env{m_config, m_state, m_nodes, store, m_io, budgets, verify_archive};
    auto loaded = kind_of(definition.value()).load(env, definition.value());
    if (!loaded.ok()) return failed_run(job_id, loaded.take_error());
    // The kind holds its typed definition; the document (as large as the job's file list) goes.
    { const nlohmann::json gone = std::move(definition).value(); }
    KindRun& job = *loaded.value();
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), job.summary(), notices);
    for (const auto& n : notices) env.log("archctl: " + n);
    if (!lock.ok())
        return failed_run(job_id, Error(ErrorCode::LOCKED, fmt::format("job {} is running: {}", job_id, lock.error().message), lock.error().hint));
    OutageWait outage(env);
    StepResult opened = retry_through_outage(outage, [&] { return job.open(store.ledger(job_id)); });
    if (opened.kind == StepResult::fail) return failed_run(job_id, std::move(opened.error));
    if (opened.kind == StepResult::stop) return stopped_unopened(job_id, opened);
    if (job.state() == JobState::compensating) return job.finish_compensation();
    if (job.state() == JobState::done || job.state() == JobState::failed || job.state() == JobState::cancelled) {
        // A run killed between the job's end and its release left the reservation: it goes now.
        job.release();
        RunResult r;
        r.job_id = job_id;
        r.step = step_name(job);
        r.detail = job.detail();
        r.outcome = job.state() == JobState::done ? RunOutcome::done : RunOutcome::failed;
        if (job.state() != JobState::done)
            r.error = Error(ErrorCode::JOB_FINISHED, fmt::format("job {} already ended: {}", job_id, to_string(job.state())));
        return r;
    }
    StepResult begun = retry_through_outage(outage, [&] { return job.begin(); });
    if (begun.kind == StepResult::fail) return job.fail(begun.error);
    if (begun.kind == StepResult::stop) return stopped(job, job_id, begun);
    return drive(job, env, job_id, outage);
}

RunResult Driver::cancel_job(const std::string& job_id) {
    state::JobStore store(m_state);
    auto definition = store.definition(job_id);
    if (!definition.ok()) return failed_run(job_id, definition.take_error());
    // A cancel waits out an outage as long as a run would.
    Budgets budgets;
    budgets.outage_wait = std::chrono::seconds(m_config.outage_wait_s);
    RunEnv env{m_config, m_state, m_nodes, store, m_io, budgets, plan::VerifyArchive::no};
    auto loaded = kind_of(definition.value()).load(env, definition.value());
    if (!loaded.ok()) return failed_run(job_id, loaded.take_error());
    KindRun& job = *loaded.value();
    job.read(store.ledger(job_id));
    if (job.cancel_finishes()) {
        warn_unrecorded(env, store.append_event(job_id, "cancel_requested", {{"effect", job.cancel_finishes_text()}}),
                        "the cancel request");
        return run_job(job_id, budgets, plan::VerifyArchive::no);
    }
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), job.summary(), notices);
    if (!lock.ok())
        return failed_run(job_id, Error(ErrorCode::LOCKED, fmt::format("job {} is running: {}", job_id, lock.error().message),
                                     "stop it first (Ctrl-C in its terminal), then cancel"));
    job.read(store.ledger(job_id));
    if (job.state() == JobState::compensating) return job.finish_compensation();
    if (job.state() == JobState::done || job.state() == JobState::cancelled || job.state() == JobState::failed) {
        job.release();  // as in run_job: an ended job holds nothing
        RunResult r;
        r.job_id = job_id;
        r.step = step_name(job);
        r.outcome = RunOutcome::done;
        r.ended = to_string(job.state());
        return r;
    }
    return job.cancel();
}

Result<std::vector<std::string>> Driver::unfinished() {
    state::JobStore store(m_state);
    state::JobIndex index(m_state);
    if (!index.built()) ARCHCTL_TRY_STATUS(rebuild_job_index(store));
    ARCHCTL_TRY_ASSIGN(auto ids, index.active());
    std::vector<std::string> out;
    for (const auto& id : ids) {
        // A torn definition never became a job (its reservation is released as stale).
        if (!is_known_job(store, id)) continue;
        auto l = store.ledger(id);
        JobState s = l.ok() ? parse_job_state(l.value().value("state", "running")) : JobState::running;
        if (s == JobState::running || s == JobState::cleanup_required || s == JobState::compensating) out.push_back(id);
    }
    return out;
}

std::string Driver::describe_event(const JobSummary& row, const nlohmann::json& event) {
    return kind_of(row.definition).describe_event(event);
}

}  // namespace archctl::jobs
