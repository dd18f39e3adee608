// The transfer kind (archive, unarchive): its steps stage → sync → merge → verify → cleanup, and
// what failing or cancelling means before and after the commit (docs/design.md "The job", "Budgets, outages and stops").

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/base/fs.hpp"
#include "lib/base/signals.hpp"
#include "lib/jobs/transfer/summary.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/transfer/target_room.hpp"

namespace archctl::jobs::transfer {

Error stale(const std::string& what, const JobRun& run) {
    return Error(ErrorCode::STALE_STATE, fmt::format("{} changed since job {} was created", what, run.def.id),
                 "archctl never adapts silently to external changes; the job was stopped and compensated");
}

void JobRun::record(const std::string& type, nlohmann::json fields) {
    warn_unrecorded(event(type, std::move(fields)), fmt::format("the '{}' event", type));
}

void JobRun::record_ledger() {
    Status s = save();
    if (!s.ok()) log(fmt::format("archctl: warning: the ledger of job {} was not written: {}", def.id, s.error().message));
}

void JobRun::note_kept(const std::string& node, nlohmann::json entry, const std::string& step) {
    for (const auto& have : ledger.kept)
        if (have.value("node", "") == node && have.value("path", "") == entry.value("path", "")) return;
    entry["node"] = node;
    entry["step"] = step;
    ledger.kept.push_back(std::move(entry));
}

std::optional<StepResult> JobRun::should_stop() const {
    return budget_stop(env.budgets, env.budgets.moved_before + session_bytes(), env.budgets.run_started.value_or(started), clock().steady());
}

void JobRun::progress(const std::string& step, int number, std::uint64_t done, std::uint64_t total, std::uint64_t files_done,
                      const std::string& current) const {
    if (!env.io.progress) return;
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
    s.why = waiting_on;
    env.io.progress->update(s);
}

namespace {

using StepFn = StepResult (*)(JobRun&);

// In the order of TransferStep.
const StepFn k_step_fns[] = {step_stage, step_sync, step_merge, step_verify, step_cleanup};
static_assert(std::size(k_step_fns) == static_cast<std::size_t>(TransferStep::done));

// An archive or unarchive job, as the driver runs it.
class TransferRun final : public KindRun {
public:
    TransferRun(RunEnv& env, JobDefinition def) : m_run(env, std::move(def)) {}

    std::string summary() const override { return m_run.def.summary(); }
    std::uint64_t bytes_moved() const override { return m_run.session_bytes(); }

    Status open(Result<nlohmann::json> ledger) override {
        m_run.ledger = Ledger{};
        if (ledger.ok()) {
            auto stored = Ledger::from_json(ledger.value());
            if (stored.ok()) {
                m_run.ledger = std::move(stored).value();
                return {};
            }
            ledger = stored.take_error();
        }
        // A job that never reached a step boundary has no ledger yet; one that did and lost it
        // (deleted, corrupt) is rebuilt from evidence.
        // A job whose events are lost too may have done anything: only the evidence can say.
        auto events = m_run.env.store.events(m_run.def.id);
        bool worked = events.ok() && events->records.size() > 1;
        bool events_lost = !events.ok() || events->records.empty();
        if (ledger.error().is(ErrorCode::NOT_FOUND) && !worked && !events_lost) return {};
        m_run.log(fmt::format("archctl: warning: ledger of job {} {}; rebuilding it from evidence", m_run.def.id,
                              ledger.error().is(ErrorCode::NOT_FOUND) ? "is missing" : "is unreadable"));
        return rebuild_ledger(m_run);
    }

    void read(const Result<nlohmann::json>& ledger) override {
        auto stored = ledger.ok() ? Ledger::from_json(ledger.value()) : Result<Ledger>(Ledger{});
        m_run.ledger = stored.ok() ? std::move(stored).value() : Ledger{};
    }

    JobState state() const override { return m_run.ledger.state; }
    std::vector<std::string> steps() const override { return step_names(k_transfer_steps); }
    std::size_t step_index() const override { return static_cast<std::size_t>(m_run.ledger.step); }
    void set_step_index(std::size_t i) override { m_run.ledger.step = static_cast<TransferStep>(std::min(i, std::size(k_step_fns))); }
    const char* crash_prefix() const override { return "job.step."; }

    Status begin() override {
        m_run.begin_session();
        auto torrent = read_file(m_run.env.store.dir_of(m_run.def.id) + "/" + k_job_metainfo);
        if (torrent.ok()) m_run.metainfo = std::move(torrent).value();
        // A stop held the job's transfer in Syncthing (hold.cpp). Until the job is synced
        // the sync step lifts it, after it looked at the target's staging area and in one write
        // with the budget's own hold; a synced job's hold (a ledger rebuilt from evidence may say
        // synced while the target still holds one) goes now.
        if (m_run.ledger.synced) release_before_run(m_run);
        return {};
    }

    // External state is recomputed before every step, not only before the first.
    StepResult before_step() override {
        StepResult r = step_preflight(m_run);
        if (r.kind != StepResult::next) return r;
        if (auto stop = m_run.should_stop()) return *stop;
        return {};
    }

    StepResult run_step(std::size_t i) override { return k_step_fns[i](m_run); }

    Status save() override { return m_run.save(); }
    Status event(const std::string& type, nlohmann::json fields) override { return m_run.event(type, std::move(fields)); }

    void end_session(const std::string& reason) override { m_run.end_session(reason); }

    void stop_session(StopReason reason) override {
        hold_after_stop(m_run, reason);  // a stop stops the bytes (hold.cpp)
        // A run that moved bytes to the target and stopped for another reason shows the target
        // takes the job again; one that stopped for the target's room keeps counting, whatever
        // trickled in before it (target_room.hpp).
        if (!m_run.room_stop && m_run.session.bytes_synced > 0) target_took(m_run);
        m_run.end_session(to_string(reason));
    }

    nlohmann::json mark_done() override {
        m_run.ledger.state = JobState::done;
        m_run.ledger.step = TransferStep::done;
        m_run.ledger.target_blocked.reset();  // it landed
        return {{"generation", m_run.ledger.generation}};
    }
    void release() override { m_run.release_reservation(m_run.def.aliases); }

    // What a run says of its job's target (target_room.hpp): it stopped because the target
    // cannot take the job, or it released the job.
    nlohmann::json detail() const override {
        if (!m_run.room_stop || !m_run.ledger.target_blocked) return nlohmann::json::object();
        return {{m_run.releasing ? "released" : "target_blocked", m_run.ledger.target_blocked->to_json()}};
    }

    // Before commit: compensate (restore the target, remove what this job created) and release
    // the reservation. After: the target is verified, so the job waits for its cleanup. A job
    // whose target stayed unable to take it past the bound is undone as a cancel is (released).
    RunResult fail(const Error& e) override {
        if (m_run.releasing && !m_run.ledger.committed) return release_from_target(e);
        RunResult r;
        r.outcome = RunOutcome::failed;
        r.error = e;
        r.job_id = m_run.def.id;
        r.step = to_string(m_run.ledger.step);
        r.bytes_moved = m_run.session_bytes();
        if (!m_run.ledger.committed) {
            m_run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)}};
            Status comp = compensate_waiting(e);
            if (comp.ok()) {
                m_run.ledger.state = JobState::failed;
                m_run.release_reservation(m_run.def.aliases);
            } else {
                // The job keeps its reservation and says what finishes it.
                m_run.ledger.state = JobState::compensating;
                m_run.ledger.compensation_ends = JobState::failed;
                m_run.ledger.failure["compensation"] = comp.error().message;
                r.error = Error(e.code, e.message,
                                fmt::format("undoing it is not finished ({}); 'archctl resume {}' finishes it once that is fixed",
                                            comp.error().message, m_run.def.id));
            }
        } else {
            m_run.ledger.state = JobState::cleanup_required;
            r.error = Error(ErrorCode::CLEANUP_REQUIRED, fmt::format("job {} committed, but finishing it failed: {}", m_run.def.id, e.message),
                            fmt::format("the target placement is verified; rerun 'archctl resume {}' to finish", m_run.def.id));
        }
        if (m_run.ledger.committed) m_run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)}};
        end_session("error");
        m_run.warn_unrecorded(m_run.save(), "the failure");
        m_run.warn_unrecorded(m_run.event("failed", {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)}}), "the failure event");
        return r;
    }

    // Before commit, compensate; after commit, only finish cleanup.
    RunResult cancel() override {
        m_run.warn_unrecorded(m_run.event("cancel_requested"), "the cancel request");
        if (!m_run.ledger.committed) return undo(Error(ErrorCode::CANCELLED, "cancelled by the user"), "cancelled", nlohmann::json::object());
        RunResult result;
        result.job_id = m_run.def.id;
        result.step = to_string(m_run.ledger.step);
        if (step_cleanup(m_run).kind == StepResult::fail) {
            result.outcome = RunOutcome::failed;
            result.error = Error(ErrorCode::CLEANUP_REQUIRED, "cleanup failed");
            m_run.warn_unrecorded(m_run.save(), "the ledger");
            return result;
        }
        m_run.ledger.state = JobState::done;
        if (Status saved = m_run.save(); !saved.ok()) {
            result.outcome = RunOutcome::failed;
            result.error = saved.take_error();
            return result;
        }
        m_run.warn_unrecorded(m_run.event("done"), "the cancel event");
        m_run.release_reservation(m_run.def.aliases);
        result.outcome = RunOutcome::done;
        return result;
    }

    // An earlier failure or cancel whose compensation could not finish: finish it now. An
    // outage that outlasts the wait stops the run (exit 10) with the job still compensating.
    RunResult finish_compensation() override {
        RunResult r;
        r.job_id = m_run.def.id;
        r.step = to_string(m_run.ledger.step);
        const nlohmann::json& f = m_run.ledger.failure;
        Error why(f.is_object() ? f.value("code", "FAILED") : "FAILED", f.is_object() ? f.value("message", "") : "");
        Status comp = compensate_waiting(why);
        if (!comp.ok()) {
            m_run.ledger.failure["compensation"] = comp.error().message;
            m_run.warn_unrecorded(m_run.save(), "the ledger");
            if (is_outage(comp.error()) || stop_requested()) {
                r.outcome = RunOutcome::stopped;
                r.stop_reason = stop_requested() ? StopReason::interrupt : StopReason::waiting;
                r.stop_text = fmt::format("undoing job {} waits: {}", m_run.def.id, comp.error().message);
                return r;
            }
            r.outcome = RunOutcome::failed;
            r.error = Error(ErrorCode::ROLLBACK_INCOMPLETE, fmt::format("undoing job {} is not finished: {}", m_run.def.id, comp.error().message),
                            fmt::format("fix that, then 'archctl resume {}'", m_run.def.id));
            return r;
        }
        m_run.ledger.state = m_run.ledger.compensation_ends;
        m_run.ledger.failure.erase("compensation");
        if (Status saved = m_run.save(); !saved.ok()) {
            r.outcome = RunOutcome::failed;
            r.error = saved.take_error();
            return r;
        }
        m_run.warn_unrecorded(m_run.event(to_string(m_run.ledger.state)), "the end of its compensation");
        m_run.release_reservation(m_run.def.aliases);
        r.outcome = RunOutcome::done;
        r.compensated = true;
        r.ended = to_string(m_run.ledger.state);
        return r;
    }

private:
    // Undo the job before its commit and give the resource back, for a cancel or a release:
    // compensate (waiting out outages), end `cancelled`, record `event` with `fields`, free the
    // reservation. When undoing cannot finish the job stays compensating towards cancelled, keeps
    // its reservation and says what finishes it (ROLLBACK_INCOMPLETE).
    RunResult undo(const Error& why, const char* event, nlohmann::json fields) {
        RunResult result;
        result.job_id = m_run.def.id;
        result.step = to_string(m_run.ledger.step);
        result.bytes_moved = m_run.session_bytes();
        Status s = compensate_waiting(why);
        if (!s.ok()) {
            result.outcome = RunOutcome::failed;
            result.error = Error(ErrorCode::ROLLBACK_INCOMPLETE,
                                 fmt::format("job {} is not {} yet: undoing it is not finished: {}", m_run.def.id, event, s.error().message),
                                 fmt::format("once that is fixed, 'archctl job cancel {}' (or 'archctl resume') finishes it", m_run.def.id));
            // Not ended yet: the job says so, and the next cancel or resume finishes it.
            m_run.ledger.state = JobState::compensating;
            m_run.ledger.compensation_ends = JobState::cancelled;
            m_run.ledger.failure = {{"code", why.code}, {"message", why.message}, {"compensation", s.error().message}};
            m_run.warn_unrecorded(m_run.save(), "the ledger");
            return result;
        }
        m_run.ledger.state = JobState::cancelled;
        if (Status saved = m_run.save(); !saved.ok()) {
            result.outcome = RunOutcome::failed;
            result.error = saved.take_error();
            return result;
        }
        m_run.warn_unrecorded(m_run.event(event, std::move(fields)), fmt::format("the '{}' event", event));
        m_run.release_reservation(m_run.def.aliases);
        result.outcome = RunOutcome::done;
        return result;
    }

    // The target stayed unable to take the job past the bound (target_room.hpp): undo it as a
    // cancel does, with the reason in its failure and a `released` event. The run's result is the
    // failure `e` (DISK_INSUFFICIENT) whose detail says `released`, so a tier run moves the
    // candidate to its next archive node and a batch goes on with the others.
    RunResult release_from_target(const Error& e) {
        const TargetBlocked blocked = *m_run.ledger.target_blocked;
        m_run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)}, {"released", blocked.to_json()}};
        end_session("released");
        RunResult r = undo(e, "released",
                           {{"node", blocked.node}, {"since", blocked.since}, {"runs", blocked.runs}, {"reason", blocked.reason}});
        if (r.outcome == RunOutcome::done) {
            r.outcome = RunOutcome::failed;
            r.error = e;
            r.ended = to_string(JobState::cancelled);
        } else {
            // Undoing it waits (an outage, a refusal on a node): resume or cancel finishes it later.
            m_run.ledger.failure["released"] = blocked.to_json();
            m_run.warn_unrecorded(m_run.save(), "the ledger");
        }
        r.detail = detail();
        return r;
    }

    // Compensation, waiting out outages within the window (a restart of the target's
    // qBittorrent or Syncthing does not leave a half-undone job): its last error when it could
    // not finish.
    Status compensate_waiting(const Error& why) {
        OutageWait outage(m_run.env);
        StepResult r = retry_through_outage(outage, [&] { return compensate(m_run, why); });
        if (r.kind == StepResult::next) return {};
        return std::move(r.error);
    }

    JobRun m_run;
};

Result<std::unique_ptr<KindRun>> load_transfer(RunEnv& env, const nlohmann::json& definition) {
    ARCHCTL_TRY_ASSIGN(auto def, JobDefinition::from_json(definition));
    return std::unique_ptr<KindRun>(std::make_unique<TransferRun>(env, std::move(def)));
}

// `job show`'s words for the events that say what the job did to the target torrent.
std::string describe_transfer_event(const nlohmann::json& e) {
    std::string type = e.value("type", "");
    std::string node = e.value("node", "");
    if (type == "target_added") {
        std::vector<std::string> tags = e.value("tags", std::vector<std::string>{});
        std::string category = e.value("category", "");
        return fmt::format("added to qBittorrent on {} at {}, category {}, tags {}, share limits {}", node, e.value("save_path", ""),
                           category.empty() ? "none" : "'" + category + "'", tags.empty() ? "none" : fmt::format("{}", fmt::join(tags, ", ")),
                           e.value("share_limits", "global") == "none" ? "its own (none), not the global ones" : "the global ones");
    }
    if (type == "category_created") return fmt::format("category '{}' created on {} without a save path", e.value("category", ""), node);
    if (type == "share_limits_cleared")
        return fmt::format("the torrent on {} given its own share limits of none ({} before)", node, e.value("was", ""));
    if (type == "baseline_restored") {
        std::string selection = e.value("selection", "");
        return fmt::format("restored the target on {} as it was before the job: {}, selection {}{}", node,
                           e.value("started", false) ? "seeding again" : "stopped, as it was", selection.empty() ? "none" : selection,
                           e.value("partfile", false) ? ", its part file put back" : "");
    }
    if (type == "target_blocked") return fmt::format("'{}' cannot take the job: {}", node, e.value("reason", ""));
    if (type == "target_unblocked")
        return fmt::format("'{}' takes the job again (it could not since {}, {} run(s))", node, e.value("since", ""), e.value("runs", 0));
    if (type == "released")
        return fmt::format("undone and released: '{}' had not taken it since {} ({} runs): {}", node, e.value("since", ""), e.value("runs", 0),
                           e.value("reason", ""));
    if (type == "restamped")
        return fmt::format("the source files {} on {} stamped again after this job's hard links (their ctime changed)", e.value("files", ""),
                           node);
    return {};
}

}  // namespace
}  // namespace archctl::jobs::transfer

namespace archctl::jobs {

const Kind& transfer_kind() {
    static const Kind kind{"transfer", transfer::is_transfer_definition, transfer::load_transfer, transfer::summarize_transfer,
                           transfer::describe_transfer_event};
    return kind;
}

}  // namespace archctl::jobs
