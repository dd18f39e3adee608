// Step 2, sync: wait until the target's Syncthing holds every file of the job (DESIGN.md §5).

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/jobs/job_run.hpp"
#include "lib/node/job_layout.hpp"
#include "lib/node/ops.hpp"

namespace archctl::jobs {
namespace {

// Names (relative to the route folder) that must be in the target's index before merge.
std::vector<std::string> job_names(const JobRun& run) {
    std::vector<std::string> names;
    auto in_job = [&](const std::string& name) { names.push_back(run.def.id + "/" + name); };
    for (const auto& f : run.def.files) in_job(node::payload_name(f.index));
    in_job(node::aux_path(node::k_torrent_aux));
    if (run.def.partfile == plan::PartfileNeed::carry_source) in_job(node::aux_path(node::k_partfile_aux));
    in_job(node::k_manifest_name);
    in_job(node::k_ready_name);
    return names;
}

// Sleep until the target's Syncthing reports progress (an item pulled, an index commit, a state
// change) or a second passes, but at least 100 ms after the last check so that a burst of events
// does not turn into a busy loop. Without the event stream: a fixed 250 ms.
void wait_for_target(Clock& clock, clients::syncthing::EventStream& events, SteadyTime checked_at) {
    static const std::vector<std::string> k_wake = {"ItemFinished", "LocalIndexUpdated", "RemoteIndexUpdated", "StateChanged"};
    auto woke = events.next(k_wake, std::chrono::seconds(1));
    if (!woke.ok()) {
        clock.sleep_for(std::chrono::milliseconds(250));
        return;
    }
    auto since = clock.steady() - checked_at;
    if (since < std::chrono::milliseconds(100))
        clock.sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::milliseconds(100) - since));
}

}  // namespace

StepResult step_sync(JobRun& run) {
    if (run.ledger.synced) return StepResult::ok();
    auto src = run.source();
    auto dst = run.target();
    if (!src.ok()) return StepResult::failed(src.take_error());
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    // Ask the sender to scan the job prefix now instead of waiting for its watcher.
    ARCHCTL_TRY_STATUS(src.value()->st().scan(run.def.route.id, {run.def.id}));
    auto transport = dst.value()->ops();
    if (!transport.ok()) return StepResult::failed(transport.take_error());
    node::Ops ops(*transport.value());
    std::vector<std::string> names = job_names(run);
    std::uint64_t total = static_cast<std::uint64_t>(run.def.delta_bytes);
    std::uint64_t seen_at_start = run.ledger.bytes_present;
    auto last_floor_probe = run.clock().steady() - std::chrono::seconds(10);
    // A job file is immutable once staged: a name the target's index holds at the global
    // version is not asked about again (the receive check and the recheck still judge it).
    std::set<std::string> current;
    clients::syncthing::EventStream events(dst.value()->st());
    for (;;) {
        auto checked_at = run.clock().steady();
        std::vector<std::string> indexed;
        for (const auto& n : names) {
            if (!current.count(n)) {
                auto rec = dst.value()->st().file(run.def.route.id, n);
                if (!rec.ok()) return StepResult::failed(rec.take_error());
                if (!rec.value() || !rec.value()->local_is_current()) continue;
                current.insert(n);
            }
            indexed.push_back(n.substr(run.def.id.size() + 1));
        }
        std::size_t indexed_count = indexed.size();
        auto check = ops.receive_check({.job_dir = job_dir(run.def.route.target_path, run.def.id),
                                        .files = node::file_entries(run.def.files),
                                        .indexed = std::move(indexed),
                                        .verify_transit = run.def.verify_transit});
        if (!check.ok()) return StepResult::failed(check.take_error());
        std::uint64_t present = check.value().bytes_present;
        if (present > run.ledger.bytes_present) {
            run.session.bytes_synced += present - std::max(run.ledger.bytes_present, seen_at_start);
            seen_at_start = present;
            run.ledger.bytes_present = present;
        }
        std::uint64_t files_done = check.value().files_present;
        run.progress("sync", 2, present, total, files_done, "");
        for (const auto& f : check.value().files)
            if (f.state == "mismatch")
                return StepResult::failed(Error(ErrorCode::TRANSIT_MISMATCH, fmt::format("received file '{}' of job {} does not match the manifest{}",
                                                                                f.name, run.def.id, f.detail.empty() ? "" : ": " + f.detail)));
        if (check.value().complete && indexed_count == names.size()) break;
        if (run.env.budgets.no_wait) return StepResult::stopped("waiting", "still waiting on Syncthing (--no-wait)");
        if (auto stop = run.should_stop()) return *stop;
        if (run.env.budgets.min_free && run.clock().steady() - last_floor_probe >= std::chrono::seconds(2)) {
            last_floor_probe = run.clock().steady();
            auto info = ops.info();
            std::optional<std::uint64_t> free = info.ok() ? node::free_bytes_at(info.value(), run.def.route.target_path) : std::nullopt;
            if (free && *free < run.env.budgets.min_free)
                return StepResult::stopped("disk", fmt::format("destination free space fell below the floor ({} free < {} floor)",
                                                               format_size(*free), format_size(run.env.budgets.min_free)));
        }
        wait_for_target(run.clock(), events, checked_at);
    }
    run.ledger.synced = true;
    ARCHCTL_TRY_STATUS(run.event("synced", {{"bytes", run.ledger.bytes_present}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs
