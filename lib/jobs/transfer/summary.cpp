#include "lib/jobs/transfer/summary.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "lib/base/json_member.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::transfer {

std::string progress_text(const nlohmann::json& def, const Ledger& l) {
    std::uint64_t total = def.value("delta_bytes", std::uint64_t{0});
    std::size_t files = member_or_empty(def, "files").size();
    std::string kept = kept_text(l.kept);
    std::string kept_note = kept.empty() ? "" : " (" + kept + ")";
    if (l.state == JobState::done) return "done" + kept_note;
    if (l.state == JobState::compensating) {
        std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
        std::string pending = l.failure.is_object() ? l.failure.value("compensation", "") : "";
        return fmt::format("COMPENSATING ({}): {}; undoing it is not finished{}; 'archctl resume {}' finishes it", to_string(l.compensation_ends),
                           msg, pending.empty() ? "" : ": " + pending, def.value("id", "")) +
               kept_note;
    }
    if (l.state != JobState::running) {
        std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
        std::string state = l.state == JobState::cleanup_required ? "CLEANUP_REQUIRED" : to_string(l.state);
        return state + (msg.empty() ? "" : ": " + msg) + kept_note;
    }
    std::uint64_t done = l.synced ? total : std::min(total, l.bytes_present);
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : (l.synced ? 100.0 : 0.0);
    std::size_t files_done = l.synced ? files : 0;
    return fmt::format("{}: {:.0f}% ({}/{}, {}/{} files, step {})", def.value("op", "") == "archive" ? "archiving" : "unarchiving",
                       pct, format_size(done), format_size(total), files_done, files, to_string(l.step));
}

JobSummary summarize_transfer(const state::JobStore& store, const std::string& id, nlohmann::json definition) {
    JobSummary s;
    s.id = id;
    s.definition = std::move(definition);
    // The stored document goes once read: a ledger of 100,000 merged files is ~45 MB of JSON.
    auto parsed = [&] {
        auto stored = store.ledger(id);
        return stored.ok() ? Ledger::from_json(stored.value()) : Result<Ledger>(Ledger{});
    }();
    const Ledger l = parsed.ok() ? std::move(parsed).value() : Ledger{};
    s.stored_ledger = l.to_json();
    s.ledger = {l.state, std::string(to_string(l.step)), l.failure, l.kept, l.synced, l.merged, l.bytes_present, l.target_blocked};
    s.nodes = fmt::format("{} → {}", s.definition.value("source", nlohmann::json::object()).value("node", ""),
                          s.definition.value("target", nlohmann::json::object()).value("node", ""));
    read_lock(store, s);
    s.status = progress_text(s.definition, l);
    s.needs_attention = s.ledger.state == JobState::cleanup_required || s.ledger.state == JobState::compensating ||
                        (s.ledger.state == JobState::failed && s.ledger.merged);
    return s;
}

}  // namespace archctl::jobs::transfer
