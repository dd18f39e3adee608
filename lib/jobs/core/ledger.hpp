#pragma once
// What every kind of job records the same way (docs/design.md "State on disk"): the ledger's
// shared part — its state, the next step, the failure, what was kept, the sessions of the
// processes that drove it — and the durable writes a run makes of its job's records.
//
// A kind's ledger extends LedgerCore with its own fields and writes the shared ones with
// write_shared()/read_shared(), under the keys every stored ledger has:
//   {"state", "step", "failure", "kept", "sessions": [{started, ended, end_reason, host, pid}]}
// (a transfer's sessions also count their bytes: bytes_linked, bytes_copied, bytes_synced).
//
// A kind's run keeps its records in a JobRecords<KindLedger>:
//   struct EvictRun : jobs::JobRecords<EvictLedger> { EvictDefinition def; ... };
//   run.begin_session(); ... run.end_session("budget"); ARCHCTL_TRY_STATUS(run.save());

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/jobs/core/run.hpp"
#include "lib/state/reservations.hpp"

namespace archctl::jobs {

// compensating: a failure or cancel before the commit whose compensation could not finish yet
// (a node was unreachable); resume and `job cancel` finish it, then the job ends failed or
// cancelled (Ledger::compensation_ends).
enum class JobState { running, done, failed, cancelled, cleanup_required, compensating };
std::string to_string(JobState s);
JobState parse_job_state(const std::string& s);

// One process's run of the job: when and where, how it ended, and (a transfer) the payload
// bytes it moved.
struct Session {
    std::string started, ended, end_reason, host;
    long pid = 0;
    std::uint64_t bytes_linked = 0, bytes_copied = 0, bytes_synced = 0;
};

// Whether a kind's sessions record the bytes they moved: a transfer's do; an eviction moves no
// payload and its sessions never had the keys.
enum class SessionBytes { recorded, none };

// The job's target could not take its bytes (below the free-space floor, out of space, its
// Syncthing refusing them): the node, when a run first saw it, how many runs have ended on it
// since, and the last reason (docs/design.md "A job that cannot land"). A run that gets past it
// clears it; past the bound (lib/jobs/transfer/target_room.hpp) the job is undone and released.
struct TargetBlocked {
    std::string node;
    std::string since;        // RFC 3339, when a run first stopped on it
    std::uint32_t runs = 0;   // runs that ended on it, this one included
    std::string reason;       // the last run's stop, as it said it

    [[nodiscard]] nlohmann::json to_json() const;
    [[nodiscard]] static TargetBlocked from_json(const nlohmann::json& j);
};

// A kind's steps: an enum class listing them in the order they run, then `done`, and the names
// the ledger stores for them, in the same order (the ledger's "step" key). A stored name that is
// none of them makes the ledger unreadable: a job is never taken as done because its step is a
// name this archctl does not know.
template <class Step, std::size_t N>
struct StepNames {
    std::array<std::string_view, N> names;

    [[nodiscard]] constexpr std::string_view operator()(Step s) const { return names[static_cast<std::size_t>(s)]; }
    [[nodiscard]] constexpr std::optional<Step> parse(std::string_view name) const {
        for (std::size_t i = 0; i < N; ++i)
            if (names[i] == name) return static_cast<Step>(i);
        return std::nullopt;
    }
    // The stored ledger's step ("step" absent: `first`), or CORRUPT naming what it holds.
    [[nodiscard]] Result<Step> read(const nlohmann::json& ledger, Step first) const {
        const auto it = ledger.find("step");
        if (it == ledger.end()) return first;
        if (it->is_string())
            if (auto s = parse(it->template get_ref<const std::string&>())) return *s;
        return Error(ErrorCode::CORRUPT, fmt::format("the ledger's step {} is not a step archctl knows", it->dump()));
    }
};

// The part of the ledger every kind has (each kind's ledger adds its `step`, an enum of its steps).
struct LedgerCore {
    JobState state = JobState::running;
    nlohmann::json failure;                          // {code, message, step, ...} when it failed
    nlohmann::json kept = nlohmann::json::array();   // what the job left in place, and why
    std::vector<Session> sessions;

protected:
    explicit LedgerCore(SessionBytes bytes) : m_bytes(bytes) {}
    // The shared keys into `j`, and back (absent keys: a fresh ledger's values).
    void write_shared(nlohmann::json& j) const;
    void read_shared(const nlohmann::json& j);

private:
    SessionBytes m_bytes;
};

// A durable write that failed after the outcome was decided: the outcome stands, and the run
// says on its log what could not be recorded; the next run re-derives it from evidence.
void warn_unrecorded(const RunEnv& env, const Status& s, const std::string& what);

// This process's session starts now: `session` gets its time, host and pid.
void start_session(Session& session, Clock& clock);

// The records of one job a run drives, whatever its kind: the kind's ledger, this process's
// session in it, and the durable writes of both and of the job's events.
template <class KindLedger>
struct JobRecords {
    RunEnv& env;
    std::string job_id;
    KindLedger ledger = {};
    Session session = {};

    JobRecords(RunEnv& run_env, std::string id) : env(run_env), job_id(std::move(id)) {}

    // The ledger, durably (at a step boundary).
    [[nodiscard]] Status save() { return env.store.write_ledger(job_id, ledger.to_json()); }
    [[nodiscard]] Status event(const std::string& type, nlohmann::json fields = nlohmann::json::object()) {
        return env.store.append_event(job_id, type, std::move(fields));
    }
    void begin_session() { start_session(session, *env.io.clock); }
    // This process's session ends with `reason`; recorded with the next save().
    void end_session(const std::string& reason) {
        session.ended = format_rfc3339(env.io.clock->now());
        session.end_reason = reason;
        ledger.sessions.push_back(session);
    }
    // "archctl: warning: <what> of job <id> was not recorded: <why>" when `s` failed.
    void warn_unrecorded(const Status& s, const std::string& what) const { jobs::warn_unrecorded(env, s, what + " of job " + job_id); }
    // Give the resource's aliases back (the job's reservation). A reservation left behind is
    // released as stale by the next planner: a failure is a warning.
    void release_reservation(const std::vector<std::string>& aliases) const {
        warn_unrecorded(state::release(env.state_dir, aliases, job_id), "the release of its reservation");
    }
    void log(const std::string& line) const { env.log(line); }
};

}  // namespace archctl::jobs
