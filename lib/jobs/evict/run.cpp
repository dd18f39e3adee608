// The evict kind: hold → remove → unlink → partfile → release (evict/job.hpp), as the driver
// runs it, and what failing or cancelling means before and after the cache torrent is removed.

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/signals.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/jobs/evict/run.hpp"

namespace archctl::jobs::evict {
namespace {

using StepFn = jobs::StepResult (*)(EvictRun&);
// In the order of EvictStep.
const StepFn k_step_fns[] = {step_hold, step_remove, step_unlink, step_partfile, step_release};
static_assert(std::size(k_step_fns) == static_cast<std::size_t>(EvictStep::done));

// The owned files no longer on the cache's disk, read live (the ledger may not have recorded a
// batch a crash interrupted). Unknown when the cache node cannot be read: then the ledger's count.
nlohmann::json files_gone(EvictRun& run) {
    nlohmann::json gone = nlohmann::json::array();
    std::vector<plan::CoverageFile> files;
    std::size_t count = 0;
    for (const auto& f : run.def.files) {
        files.push_back({f.index, f.path, f.size});
        count = std::max<std::size_t>(count, f.index + 1);
    }
    auto cache = run.node(run.def.cache);
    auto stats = cache.ok() ? jobs::evidence::stat_files(*cache.value(), run.def.save_path, files, count)
                            : Result<std::vector<plan::DiskFile>>(cache.error());
    if (!stats.ok()) {
        for (std::uint64_t i = 0; i < run.ledger.files_removed; ++i) gone.push_back("?");
        return gone;
    }
    for (const auto& f : run.def.files) {
        const plan::DiskFile& d = stats.value()[f.index];
        if (d.on_disk == plan::OnDisk::absent || (d.on_disk == plan::OnDisk::file && d.stamp.ino != f.ino)) gone.push_back(run.abs(f.path));
    }
    return gone;
}

nlohmann::json detail_of(const EvictLedger& l) {
    return {{"files_removed", l.files_removed}, {"bytes_freed", l.bytes_freed}, {"dirs_removed", l.dirs_removed},
            {"kept", l.kept}, {"partfile", l.partfile}};
}

class EvictKindRun final : public jobs::KindRun {
public:
    EvictKindRun(jobs::RunEnv& env, EvictDefinition def) : m_run(env, std::move(def)) {}

    std::string summary() const override { return m_run.def.summary(); }

    // A lost or unreadable ledger starts again from the first step: every step checks live
    // evidence (qBittorrent, the disk) before acting, so nothing is done twice.
    Status open(Result<nlohmann::json> ledger) override {
        if (ledger.ok())
            if (auto stored = EvictLedger::from_json(ledger.value()); !stored.ok()) ledger = stored.take_error();
        read(ledger);
        if (!ledger.ok() && !ledger.error().is(ErrorCode::NOT_FOUND))
            m_run.log(fmt::format("archctl: warning: ledger of job {} is unreadable; continuing from live evidence", m_run.def.id));
        if (finished()) {
            // A crash after the last ledger write may have left the reservation behind.
            release();
            return {};
        }
        m_run.ledger.state = jobs::JobState::running;
        auto torrent = read_file(m_run.env.store.dir_of(m_run.def.id) + "/resource.torrent");
        if (torrent.ok()) m_run.metainfo = std::move(torrent).value();
        else if (m_run.verify_pieces()) return torrent.take_error();
        return {};
    }

    void read(const Result<nlohmann::json>& ledger) override {
        auto stored = ledger.ok() ? EvictLedger::from_json(ledger.value()) : Result<EvictLedger>(EvictLedger{});
        m_run.ledger = stored.ok() ? std::move(stored).value() : EvictLedger{};
    }

    jobs::JobState state() const override { return m_run.ledger.state; }
    std::vector<std::string> steps() const override { return jobs::step_names(k_evict_steps); }
    std::size_t step_index() const override { return static_cast<std::size_t>(m_run.ledger.step); }
    void set_step_index(std::size_t i) override { m_run.ledger.step = static_cast<EvictStep>(std::min(i, std::size(k_step_fns))); }
    const char* crash_prefix() const override { return "evict.step."; }

    // Every run restores the holds (a rerun after a crash, or a tag someone removed).
    Status begin() override {
        m_run.begin_session();
        const EvictStep step = m_run.ledger.step;
        if (step != EvictStep::hold && step != EvictStep::release && step != EvictStep::done)
            ARCHCTL_TRY_STATUS(hold(m_run, true));
        return {};
    }

    // Eviction moves no bytes: only Ctrl-C stops it between steps.
    jobs::StepResult before_step() override {
        if (stop_requested()) return jobs::StepResult::stopped(jobs::StopReason::interrupt, interrupt_text());
        return {};
    }

    jobs::StepResult run_step(std::size_t i) override { return k_step_fns[i](m_run); }

    Status save() override { return m_run.save(); }
    Status event(const std::string& type, nlohmann::json fields) override { return m_run.event(type, std::move(fields)); }

    void end_session(const std::string& reason) override { m_run.end_session(reason); }

