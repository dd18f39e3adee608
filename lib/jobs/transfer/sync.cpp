// Step 2, sync: wait until the target's Syncthing holds every file of the job (docs/design.md "Step 2: sync").
// No silent waits: while it waits it reads both Syncthings (paused folders, the target's folder
// and pull errors, its connection to the source, the source's remote state) and says why nothing
// moves, on the log and in the progress panel; a known cause that holds k_stall_limit with nothing
// moving ends the run with 'waiting' (exit 10, resumable). The floor counts what Syncthing will
// still write into the target for this job, not only what is there.

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/client/ops.hpp"

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

// A known cause that keeps the job's bytes from moving this long ends the run with 'waiting'
// (the job stays unfinished; `resume` continues it once the cause is fixed).
constexpr auto k_stall_limit = std::chrono::seconds(30);
// Both Syncthings are asked why nothing moves at most this often (db/status is expensive).
constexpr auto k_probe_every = std::chrono::seconds(2);

bool mentions(const std::string& text, const char* what) {
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find(what) != std::string::npos;
}

// Syncthing's words for a full disk: its own free-space check (minDiskFree) and ENOSPC.
bool out_of_space(const std::string& error) { return mentions(error, "insufficient space") || mentions(error, "no space left"); }

// Reads what blockage_of() judges; a read that fails leaves its fact unknown (the sync loop's own
// reads decide what an unreachable Syncthing means).
SyncFacts read_facts(JobRun& run, NodeHandle& src, NodeHandle& dst, const std::string& source_device, std::int64_t& need_bytes) {
    SyncFacts f;
    f.source = run.def.source;
    f.target = run.def.target;
    f.job_id = run.def.id;
    const std::string& folder = run.def.route.id;
    if (auto c = dst.st().folder(folder); c.ok() && c.value()) f.target_paused = c.value()->paused;
    if (auto c = src.st().folder(folder); c.ok() && c.value()) f.source_paused = c.value()->paused;
    if (auto st = dst.st().db_status(folder); st.ok()) {
        f.target_state = st->state;
        f.target_error = st->error;
        need_bytes = st->need_bytes;
        if (st->errors > 0)
            if (auto errors = dst.st().folder_errors(folder); errors.ok()) f.pull_errors = errors.value();
    }
    if (!source_device.empty()) {
        if (auto conns = dst.st().connections(); conns.ok())
            for (const auto& c : conns.value())
                if (c.device_id == source_device) f.peer_connected = c.connected && !c.paused;
        if (!f.target_paused)
            if (auto c = dst.st().completion(folder, source_device); c.ok()) f.remote_state = c->remote_state;
    }
    return f;
}

// Follows the causes the sync step sees: says a new one on the log and in the panel, and turns
// one that held for k_stall_limit with nothing moving into a stop.
class StallWatch {
public:
    // `moved`: the job's bytes on the target or the target's needBytes changed since last time.
    std::optional<StepResult> observe(JobRun& run, const Blockage& b, bool moved, SteadyTime now) {
        std::string why = b.cause.empty() ? "" : fmt::format("waiting for Syncthing on '{}': {}", b.node, b.cause);
        if (why != run.waiting_on) {
            if (!why.empty()) run.log(fmt::format("archctl: job {}: {}", run.def.id, why));
            run.waiting_on = why;
            m_since = now;
        } else if (moved) {
            m_since = now;
        }
        if (why.empty() || now - m_since < k_stall_limit) return std::nullopt;
        return StepResult::stopped("waiting", fmt::format("{} (nothing moved for {}s)", why,
                                                          std::chrono::duration_cast<std::chrono::seconds>(now - m_since).count()));
    }

private:
    SteadyTime m_since{};
};

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

// Free space where Syncthing writes the job on the target: the route folder itself (it may be a
// filesystem of its own below the sync root). When the target cannot measure it the floor is not
// checked this time; the log says so once, until it can be measured again.
std::optional<std::uint64_t> target_free(JobRun& run, NodeHandle& dst, bool& unmeasured_said) {
    auto space = dst.space(run.def.route.target_path);
    if (space.ok()) {
        unmeasured_said = false;
        return space->free;
    }
    if (!unmeasured_said)
        run.log(fmt::format("archctl: job {}: {}; the free-space floor is not checked until it can be", run.def.id,
                            space.error().message));
    unmeasured_said = true;
    return std::nullopt;
}

