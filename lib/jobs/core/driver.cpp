// The one job driver: load → lock → ledger (or rebuild) → steps under budgets → finish, for
// every kind of job (kind.hpp).

#include "lib/jobs/core/driver.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/jobs/core/notify.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/tombstones.hpp"

namespace archctl::jobs {
namespace {

const Kind* const k_kinds[] = {&transfer_kind(), &evict_kind()};

// The kind that owns a stored definition. A definition no kind claims is read as a transfer,
// whose parser names what is wrong with it.
const Kind& kind_of(const nlohmann::json& definition) {
    for (const Kind* k : k_kinds)
        if (k->owns(definition)) return *k;
    return transfer_kind();
}

RunResult failure(const std::string& job_id, Error e) {
    RunResult r;
    r.job_id = job_id;
    r.outcome = RunOutcome::failed;
    r.error = std::move(e);
    return r;
}

// A durable write that failed after the outcome was decided: the outcome stands, the run says
// what could not be recorded (the next run re-derives it from evidence).
void warn_unrecorded(const RunEnv& env, const Status& s, const std::string& what) {
    if (!s.ok()) env.log(fmt::format("archctl: warning: {} was not recorded: {}", what, s.error().message));
}

std::size_t index_of(const std::vector<std::string>& steps, const std::string& step) {
    std::size_t i = 0;
    while (i < steps.size() && step != steps[i]) ++i;
    return i;
}

RunResult stopped(KindRun& job, const std::string& job_id, const StepResult& r) {
    RunResult result;
    result.job_id = job_id;
    result.outcome = RunOutcome::stopped;
    result.stop_reason = r.reason;
    result.stop_text = r.text;
    result.step = job.step();
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
    for (;;) {
        Status s = job.reload(env.store.ledger(job_id));
        if (s.ok()) return {};
        if (!is_outage(s.error())) return s.take_error();
        StepResult w = outage.wait(s.error());
        if (w.kind != StepResult::next) return w;
    }
}

// The steps from the ledger's step to the end. A clean stop records the session and its reason.
// A step an outage interrupted is retried from the stored ledger while the outage window lasts;
// past it the run stops with reason 'waiting' and the job stays unfinished.
RunResult drive(KindRun& job, const RunEnv& env, const std::string& job_id, OutageWait& outage) {
    RunResult result;
    result.job_id = job_id;
    const std::vector<std::string> steps = job.steps();
    for (std::size_t i = index_of(steps, job.step()); i < steps.size(); ++i) {
        StepResult r = job.before_step();
        if (r.kind == StepResult::next) r = job.run_step(steps[i]);
        if (r.kind == StepResult::fail && is_outage(r.error)) {
            StepResult w = outage.wait(r.error);
            // Whether it goes on or stops, the job continues from what is stored, not from what
            // the interrupted step left in memory.
            StepResult reloaded = reload(job, env, job_id, outage);
            if (reloaded.kind == StepResult::fail) return job.fail(reloaded.error);
            if (reloaded.kind == StepResult::stop) return stopped(job, job_id, reloaded);
            if (w.kind == StepResult::next) {
                i = index_of(steps, job.step()) - 1;  // the loop's ++i lands on the stored step
                continue;
            }
            r = w;
        }
        if (r.kind == StepResult::fail) return job.fail(r.error);
        if (r.kind == StepResult::stop) {
            job.end_session(r.reason);
            Status saved = job.save();
            if (!saved.ok()) return job.fail(saved.error());
            Status noted = job.event("stopped", {{"reason", r.reason}, {"step", job.step()}, {"text", r.text}});
            if (!noted.ok()) return job.fail(noted.error());
            return stopped(job, job_id, r);
        }
        if (outage.waiting()) env.log(fmt::format("archctl: job {}: reachable again; going on", job_id));
        outage.clear();
        job.set_step(i + 1 < steps.size() ? steps[i + 1] : "done");
        Status saved = job.save();
        if (!saved.ok()) return job.fail(saved.error());
        crash_point(job.crash_prefix() + steps[i]);
    }
    nlohmann::json fields = job.mark_done();
    job.end_session("complete");
    Status saved = job.save();
    if (!saved.ok()) return failure(job_id, saved.take_error());
    Status noted = job.event("done", std::move(fields));
    if (!noted.ok()) return failure(job_id, noted.take_error());
    job.release();
    result.outcome = RunOutcome::done;
    result.step = "done";
    result.detail = job.detail();
    result.bytes_moved = job.bytes_moved();
    return result;
}

}  // namespace

bool is_outage(const Error& e) {
    return e.is(ErrorCode::HTTP_UNREACHABLE) || e.is(ErrorCode::HTTP_TIMEOUT) || e.is(ErrorCode::NODE_UNREACHABLE) ||
           e.is(ErrorCode::QB_SERVER_ERROR) || e.is(ErrorCode::ST_SERVER_ERROR);
}

OutageWait::OutageWait(const RunEnv& env) : m_env(env), m_run_started(env.budgets.run_started.value_or(env.io.clock->steady())) {}

void OutageWait::clear() {
    m_since.reset();
    m_tries = 0;
}

StepResult OutageWait::wait(const Error& e) {
    Clock& clock = *m_env.io.clock;
    const SteadyTime now = clock.steady();
    if (!m_since) {
        m_since = now;
        m_env.log(fmt::format("archctl: waiting: {} (retrying for up to {})", e.message, format_duration(m_env.budgets.outage_wait.count())));
    }
    auto text = [&](const std::string& why) { return fmt::format("{}: {}", why, e.message); };
    if (m_env.budgets.no_wait) return StepResult::stopped("waiting", text("unreachable (--no-wait)"));
    if (now - *m_since >= m_env.budgets.outage_wait)
        return StepResult::stopped("waiting", text(fmt::format("still unreachable after {}", format_duration(m_env.budgets.outage_wait.count()))));
    auto delay = std::chrono::milliseconds(1000) * (1 << std::min(m_tries, 4));
    delay = std::min<std::chrono::milliseconds>(delay, std::chrono::seconds(15));
    ++m_tries;
    const SteadyTime until = std::min(now + delay, *m_since + m_env.budgets.outage_wait);
    while (clock.steady() < until) {
        if (stop_requested()) return StepResult::stopped("interrupt", "interrupted (Ctrl-C) while waiting: " + e.message);
        if (m_env.budgets.max_duration && clock.steady() - m_run_started >= *m_env.budgets.max_duration)
            return StepResult::stopped("deadline", text("deadline reached while waiting"));
        clock.sleep_for(std::chrono::milliseconds(200));
    }
    return {};
}

SharedBudgets::SharedBudgets(Budgets base, SteadyTime started) : m_base(std::move(base)), m_started(started) {}

Budgets SharedBudgets::next() const {
    Budgets b = m_base;
    b.moved_before = m_moved;
    b.run_started = m_started;
    return b;
}

std::optional<SharedBudgets::Stop> SharedBudgets::exhausted(SteadyTime now) const {
    if (stop_requested()) return Stop{"interrupt", "interrupted (Ctrl-C)"};
    if (m_base.max_bytes && m_moved >= *m_base.max_bytes)
        return Stop{"budget", fmt::format("budget reached ({} moved this run, limit {})", format_size(m_moved), format_size(*m_base.max_bytes))};
    if (m_base.max_duration && now - m_started >= *m_base.max_duration)
        return Stop{"deadline", fmt::format("deadline reached ({} this run)", format_duration(m_base.max_duration->count()))};
    return std::nullopt;
}

Driver::Driver(const config::Config& config, const state::StateDir& state, Nodes& nodes, EngineIo io)
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
    auto definition = store.definition(result.job_id);
    if (!definition.ok()) return result;
    JobSummary row = kind_of(definition.value()).summarize(store, result.job_id, definition.value());
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
    if (!definition.ok()) return failure(job_id, definition.take_error());
    RunEnv env{m_config, m_state, m_nodes, store, m_io, budgets, verify_archive};
    auto loaded = kind_of(definition.value()).load(env, definition.value());
    if (!loaded.ok()) return failure(job_id, loaded.take_error());
    KindRun& job = *loaded.value();
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), job.summary(), notices);
    for (const auto& n : notices) env.log("archctl: " + n);
    if (!lock.ok())
        return failure(job_id, Error(ErrorCode::LOCKED, fmt::format("job {} is running: {}", job_id, lock.error().message), lock.error().hint));
    OutageWait outage(env);
    for (;;) {
        Status opened = job.open(store.ledger(job_id));
        if (opened.ok()) break;
        if (!is_outage(opened.error())) return failure(job_id, opened.take_error());
        StepResult w = outage.wait(opened.error());
        if (w.kind != StepResult::next) return stopped_unopened(job_id, w);
    }
    if (job.state() == JobState::compensating) return job.finish_compensation();
    if (job.state() == JobState::done || job.state() == JobState::failed || job.state() == JobState::cancelled) {
        RunResult r;
        r.job_id = job_id;
        r.step = job.step();
        r.detail = job.detail();
        r.outcome = job.state() == JobState::done ? RunOutcome::done : RunOutcome::failed;
        if (job.state() != JobState::done)
            r.error = Error(ErrorCode::JOB_FINISHED, fmt::format("job {} already ended: {}", job_id, to_string(job.state())));
        return r;
    }
    for (;;) {
        Status begun = job.begin();
        if (begun.ok()) break;
        if (!is_outage(begun.error())) return job.fail(begun.error());
        StepResult w = outage.wait(begun.error());
        if (w.kind != StepResult::next) return stopped(job, job_id, w);
    }
    return drive(job, env, job_id, outage);
}