    nlohmann::json mark_done() override {
        m_run.ledger.state = jobs::JobState::done;
        m_run.ledger.failure = nullptr;
        return {{"files_removed", m_run.ledger.files_removed}, {"bytes_freed", m_run.ledger.bytes_freed},
                {"dirs_removed", m_run.ledger.dirs_removed}};
    }

    void release() override { m_run.release_reservation(m_run.def.aliases); }

    // Before the removal nothing was deleted: drop the holds and give the resource back. After
    // it, the job stays CLEANUP_REQUIRED and says which files are gone, live.
    jobs::RunResult fail(const Error& e) override {
        nlohmann::json gone = nlohmann::json::array();
        jobs::RunResult r;
        r.outcome = jobs::RunOutcome::failed;
        r.job_id = m_run.def.id;
        r.step = to_string(m_run.ledger.step);
        r.error = e;
        if (!m_run.ledger.removed) {
            Status unheld = hold(m_run, false);
            if (!unheld.ok()) m_run.log(fmt::format("archctl: warning: hold tag not removed: {}", unheld.error().message));
            m_run.ledger.state = jobs::JobState::failed;
            release();
        } else {
            m_run.ledger.state = jobs::JobState::cleanup_required;
            gone = files_gone(m_run);
            std::string removed = gone.empty() ? "no file of it was unlinked"
                                               : fmt::format("{} of its {} file(s) are no longer on the cache's disk (listed in "
                                                             "'archctl job show {}'), the rest are kept",
                                                             gone.size(), m_run.def.files.size(), m_run.def.id);
            std::string hint =
                e.is(ErrorCode::PROOF_DRIFT)
                    ? fmt::format("the cache files left in '{}' are kept; restore the archive copy and run 'archctl evict {} --from {} "
                                  "--verify-archive' (its piece check proves the copy again), or add the torrent back to qBittorrent "
                                  "on '{}' from '{}'",
                                  m_run.def.save_path, m_run.def.qb_id.substr(0, 12), m_run.def.cache, m_run.def.cache,
                                  m_run.env.store.dir_of(m_run.def.id) + "/resource.torrent")
                    : fmt::format("its remaining files are kept; fix the cause and run 'archctl resume {}'", m_run.def.id);
            r.error = Error(ErrorCode::CLEANUP_REQUIRED,
                            fmt::format("job {} removed the cache torrent, but finishing the eviction failed: {}; {}", m_run.def.id,
                                        e.message, removed),
                            hint);
        }
        m_run.ledger.failure = {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)}};
        if (!gone.empty()) m_run.ledger.failure["gone"] = gone;
        end_session("error");
        m_run.warn_unrecorded(m_run.save(), "the failure");
        m_run.warn_unrecorded(m_run.event("failed", {{"code", e.code}, {"message", e.message}, {"step", to_string(m_run.ledger.step)},
                                                     {"removed", m_run.ledger.removed}, {"files_removed", gone.size()}, {"gone", gone}}),
                              "the failure event");
        r.detail = detail();
        return r;
    }

    // Before the cache torrent is removed: drop the hold tags, release, cancelled.
    jobs::RunResult cancel() override {
        jobs::RunResult r;
        r.job_id = m_run.def.id;
        r.step = to_string(m_run.ledger.step);
        m_run.warn_unrecorded(m_run.event("cancel_requested"), "the cancel request");
        Status unheld = hold(m_run, false);
        if (!unheld.ok()) return jobs::failed_run(m_run.def.id, unheld.take_error());
        m_run.ledger.state = jobs::JobState::cancelled;
        if (Status saved = m_run.save(); !saved.ok()) return jobs::failed_run(m_run.def.id, saved.take_error());
        m_run.warn_unrecorded(m_run.event("cancelled", {{"deleted", false}}), "the cancel event");
        release();
        r.outcome = jobs::RunOutcome::done;
        return r;
    }

    // The cache torrent is gone; the only way forward is to finish.
    bool cancel_finishes() const override { return m_run.ledger.removed; }
    std::string cancel_finishes_text() const override { return "the cache torrent is removed already; finishing the eviction"; }

    nlohmann::json detail() const override { return detail_of(m_run.ledger); }

private:
    bool finished() const {
        return m_run.ledger.state == jobs::JobState::done || m_run.ledger.state == jobs::JobState::failed ||
               m_run.ledger.state == jobs::JobState::cancelled;
    }

    EvictRun m_run;
};

Result<std::unique_ptr<jobs::KindRun>> load_evict(jobs::RunEnv& env, const nlohmann::json& definition) {
    ARCHCTL_TRY_ASSIGN(auto def, EvictDefinition::from_json(definition));
    return std::unique_ptr<jobs::KindRun>(std::make_unique<EvictKindRun>(env, std::move(def)));
}

}  // namespace
}  // namespace archctl::jobs::evict

namespace archctl::jobs {

const Kind& evict_kind() {
    static const Kind kind{"evict", jobs::evict::is_evict, jobs::evict::load_evict, jobs::evict::summarize_evict, jobs::evict::describe_event};
    return kind;
}

}  // namespace archctl::jobs