// Something in the target's staging area that archctl did not stage ends the wait at once: no
// Syncthing setting or wait turns a symlink or a foreign file into the job's payload.
Error foreign_error(const JobRun& run, const std::vector<node::ForeignEntry>& foreign) {
    const node::ForeignEntry& first = foreign.front();
    const std::string name = first.name.rfind(run.def.id, 0) == 0 ? first.name : run.def.id + "/" + first.name;
    std::string more = foreign.size() > 1 ? fmt::format(" (and {} more)", foreign.size() - 1) : "";
    return Error(ErrorCode::STAGING_FOREIGN,
                 fmt::format("the staging area of job {} on '{}' holds '{}' in route folder {}: {}{}", run.def.id, run.def.target, name,
                             run.def.route.id, first.what, more),
                 fmt::format("something other than archctl (the partner device, a user, a program) changed it; remove it from "
                             "'{}/{}' on '{}', then rerun — this job is undone and a new one starts clean",
                             run.def.route.target_path, name, run.def.target));
}

}  // namespace

Blockage blockage_of(const SyncFacts& f) {
    if (f.target_paused) return {f.target, "folder paused"};
    if (f.source_paused || f.remote_state == "paused") return {f.source, "folder paused"};
    if (f.target_state == "error" || !f.target_error.empty()) {
        const std::string error = f.target_error.empty() ? std::string("state error") : f.target_error;
        if (out_of_space(error)) return {f.target, fmt::format("receiver out of disk space (folder error: {})", error)};
        return {f.target, "folder error: " + error};
    }
    if (f.remote_state == "notSharing") return {f.source, fmt::format("folder not shared with '{}'", f.target)};
    if (f.peer_connected && !*f.peer_connected) return {f.target, fmt::format("device '{}' not connected", f.source)};
    if (f.pull_errors.empty()) return {};
    const std::string prefix = f.job_id + "/";
    auto first = std::find_if(f.pull_errors.begin(), f.pull_errors.end(),
                              [&](const clients::syncthing::FolderError& e) { return e.path.rfind(prefix, 0) == 0; });
    if (first == f.pull_errors.end()) first = f.pull_errors.begin();
    std::string more = f.pull_errors.size() > 1 ? fmt::format(" (and {} more)", f.pull_errors.size() - 1) : "";
    if (out_of_space(first->error))
        return {f.target, fmt::format("receiver out of disk space ('{}': {}){}", first->path, first->error, more)};
    return {f.target, fmt::format("pull error on '{}': {}{}", first->path, first->error, more)};
}