RunResult Driver::cancel_job(const std::string& job_id) {
    state::JobStore store(m_state);
    auto definition = store.definition(job_id);
    if (!definition.ok()) return failure(job_id, definition.take_error());
    // A cancel waits out an outage as long as a run would.
    Budgets budgets;
    budgets.outage_wait = std::chrono::seconds(m_config.outage_wait_s);
    RunEnv env{m_config, m_state, m_nodes, store, m_io, budgets, plan::VerifyArchive::no};
    auto loaded = kind_of(definition.value()).load(env, definition.value());
    if (!loaded.ok()) return failure(job_id, loaded.take_error());
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
        return failure(job_id, Error(ErrorCode::LOCKED, fmt::format("job {} is running: {}", job_id, lock.error().message),
                                     "stop it first (Ctrl-C in its terminal), then cancel"));
    job.read(store.ledger(job_id));
    if (job.state() == JobState::compensating) return job.finish_compensation();
    if (job.state() == JobState::done || job.state() == JobState::cancelled || job.state() == JobState::failed) {
        RunResult r;
        r.job_id = job_id;
        r.step = job.step();
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
        auto def = store.definition(id);
        if (!def.ok() || !std::any_of(std::begin(k_kinds), std::end(k_kinds), [&](const Kind* k) { return k->owns(def.value()); }))
            continue;
        auto l = store.ledger(id);
        JobState s = l.ok() ? parse_job_state(l.value().value("state", "running")) : JobState::running;
        if (s == JobState::running || s == JobState::cleanup_required || s == JobState::compensating) out.push_back(id);
    }
    return out;
}

std::string Driver::describe_event(const JobSummary& row, const nlohmann::json& event) {
    return kind_of(row.definition).describe_event(event);
}

Result<std::vector<JobSummary>> summarize_jobs(const state::JobStore& store) {
    ARCHCTL_TRY_ASSIGN(auto ids, store.list());
    ARCHCTL_TRY_ASSIGN(auto damaged, store.damaged());
    std::vector<JobSummary> out;
    for (const auto& id : ids) {
        auto def = store.definition(id);
        if (!def.ok()) continue;
        out.push_back(kind_of(def.value()).summarize(store, id, def.value()));
        read_lock(store, out.back());
    }
    for (const auto& id : damaged) out.push_back(summarize_damaged(store, id));
    std::sort(out.begin(), out.end(), [](const JobSummary& a, const JobSummary& b) { return a.id < b.id; });
    return out;
}

namespace {

// Tombstone, then the job's records, then (when `forget`) its place in the index. Readers drop a
// finished-log row whose job directory is gone, so a crash before the index changes shows
// nothing removed again.
Status hide(const state::StateDir& dir, const JobSummary& row, bool forget) {
    if (!row.finished() && !row.damaged)
        return Error(ErrorCode::JOB_ACTIVE, fmt::format("job {} is not finished", row.id), fmt::format("cancel it first: 'archctl job cancel {}'", row.id));
    ARCHCTL_TRY_STATUS(state::write_tombstone(dir, {row.id, row.definition.value("request_digest", ""), to_string(row.ledger.state), ""}));
    ARCHCTL_TRY_STATUS(state::JobStore(dir).remove(row.id));
    crash_point("job.removed");
    return forget ? state::JobIndex(dir).forget(row.id, row.retired) : Status{};
}

// The row of one job from its own directory; nullopt when it never became a job (no
// definition and no work), damaged when it worked but its definition is unreadable.
std::optional<JobSummary> summarize_one(const state::JobStore& store, const std::string& id) {
    auto def = store.definition(id);
    if (!def.ok()) {
        if (store.is_damaged(id)) return summarize_damaged(store, id);
        return std::nullopt;
    }
    JobSummary row = kind_of(def.value()).summarize(store, id, def.value());
    read_lock(store, row);
    return row;
}

void sort_rows(std::vector<JobSummary>& rows) {
    std::sort(rows.begin(), rows.end(), [](const JobSummary& a, const JobSummary& b) { return a.id < b.id; });
}

}  // namespace

Status hide_job(const state::StateDir& dir, const JobSummary& row) { return hide(dir, row, true); }

bool retirable(const JobSummary& row) {
    return !row.damaged && (row.ledger.state == JobState::done || row.ledger.state == JobState::cancelled) && !row.needs_attention &&
           (!row.ledger.kept.is_array() || row.ledger.kept.empty());
}

Status rebuild_job_index(const state::JobStore& store) {
    std::vector<std::string> active;
    std::vector<state::FinishedEntry> finished;
    ARCHCTL_TRY_ASSIGN(auto names, list_dir(store.state_dir().jobs(), "cannot list jobs in"));
    for (const auto& id : names) {
        auto row = summarize_one(store, id);
        if (!row) continue;
        if (retirable(*row)) finished.push_back({id, row->to_json(), row->nodes});
        else active.push_back(id);
    }
    return state::JobIndex(store.state_dir()).rebuild(active, std::move(finished));
}

Result<std::vector<JobSummary>> summarize_active(const state::JobStore& store) {
    state::JobIndex index(store.state_dir());
    if (!index.built()) ARCHCTL_TRY_STATUS(rebuild_job_index(store));
    ARCHCTL_TRY_ASSIGN(auto ids, index.active());
    std::vector<JobSummary> out;
    for (const auto& id : ids) {
        auto row = summarize_one(store, id);
        if (!row) {
            // A torn create nobody finishes (a marker, no job): dropped once it is old.
            if (index.marker_older_than(id, 3600)) (void)index.unmark(id);
            continue;
        }
        // Ended cleanly, but the run that ended it did not update the index (a crash): tidy up.
        if (retirable(*row) && index.retire(id, row->to_json(), row->nodes).ok()) continue;
        out.push_back(std::move(*row));
    }
    sort_rows(out);
    return out;
}

Result<std::vector<JobSummary>> summarize_recent(const state::JobStore& store, std::size_t finished) {
    ARCHCTL_TRY_ASSIGN(auto out, summarize_active(store));
    ARCHCTL_TRY_ASSIGN(auto page, state::JobIndex(store.state_dir()).finished(finished));
    for (const auto& e : page.entries)
        if (auto row = summarize_one(store, e.id)) {
            row->retired = true;
            out.push_back(std::move(*row));
        }
    sort_rows(out);
    return out;
}

Result<std::vector<JobSummary>> summarize_matching(const state::JobStore& store, const std::string& target) {
    ARCHCTL_TRY_ASSIGN(auto out, summarize_active(store));
    std::set<std::string> have;
    for (const auto& r : out) have.insert(r.id);
    auto add = [&](const std::string& id) {
        if (!have.insert(id).second) return;
        auto row = summarize_one(store, id);
        if (!row) return;
        row->retired = true;
        out.push_back(std::move(*row));
    };
    if (!target.empty()) {
        ARCHCTL_TRY_ASSIGN(auto names, list_dir(store.state_dir().jobs(), "cannot list jobs in"));
        for (const auto& id : names)
            if (id.rfind(target, 0) == 0) add(id);
        ARCHCTL_TRY_ASSIGN(auto entries, state::JobIndex(store.state_dir()).finished_matching(target));
        for (const auto& e : entries) add(e.id);
    }
    sort_rows(out);
    return out;
}

Result<Cleared> clear_finished(const state::StateDir& dir, long tombstone_days) {
    Cleared c;
    state::JobStore store(dir);
    ARCHCTL_TRY_ASSIGN(auto rows, summarize_active(store));
    ARCHCTL_TRY_ASSIGN(auto page, state::JobIndex(dir).finished(std::nullopt));
    for (const auto& e : page.entries)
        if (auto row = summarize_one(store, e.id)) {
            row->retired = true;
            rows.push_back(std::move(*row));
        }
    std::vector<std::string> gone;
    for (const auto& r : rows)
        if (r.finished() && !(r.ledger.state == JobState::failed && r.ledger.merged)) {
            ARCHCTL_TRY_STATUS(hide(dir, r, !r.retired));
            if (r.retired) gone.push_back(r.id);
            ++c.jobs;
        }
    // One rewrite of the finished log for every retired job cleared, not one line each.
    if (!gone.empty()) ARCHCTL_TRY_STATUS(state::JobIndex(dir).drop_finished(gone));
    auto purged = state::purge_tombstones(dir, tombstone_days);
    c.tombstones = purged.ok() ? purged.value() : 0;
    return c;
}

Result<const JobSummary*> find_job(const std::vector<JobSummary>& rows, const std::string& id) {
    std::vector<const JobSummary*> matches;
    for (const auto& r : rows) {
        if (r.id == id) return &r;
        if (id.size() >= 8 && r.id.rfind(id, 0) == 0) matches.push_back(&r);
    }
    if (matches.size() == 1) return matches.front();
    if (matches.empty()) {
        std::string hint = id.size() < 8 && !id.empty() ? "give the full id or at least 8 characters of it; see 'archctl job list'"
                                                         : "see 'archctl job list'";
        return Error(ErrorCode::NOT_FOUND, fmt::format("no job '{}'", id), hint);
    }
    std::string list;
    for (const JobSummary* r : matches)
        list += fmt::format("\n  {}  {} {} \"{}\"", r->id, r->damaged ? "damaged" : r->definition.value("op", ""),
                            r->definition.value("qb_id", "").substr(0, 12), r->definition.value("name", ""));
    return Error(ErrorCode::AMBIGUOUS, fmt::format("job id '{}' is ambiguous: it matches {} jobs:{}", id, matches.size(), list),
                 "give more characters of the id");
}

}  // namespace archctl::jobs
