#include "lib/jobs/core/ledger.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/lock_file.hpp"

namespace archctl::jobs {
namespace {

nlohmann::json session_json(const Session& s, SessionBytes bytes) {
    nlohmann::json j = {{"started", s.started}, {"ended", s.ended}, {"end_reason", s.end_reason}, {"host", s.host}, {"pid", s.pid}};
    if (bytes == SessionBytes::recorded) {
        j["bytes_linked"] = s.bytes_linked;
        j["bytes_copied"] = s.bytes_copied;
        j["bytes_synced"] = s.bytes_synced;
    }
    return j;
}

Session session_from(const nlohmann::json& s) {
    return {s.value("started", ""),
            s.value("ended", ""),
            s.value("end_reason", ""),
            s.value("host", ""),
            s.value("pid", 0L),
            s.value("bytes_linked", std::uint64_t{0}),
            s.value("bytes_copied", std::uint64_t{0}),
            s.value("bytes_synced", std::uint64_t{0})};
}

}  // namespace

std::string to_string(JobState s) {
    switch (s) {
        case JobState::running: return "running";
        case JobState::done: return "done";
        case JobState::failed: return "failed";
        case JobState::cancelled: return "cancelled";
        case JobState::cleanup_required: return "cleanup_required";
        case JobState::compensating: return "compensating";
    }
    return "running";
}

JobState parse_job_state(const std::string& s) {
    if (s == "done") return JobState::done;
    if (s == "failed") return JobState::failed;
    if (s == "cancelled") return JobState::cancelled;
    if (s == "cleanup_required") return JobState::cleanup_required;
    if (s == "compensating") return JobState::compensating;
    return JobState::running;
}

void LedgerCore::write_shared(nlohmann::json& j) const {
    nlohmann::json sess = nlohmann::json::array();
    for (const auto& s : sessions) sess.push_back(session_json(s, m_bytes));
    j["state"] = to_string(state);
    j["failure"] = failure;
    j["kept"] = kept;
    j["sessions"] = std::move(sess);
}

void LedgerCore::read_shared(const nlohmann::json& j) {
    state = parse_job_state(j.value("state", "running"));
    failure = j.value("failure", nlohmann::json());
    kept = j.value("kept", nlohmann::json::array());
    sessions.clear();
    for (const auto& s : j.value("sessions", nlohmann::json::array())) sessions.push_back(session_from(s));
}

void warn_unrecorded(const RunEnv& env, const Status& s, const std::string& what) {
    if (!s.ok()) env.log(fmt::format("archctl: warning: {} was not recorded: {}", what, s.error().message));
}

void start_session(Session& session, Clock& clock) {
    session.started = format_rfc3339(clock.now());
    session.host = host_name();
    session.pid = ::getpid();
}

nlohmann::json TargetBlocked::to_json() const {
    return {{"node", node}, {"since", since}, {"runs", runs}, {"reason", reason}};
}

TargetBlocked TargetBlocked::from_json(const nlohmann::json& j) {
    TargetBlocked b;
    b.node = j.value("node", "");
    b.since = j.value("since", "");
    b.runs = j.value("runs", std::uint32_t{0});
    b.reason = j.value("reason", "");
    return b;
}

}  // namespace archctl::jobs