StepResult step_sync(JobRun& run) {
    if (run.ledger.synced) return StepResult::ok();
    auto src = run.source();
    auto dst = run.target();
    if (!src.ok()) return StepResult::failed(src.take_error());
    if (!dst.ok()) return StepResult::failed(dst.take_error());
    auto transport = dst.value()->ops();
    if (!transport.ok()) return StepResult::failed(transport.take_error());
    node::Ops ops(*transport.value());
    // A stop held the rest of the job on the target (hold.cpp): lift it before waiting —
    // as far as this run's byte budget reaches, counting what is on the target already. What the
    // target holds is looked at before the hold is lifted: lifted, Syncthing would first repair
    // (or carry to the source) what someone else put in the staging area.
    std::set<std::uint32_t> present_at_start;
    auto before = ops.receive_check({.job_dir = job_dir(run.def.route.target_path, run.def.id),
                                     .files = node::file_entries(run.def.files),
                                     .indexed = std::nullopt,
                                     .verify_transit = false});
    if (!before.ok() && (before.error().is(ErrorCode::PATH_SYMLINK) || before.error().is(ErrorCode::NOT_A_DIRECTORY)))
        return StepResult::failed(foreign_error(run, {{run.def.id, "not the directory archctl staged: " + before.error().message}}));
    if (before.ok() && !before.value().foreign.empty()) return StepResult::failed(foreign_error(run, before.value().foreign));
    if (before.ok())
        for (const auto& f : before.value().files)
            if (f.index && f.state == "present") present_at_start.insert(*f.index);
    if (Status limited = limit_transfer(run, present_at_start, false); !limited.ok())
        return StepResult::stopped("waiting", limited.error().message);
    // Ask the sender to scan the job prefix now instead of waiting for its watcher.
    ARCHCTL_TRY_STATUS(src.value()->st().scan(run.def.route.id, {run.def.id}));
    std::vector<std::string> names = job_names(run);
    std::uint64_t total = static_cast<std::uint64_t>(run.def.delta_bytes);
    std::uint64_t seen_at_start = run.ledger.bytes_present;
    auto last_floor_probe = run.clock().steady() - std::chrono::seconds(10);
    bool unmeasured_said = false;
    auto last_saved = run.clock().steady() - std::chrono::seconds(10);
    // A job file is immutable once staged: a name the target's index holds at the global
    // version is not asked about again (the receive check and the recheck still judge it).
    std::set<std::string> current;
    clients::syncthing::EventStream events(dst.value()->st());
    auto source_status = src.value()->st().status();
    const std::string source_device = source_status.ok() ? source_status->my_id : std::string();
    StallWatch stall;
    auto last_probe = run.clock().steady() - k_probe_every;
    std::uint64_t probed_present = run.ledger.bytes_present;
    std::int64_t probed_need = -1;
    run.waiting_on.clear();
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
        if (!check.ok()) {
            if (check.error().is(ErrorCode::PATH_SYMLINK) || check.error().is(ErrorCode::NOT_A_DIRECTORY))
                return StepResult::failed(foreign_error(run, {{run.def.id, "not the directory archctl staged: " + check.error().message}}));
            return StepResult::failed(check.take_error());
        }
        if (!check.value().foreign.empty()) return StepResult::failed(foreign_error(run, check.value().foreign));
        std::uint64_t present = check.value().bytes_present;
        if (present > run.ledger.bytes_present) {
            run.session.bytes_synced += present - std::max(run.ledger.bytes_present, seen_at_start);
            seen_at_start = present;
            run.ledger.bytes_present = present;
            // `status` reads a running job's progress from its ledger: keep it current.
            if (run.clock().steady() - last_saved >= std::chrono::seconds(2)) {
                last_saved = run.clock().steady();
                ARCHCTL_TRY_STATUS(run.save());
            }
        }
        std::uint64_t files_done = check.value().files_present;
        run.progress("sync", 2, present, total, files_done, "");
        for (const auto& f : check.value().files)
            if (f.state == "mismatch")
                return StepResult::failed(Error(ErrorCode::TRANSIT_MISMATCH, fmt::format("received file '{}' of job {} does not match the manifest{}",
                                                                                f.name, run.def.id, f.detail.empty() ? "" : ": " + f.detail)));
        if (check.value().complete && indexed_count == names.size()) break;
        // Every file this run's budget released is there; the rest waits for the next run.
        if (!run.budget_held.empty()) {
            bool released_here = std::all_of(check.value().files.begin(), check.value().files.end(), [&](const node::ReceivedFile& f) {
                return !f.index || run.budget_held.count(*f.index) || f.state == "present" || f.state == "verified";
            });
            if (released_here)
                return StepResult::stopped("budget", fmt::format("{}; {} file{} of job {} wait for the next run",
                                                                 budget_text(run.env.budgets.moved_before + run.session_bytes(),
                                                                             *run.env.budgets.max_bytes),
                                                                 run.budget_held.size(), run.budget_held.size() == 1 ? "" : "s", run.def.id));
        }
        if (run.clock().steady() - last_probe >= k_probe_every) {
            last_probe = run.clock().steady();
            std::int64_t need = probed_need;
            Blockage why = blockage_of(read_facts(run, *src.value(), *dst.value(), source_device, need));
            bool moved = present != probed_present || need != probed_need;
            probed_present = present;
            probed_need = need;
            if (auto stop = stall.observe(run, why, moved, last_probe)) return *stop;
            run.progress("sync", 2, present, total, files_done, "");
        }
        if (run.env.budgets.no_wait)
            return StepResult::stopped("waiting", "still waiting on Syncthing (--no-wait)" + (run.waiting_on.empty() ? "" : ": " + run.waiting_on));
        if (auto stop = run.should_stop()) return *stop;
        if (run.env.budgets.min_free && run.clock().steady() - last_floor_probe >= std::chrono::seconds(2)) {
            last_floor_probe = run.clock().steady();
            // The floor holds against what Syncthing will still write into the target for this
            // job, not only against what is already there.
            const std::uint64_t still = total > present ? total - present : 0;
            auto free = target_free(run, *dst.value(), unmeasured_said);
            if (free && *free < run.env.budgets.min_free + still)
                return StepResult::stopped(
                    "disk", still == 0 || *free < run.env.budgets.min_free
                                ? fmt::format("destination free space fell below the floor ({} free < {} floor)", format_size(*free),
                                              format_size(run.env.budgets.min_free))
                                : fmt::format("destination free space would fall below the floor ({} free, {} of the job still to "
                                              "arrive, {} floor)",
                                              format_size(*free), format_size(still), format_size(run.env.budgets.min_free)));
        }
        wait_for_target(run.clock(), events, checked_at);
    }
    run.waiting_on.clear();
    run.ledger.synced = true;
    ARCHCTL_TRY_STATUS(run.event("synced", {{"bytes", run.ledger.bytes_present}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs
