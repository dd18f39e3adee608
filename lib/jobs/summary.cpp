#include "lib/jobs/summary.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"

namespace archctl::jobs {

bool JobSummary::finished() const {
    return ledger.state == JobState::done || ledger.state == JobState::cancelled || ledger.state == JobState::failed;
}

nlohmann::json JobSummary::to_json() const {
    return {{"id", id},
            {"op", definition.value("op", "")},
            {"resource", definition.value("qb_id", "")},
            {"name", definition.value("name", "")},
            {"source", definition.value("source", nlohmann::json::object()).value("node", "")},
            {"target", definition.value("target", nlohmann::json::object()).value("node", "")},
            {"state", to_string(ledger.state)},
            {"step", ledger.step},
            {"running", running},
            {"status", status},
            {"needs_attention", needs_attention}};
}

std::string progress_text(const nlohmann::json& def, const Ledger& l) {
    std::uint64_t total = def.value("delta_bytes", std::uint64_t{0});
    std::size_t files = def.value("files", nlohmann::json::array()).size();
    if (l.state == JobState::done) return "done";
    if (l.state != JobState::running) {
        std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
        std::string state = l.state == JobState::cleanup_required ? "CLEANUP_REQUIRED" : to_string(l.state);
        return state + (msg.empty() ? "" : ": " + msg);
    }
    std::uint64_t done = l.synced ? total : std::min(total, l.bytes_present);
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : (l.synced ? 100.0 : 0.0);
    std::size_t files_done = l.synced ? files : 0;
    return fmt::format("{}: {:.0f}% ({}/{}, {}/{} files, step {})", def.value("op", "") == "archive" ? "archiving" : "unarchiving",
                       pct, format_size(done), format_size(total), files_done, files, l.step);
}

Result<std::vector<JobSummary>> summarize_jobs(const state::JobStore& store) {
    ARCHCTL_TRY_ASSIGN(auto ids, store.list());
    std::vector<JobSummary> out;
    for (const auto& id : ids) {
        auto def = store.definition(id);
        if (!def.ok()) continue;
        JobSummary s;
        s.id = id;
        s.definition = def.value();
        auto l = store.ledger(id);
        if (l.ok()) s.ledger = Ledger::from_json(l.value());
        auto lock = LockFile::read(store.dir_of(id));
        s.running = lock.ok() && lock->host == host_name() && process_start_time(lock->pid) == lock->start_time;
        s.status = progress_text(s.definition, s.ledger);
        s.needs_attention = s.ledger.state == JobState::cleanup_required ||
                            (s.ledger.state == JobState::failed && s.ledger.merged);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace archctl::jobs
