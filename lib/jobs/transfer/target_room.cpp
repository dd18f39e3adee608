// A job that cannot land moves on (target_room.hpp, docs/design.md "A job that cannot land"):
// the record of a target that cannot take the job, the bound, and what a run's result says.

#include "lib/jobs/transfer/target_room.hpp"

#include <fmt/format.h>

#include "lib/jobs/transfer/job_run.hpp"

namespace archctl::jobs::transfer {
namespace {

// The failure that undoes and releases the job (TransferRun::fail ends it cancelled).
Error released_error(const JobRun& run, const TargetBlocked& b) {
    return Error(ErrorCode::DISK_INSUFFICIENT,
                 fmt::format("job {} released: '{}' has not taken it since {} ({} runs): {}; the job is undone (its staging removed, "
                             "its reservation freed)",
                             run.def.id, b.node, b.since, b.runs, b.reason),
                 fmt::format("archive it to another node ('archctl {} {} --to NODE'), or free space on '{}' and run it again; "
                             "'archctl tier' moves a candidate to its next archive node by itself",
                             plan::to_string(run.def.op), run.def.qb_id.substr(0, 12), b.node));
}

}  // namespace

bool release_due(const TargetBlocked& blocked, SystemTime now) {
    SystemTime since{};
    if (!parse_rfc3339(blocked.since, since)) return false;
    return blocked.runs >= k_release_runs && now - since >= k_release_after;
}

std::string waiting_text(const TargetBlocked& blocked) {
    return fmt::format("'{}' has not taken it since {} ({} run{}); a run that meets this again once {} runs and {} h have passed "
                       "undoes and releases the job",
                       blocked.node, blocked.since, blocked.runs, blocked.runs == 1 ? "" : "s", k_release_runs, k_release_after.count());
}

std::optional<TargetRoom> target_room_of(const RunResult& r) {
    if (!r.detail.is_object()) return std::nullopt;
    for (auto [key, kind] : {std::pair{"released", TargetRoom::Kind::released}, std::pair{"target_blocked", TargetRoom::Kind::waiting}}) {
        auto it = r.detail.find(key);
        if (it != r.detail.end() && it->is_object()) return TargetRoom{kind, TargetBlocked::from_json(*it)};
    }
    return std::nullopt;
}

StepResult target_cannot_take(JobRun& run, StopReason reason, const std::string& text) {
    const SystemTime now = run.clock().now();
    std::optional<TargetBlocked>& b = run.ledger.target_blocked;
    SystemTime since{};
    if (!b || b->node != run.def.target || !parse_rfc3339(b->since, since)) {
        b = TargetBlocked{run.def.target, format_rfc3339(now), 0, {}};
        run.record("target_blocked", {{"node", run.def.target}, {"reason", text}});
    }
    ++b->runs;
    b->reason = text;
    run.room_stop = true;
    if (release_due(*b, now)) {
        run.releasing = true;
        return StepResult::failed(released_error(run, *b));
    }
    return StepResult::stopped(reason, fmt::format("{}; {}", text, waiting_text(*b)));
}

void target_took(JobRun& run) {
    if (!run.ledger.target_blocked) return;
    run.record("target_unblocked", {{"node", run.ledger.target_blocked->node}, {"since", run.ledger.target_blocked->since},
                                    {"runs", run.ledger.target_blocked->runs}});
    run.ledger.target_blocked.reset();
}

}  // namespace archctl::jobs::transfer
