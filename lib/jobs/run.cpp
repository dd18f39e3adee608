// Engine::run: drive one job through its steps under this run's budgets (DESIGN.md §5, §8).

#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/state/reservations.hpp"

namespace archctl::jobs {

nlohmann::json files_arg(const std::vector<JobFile>& files) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& f : files) a.push_back({{"index", f.index}, {"path", f.path}, {"size", f.size}});
    return a;
}

Error stale(const std::string& what, const JobRun& run) {
    return Error("STALE_STATE", fmt::format("{} changed since job {} was created", what, run.def.id),
                 "archctl never adapts silently to external changes; the job was stopped and compensated");
}

Status JobRun::save() { return store.write_ledger(def.id, ledger.to_json()); }

Status JobRun::event(const std::string& type, nlohmann::json fields) { return store.append_event(def.id, type, std::move(fields)); }

void JobRun::note_kept(const std::string& node, nlohmann::json entry, const std::string& step) {
    for (const auto& have : ledger.kept)
        if (have.value("node", "") == node && have.value("path", "") == entry.value("path", "")) return;
    entry["node"] = node;
    entry["step"] = step;
    ledger.kept.push_back(std::move(entry));
}

std::optional<StepResult> JobRun::should_stop() const {
    if (stop_requested()) return StepResult::stopped("interrupt", "interrupted (Ctrl-C)");
    if (budgets.max_bytes && session_bytes() >= *budgets.max_bytes)
        return StepResult::stopped("budget", fmt::format("budget reached ({} moved this run, limit {})", format_size(session_bytes()),
                                                         format_size(*budgets.max_bytes)));
    if (budgets.max_duration && clock().steady() - started >= *budgets.max_duration)
        return StepResult::stopped("deadline", fmt::format("deadline reached ({} this run)", format_duration(budgets.max_duration->count())));
    return std::nullopt;
}

void JobRun::progress(const std::string& step, int number, std::uint64_t done, std::uint64_t total, std::uint64_t files_done,
                      const std::string& current) const {
    if (!io.progress) return;
    ui::ProgressSnapshot s;
    s.job_id = def.id;
    s.step = step;
    s.step_number = number;
    s.done_bytes = done;
    s.total_bytes = total;
    s.files_done = files_done;
    s.files_total = def.files.size();
    s.current = current;
    s.stopping = stop_requested();
    io.progress->update(s);
}

namespace {

using StepFn = StepResult (*)(JobRun&);

struct StepSpec {
    const char* name;
    StepFn fn;
};

const StepSpec k_steps[] = {{"stage", step_stage}, {"sync", step_sync}, {"merge", step_merge}, {"verify", step_verify},
                            {"cleanup", step_cleanup}};

void end_session(JobRun& run, const std::string& reason) {
    run.session.ended = format_rfc3339(system_now());
    run.session.end_reason = reason;
    run.ledger.sessions.push_back(run.session);
}

RunResult finish_failed(JobRun& run, const Error& e, const state::StateDir& dir) {
    RunResult r;
    r.outcome = RunOutcome::failed;
    r.error = e;
    r.job_id = run.def.id;
    r.step = run.ledger.step;
    if (!run.ledger.committed) {
        Status comp = compensate(run, e);
        if (!comp.ok()) run.log(fmt::format("archctl: warning: compensation incomplete: {}", comp.error().message));
        run.ledger.state = JobState::failed;
        (void)state::release(dir, run.def.aliases, run.def.id);
    } else {
        run.ledger.state = JobState::cleanup_required;
        r.error = Error("CLEANUP_REQUIRED", fmt::format("job {} committed, but finishing it failed: {}", run.def.id, e.message),
                        fmt::format("the target placement is verified; rerun 'archctl resume {}' to finish", run.def.id));
    }
    run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", run.ledger.step}};
    end_session(run, "error");
    (void)run.save();
    (void)run.event("failed", {{"code", e.code}, {"message", e.message}, {"step", run.ledger.step}});
    return r;
}

}  // namespace

RunResult Engine::run(const std::string& job_id, const Budgets& budgets) {
    state::JobStore store(m_state);
    RunResult result;
    result.job_id = job_id;
    auto def_json = store.definition(job_id);
    if (!def_json.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = def_json.take_error();
        return result;
    }
    auto def = JobDefinition::from_json(def_json.value());
    if (!def.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = def.take_error();
        return result;
    }
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), def->summary(), notices);
    for (const auto& n : notices) if (m_io.log) m_io.log("archctl: " + n);
    if (!lock.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = Error("LOCKED", fmt::format("job {} is running: {}", job_id, lock.error().message), lock.error().hint);
        return result;
    }
    JobRun run{m_config, m_state, m_nodes, store, m_io, def.value(), Ledger{}, budgets, Session{}, m_io.clock->steady(), {}};
    auto ledger = store.ledger(job_id);
    if (ledger.ok()) {
        run.ledger = Ledger::from_json(ledger.value());
    } else {
        // A job that never reached a step boundary has no ledger yet; one that did and lost it
        // (deleted, corrupt) is rebuilt from evidence.
        auto events = store.events(job_id);
        bool worked = events.ok() && events->records.size() > 1;
        if (ledger.error().code != "NOT_FOUND" || worked) {
            if (m_io.log) m_io.log(fmt::format("archctl: warning: ledger of job {} {}; rebuilding it from evidence", job_id,
                                               ledger.error().code == "NOT_FOUND" ? "is missing" : "is unreadable"));
            Status rebuilt = rebuild_ledger(run);
            if (!rebuilt.ok()) {
                result.outcome = RunOutcome::failed;
                result.error = rebuilt.take_error();
                return result;
            }
        }
    }
    if (run.ledger.state == JobState::done || run.ledger.state == JobState::failed || run.ledger.state == JobState::cancelled) {
        result.outcome = run.ledger.state == JobState::done ? RunOutcome::done : RunOutcome::failed;
        if (run.ledger.state != JobState::done)
            result.error = Error("JOB_FINISHED", fmt::format("job {} already ended: {}", job_id, to_string(run.ledger.state)));
        result.step = run.ledger.step;
        return result;
    }
    run.session.started = format_rfc3339(system_now());
    run.session.host = host_name();
    run.session.pid = ::getpid();
    auto torrent = read_file(store.dir_of(job_id) + "/resource.torrent");
    if (torrent.ok()) run.metainfo = torrent.value();

    size_t first = 0;
    while (first < std::size(k_steps) && run.ledger.step != k_steps[first].name) ++first;
    for (size_t i = first; i < std::size(k_steps); ++i) {
        // External state is recomputed before every step, not only before the first.
        StepResult r = step_preflight(run);
        if (r.kind == StepResult::next) {
            if (auto stop = run.should_stop()) r = *stop;
            else r = k_steps[i].fn(run);
        }
        if (r.kind == StepResult::fail) return finish_failed(run, r.error, m_state);
        if (r.kind == StepResult::stop) {
            end_session(run, r.reason);
            (void)run.save();
            (void)run.event("stopped", {{"reason", r.reason}, {"step", run.ledger.step}});
            result.outcome = RunOutcome::stopped;
            result.stop_reason = r.reason;
            result.stop_text = r.text;
            result.step = run.ledger.step;
            return result;
        }
        run.ledger.step = i + 1 < std::size(k_steps) ? k_steps[i + 1].name : "done";
        Status saved = run.save();
        if (!saved.ok()) return finish_failed(run, saved.error(), m_state);
        crash_point(std::string("job.step.") + k_steps[i].name);
    }
    run.ledger.state = JobState::done;
    run.ledger.step = "done";
    end_session(run, "complete");
    (void)run.save();
    (void)run.event("done", {{"generation", run.ledger.generation}});
    (void)state::release(m_state, run.def.aliases, run.def.id);
    result.outcome = RunOutcome::done;
    result.step = "done";
    return result;
}

RunResult Engine::cancel(const std::string& job_id) {
    state::JobStore store(m_state);
    RunResult result;
    result.job_id = job_id;
    auto def_json = store.definition(job_id);
    auto def = def_json.ok() ? JobDefinition::from_json(def_json.value()) : Result<JobDefinition>(def_json.error());
    if (!def.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = def.take_error();
        return result;
    }
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(store.dir_of(job_id), def->summary(), notices);
    if (!lock.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = Error("LOCKED", fmt::format("job {} is running: {}", job_id, lock.error().message),
                             "stop it first (Ctrl-C in its terminal), then cancel");
        return result;
    }
    JobRun run{m_config, m_state, m_nodes, store, m_io, def.value(), Ledger{}, Budgets{}, Session{}, m_io.clock->steady(), {}};
    auto ledger = store.ledger(job_id);
    if (ledger.ok()) run.ledger = Ledger::from_json(ledger.value());
    result.step = run.ledger.step;
    if (run.ledger.state == JobState::done || run.ledger.state == JobState::cancelled || run.ledger.state == JobState::failed) {
        result.outcome = RunOutcome::done;
        return result;
    }
    (void)run.event("cancel_requested");
    Status s = run.ledger.committed ? (step_cleanup(run).kind == StepResult::fail ? Status(Error("CLEANUP_REQUIRED", "cleanup failed")) : Status())
                                    : compensate(run, Error("CANCELLED", "cancelled by the user"));
    if (!s.ok()) {
        result.outcome = RunOutcome::failed;
        result.error = s.error();
        (void)run.save();
        return result;
    }
    run.ledger.state = run.ledger.committed ? JobState::done : JobState::cancelled;
    (void)run.save();
    (void)run.event(run.ledger.committed ? "done" : "cancelled");
    (void)state::release(m_state, run.def.aliases, run.def.id);
    result.outcome = RunOutcome::done;
    return result;
}

Result<std::vector<std::string>> Engine::unfinished() {
    state::JobStore store(m_state);
    ARCHCTL_TRY_ASSIGN(auto ids, store.list());
    std::vector<std::string> out;
    for (const auto& id : ids) {
        // A torn definition never became a job (its reservation is released as stale); other
        // job kinds (evict) are driven by their own engine.
        auto def = store.definition(id);
        if (!def.ok() || !is_transfer_definition(def.value())) continue;
        auto l = store.ledger(id);
        JobState s = l.ok() ? parse_job_state(l.value().value("state", "running")) : JobState::running;
        if (s == JobState::running || s == JobState::cleanup_required) out.push_back(id);
    }
    return out;
}

nlohmann::json RunResult::to_json() const {
    nlohmann::json j = {{"job", job_id}, {"step", step}};
    j["outcome"] = outcome == RunOutcome::done ? "done" : outcome == RunOutcome::stopped ? "stopped" : "failed";
    if (outcome == RunOutcome::stopped) j["stop_reason"] = stop_reason;
    if (outcome == RunOutcome::failed) j["error"] = {{"code", error.code}, {"message", error.message}};
    return j;
}

}  // namespace archctl::jobs
