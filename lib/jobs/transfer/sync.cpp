// Step 2, sync: wait until the target's Syncthing holds every file of the job (docs/design.md "Step 2: sync").
// No silent waits: while it waits it reads both Syncthings (paused folders, the target's folder
// and pull errors, its connection to the source, the source's remote state) and says why nothing
// moves, on the log and in the progress panel; a known cause that holds k_stall_limit with nothing
// moving ends the run with 'waiting' (exit 10, resumable). The floor counts what Syncthing will
// still write into the target for this job, not only what is there.
//
// What it costs does not grow with files × polls: progress comes from one walk of the job's
// directory on the target (receive_check) and the folder's db/status; the target's index is
// read only once the walk finds every file under its final name, in two requests for the whole
// job (db/browse of the job's prefix, then db/need), and a walk waits a few times as long as
// the last one took. A job staged by an earlier run (a resume) reads the index before its
// first walk, so a job Syncthing carried meanwhile is confirmed by one walk; a walk reports
// only the entries not yet there.

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "lib/base/text.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/wire/job_layout.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs::transfer {
namespace {

// Names (relative to the route folder) that must be in the target's index before merge.
std::vector<std::string> job_names(const JobRun& run) {
    std::vector<std::string> names;
    auto in_job = [&](const std::string& name) { names.push_back(run.def.id + "/" + name); };
    for (const auto& f : run.def.files) in_job(node::payload_name(f.index, run.def.payload_layout));
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
        return StepResult::stopped(StopReason::waiting, fmt::format("{} (nothing moved for {}s)", why,
                                                          std::chrono::duration_cast<std::chrono::seconds>(now - m_since).count()));
    }

private:
    SteadyTime m_since{};
};

// Sleep until the target's Syncthing reports progress (an item pulled, an index commit, a state
// change) or a second passes, but at least `gap` after the last check so that a burst of events
// does not turn into a busy loop. Without the event stream: `gap`, at least 250 ms.
void wait_for_target(Clock& clock, clients::syncthing::EventStream& events, SteadyTime checked_at, std::chrono::milliseconds gap) {
    static const std::vector<std::string> k_wake = {"ItemFinished", "LocalIndexUpdated", "RemoteIndexUpdated", "StateChanged"};
    auto woke = events.next(k_wake, std::chrono::seconds(1));
    if (!woke.ok()) {
        clock.sleep_for(std::max(gap, std::chrono::milliseconds(250)));
        return;
    }
    auto since = clock.steady() - checked_at;
    if (since < gap) clock.sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(gap - since));
}

// The pause after a look at the target: k_walk_share times what the look (the walk, and the
// index reads before it) took, at least k_min_gap.
constexpr int k_walk_share = 3;
constexpr auto k_min_gap = std::chrono::milliseconds(100);

std::chrono::milliseconds gap_after(SteadyTime started, SteadyTime ended) {
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(ended - started);
    return std::max<std::chrono::milliseconds>(k_min_gap, took * k_walk_share);
}

// What the target's index says of the job's names (docs/design.md "Step 2: sync"). A name is
// indexed at the global version when the folder's global index holds it (db/browse of the job's
// prefix: not deleted, not invalid) and the target does not need it (db/need: a file pulled
// under its final name but not yet committed is still needed). Browse comes first: a name the
// global index does not hold yet is not needed either. A confirmed name is not asked about
// again (a job file is immutable once staged; the walk still judges it each time). A handful of
// stragglers is asked about one by one (db/file: local version equals global).
class IndexEvidence {
public:
    explicit IndexEvidence(const JobRun& run) : m_names(job_names(run)), m_job_id(run.def.id), m_folder(run.def.route.id) {}

    Status refresh(clients::syncthing::Api& st) {
        std::vector<std::string> pending;
        for (const auto& n : m_names)
            if (!m_current.count(n)) pending.push_back(n);
        if (pending.empty()) return ok_status();
        if (pending.size() <= k_stragglers) {
            for (const auto& n : pending) {
                ARCHCTL_TRY_ASSIGN(auto rec, st.file(m_folder, n));
                if (rec && rec->local_is_current()) m_current.insert(n);
            }
            return ok_status();
        }
        ARCHCTL_TRY_ASSIGN(auto global, st.browse(m_folder, m_job_id));
        ARCHCTL_TRY_ASSIGN(auto need, st.need(m_folder));
        std::set<std::string> held, needed;
        for (const auto& e : global)
            if (!e.directory) held.insert(e.name);
        for (const auto* list : {&need.progress, &need.queued, &need.rest})
            for (const auto& e : *list) needed.insert(e.name);
        for (const auto& n : pending)
            if (held.count(n) && !needed.count(n)) m_current.insert(n);
        return ok_status();
    }

    // The confirmed names, relative to the job directory (receive_check's `indexed`).
    [[nodiscard]] std::vector<std::string> indexed() const {
        std::vector<std::string> out;
        for (const auto& n : m_current) out.push_back(n.substr(m_job_id.size() + 1));
        return out;
    }
    // Whether `name` (relative to the job directory) is confirmed.
    [[nodiscard]] bool has(const std::string& name) const { return m_current.count(m_job_id + "/" + name) > 0; }
    [[nodiscard]] bool all() const { return m_current.size() == m_names.size(); }

private:
    static constexpr std::size_t k_stragglers = 8;
    std::vector<std::string> m_names;  // relative to the route folder
    std::string m_job_id, m_folder;
    std::set<std::string> m_current;
};

// One look at the target: the walk of the job directory, and whether it was given the index's
// evidence (read just before it).
struct Look {
    node::ReceiveCheckResult result;
    bool given = false;
};

// Whether a walk found every file of the job under its final name (no temp file, nothing
// absent), so that the target's index is worth reading. A walk given index evidence calls a file
// in transit also when only the index does not list it yet: that one counts as there.
bool all_at_final_names(const Look& look, const IndexEvidence& evidence) {
    const node::ReceiveCheckResult& r = look.result;
    if (!r.job_exists || !r.manifest || !r.absent.empty()) return false;
    return std::all_of(r.files.begin(), r.files.end(), [&](const node::ReceivedFile& f) {
        if (f.state == node::Arrival::absent) return false;
        return f.state != node::Arrival::in_transit || (look.given && !evidence.has(f.name));
    });
}

// The job's payload files as a walk asks about them: index and size (the path is not read).
std::vector<node::FileEntry> walk_entries(const JobRun& run) {
    std::vector<node::FileEntry> out;
    out.reserve(run.def.files.size());
    for (const auto& f : run.def.files) out.push_back(node::FileEntry{f.index, "", f.size});
    return out;
}

// The payload indices a walk found there: those it asked about and did not list (it lists only
// what is not there yet) or listed as present or verified.
std::set<std::uint32_t> indices_there(const JobRun& run, const node::ReceiveCheckResult& r) {
    std::set<std::uint32_t> missing(r.absent.begin(), r.absent.end());
    for (const auto& f : r.files)
        if (f.index && f.state != node::Arrival::present && f.state != node::Arrival::verified) missing.insert(*f.index);
    std::set<std::uint32_t> out;
    for (const auto& f : run.def.files)
        if (!missing.count(f.index)) out.insert(f.index);
    return out;
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
                             run.def.route.id, one_line(first.what), more),
                 fmt::format("something other than archctl (the partner device, a user, a program) changed it; remove it from "
                             "'{}/{}' on '{}', then rerun — this job is undone and a new one starts clean",
                             run.def.route.target_path, name, run.def.target));
}

}  // namespace

Blockage blockage_of(const SyncFacts& f) {
    if (f.target_paused) return {f.target, "folder paused"};
    if (f.source_paused || f.remote_state == "paused") return {f.source, "folder paused"};
    if (f.target_state == "error" || !f.target_error.empty()) {
        // Syncthing's error texts may carry their own line breaks: folded, so the message stays one line.
        const std::string error = f.target_error.empty() ? std::string("state error") : one_line(f.target_error);
        if (out_of_space(error)) return {f.target, fmt::format("receiver out of disk space (folder error: {})", error), true};
        return {f.target, "folder error: " + error, true};
    }
    if (f.remote_state == "notSharing") return {f.source, fmt::format("folder not shared with '{}'", f.target)};
    if (f.peer_connected && !*f.peer_connected) return {f.target, fmt::format("device '{}' not connected", f.source)};
    if (f.pull_errors.empty()) return {};
    const std::string prefix = f.job_id + "/";
    auto first = std::find_if(f.pull_errors.begin(), f.pull_errors.end(),
                              [&](const clients::syncthing::FolderError& e) { return e.path.rfind(prefix, 0) == 0; });
    if (first == f.pull_errors.end()) first = f.pull_errors.begin();
    std::string more = f.pull_errors.size() > 1 ? fmt::format(" (and {} more)", f.pull_errors.size() - 1) : "";
    const std::string error = one_line(first->error);
    if (out_of_space(error)) return {f.target, fmt::format("receiver out of disk space ('{}': {}){}", first->path, error, more), true};
    return {f.target, fmt::format("pull error on '{}': {}{}", first->path, error, more), true};
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
    IndexEvidence evidence(run);
    const std::vector<node::FileEntry> entries = walk_entries(run);
    // A look: the index first when asked (read before the walk, never after it: a name the index
    // confirms is judged on disk after that), then the walk, told what the index confirmed.
    auto look = [&](bool read_index, bool verify) -> Result<Look> {
        node::ReceiveCheckRequest request{.job_dir = job_dir(run.def.route.target_path, run.def.id),
                                          .files = entries,
                                          .indexed = std::nullopt,
                                          .verify_transit = verify,
                                          .layout = run.def.payload_layout,
                                          .unfinished_only = true,
                                          .absent_ranges = true};
        if (read_index) {
            ARCHCTL_TRY_STATUS(evidence.refresh(dst.value()->st()));
            if (evidence.all()) request.indexed_all = true;
            else request.indexed = evidence.indexed();
        }
        auto check = ops.receive_check(std::move(request));
        if (!check.ok()) {
            if (check.error().is(ErrorCode::PATH_SYMLINK) || check.error().is(ErrorCode::NOT_A_DIRECTORY))
                return foreign_error(run, {{run.def.id, "not the directory archctl staged: " + check.error().message}});
            return check.take_error();
        }
        return Look{std::move(check).value(), read_index};
    };
    // A stop held the rest of the job on the target (hold.cpp): lift it before waiting —
    // as far as this run's byte budget reaches, counting what is on the target already. What the
    // target holds is looked at before the hold is lifted: lifted, Syncthing would first repair
    // (or carry to the source) what someone else put in the staging area. A job an earlier run
    // staged had time to arrive: that first look reads the index too, and is the loop's first.
    const bool index_first = !run.staged_here;
    auto first_at = run.clock().steady();
    auto first = look(index_first, index_first && run.def.verify_transit);
    if (!first.ok()) return StepResult::failed(first.take_error());
    if (!first.value().result.foreign.empty()) return StepResult::failed(foreign_error(run, first.value().result.foreign));
    if (Status limited = limit_transfer(run, indices_there(run, first.value().result), false); !limited.ok())
        return StepResult::stopped(StopReason::waiting, limited.error().message);
    // Ask the sender to scan the job prefix now instead of waiting for its watcher: at once for
    // files this run staged, otherwise only once the job turns out to wait (a scan of 100,000
    // files takes the source's Syncthing seconds; what an earlier run staged it has seen).
    bool scanned = false;
    auto scan_once = [&]() -> Status {
        if (scanned) return ok_status();
        scanned = true;
        return src.value()->st().scan(run.def.route.id, {run.def.id});
    };
    if (run.staged_here) ARCHCTL_TRY_STATUS(scan_once());
    std::uint64_t total = static_cast<std::uint64_t>(run.def.delta_bytes);
    std::uint64_t seen_at_start = run.ledger.bytes_present;
    auto last_floor_probe = run.clock().steady() - std::chrono::seconds(10);
    bool unmeasured_said = false;
    auto last_saved = run.clock().steady() - std::chrono::seconds(10);
    clients::syncthing::EventStream events(dst.value()->st());
    auto source_status = src.value()->st().status();
    const std::string source_device = source_status.ok() ? source_status->my_id : std::string();
    StallWatch stall;
    bool target_refuses = false;  // the last probe found the target's Syncthing refusing the job
    auto last_probe = run.clock().steady() - k_probe_every;
    std::uint64_t probed_present = run.ledger.bytes_present;
    std::int64_t probed_need = -1;
    std::uint64_t files_done = 0;
    // The first look is the loop's first when it read the index; else the loop walks again at
    // once, with the index if that look found every file under its final name.
    std::optional<Look> pending;
    bool read_index = false;
    if (index_first) pending = std::move(first).value();
    else read_index = all_at_final_names(first.value(), evidence);
    run.waiting_on.clear();
    for (;;) {
        auto checked_at = run.clock().steady();
        if (pending) {
            checked_at = first_at;
        } else {
            auto next = look(read_index, run.def.verify_transit);
            if (!next.ok()) return StepResult::failed(next.take_error());
            pending = std::move(next).value();
        }
        const Look current = std::move(*pending);
        pending.reset();
        const node::ReceiveCheckResult& result = current.result;
        const bool given = current.given;
        const auto gap = gap_after(checked_at, run.clock().steady());
        if (!result.foreign.empty()) return StepResult::failed(foreign_error(run, result.foreign));
        std::uint64_t present = result.bytes_present;
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
        // A walk given index evidence counts only indexed files as there; the walk without it
        // counts every file under its final name.
        files_done = given ? std::max(files_done, result.files_present) : result.files_present;
        run.progress("sync", 2, present, total, files_done, "");
        // Without index evidence a file under its final name may still be replaced by Syncthing:
        // only an indexed file that does not match fails the job.
        if (given)
            for (const auto& f : result.files)
                if (f.state == node::Arrival::mismatch)
                    return StepResult::failed(Error(ErrorCode::TRANSIT_MISMATCH,
                                                    fmt::format("received file '{}' of job {} does not match the manifest{}", f.name,
                                                                run.def.id, f.detail.empty() ? "" : ": " + f.detail)));
        if (given && result.complete && evidence.all()) break;
        read_index = all_at_final_names(current, evidence);
        // Every file this run's budget released is there; the rest waits for the next run.
        if (!run.budget_held.empty()) {
            bool released_here = std::all_of(result.files.begin(), result.files.end(), [&](const node::ReceivedFile& f) {
                return !f.index || run.budget_held.count(*f.index) || f.state == node::Arrival::present || f.state == node::Arrival::verified;
            }) && std::all_of(result.absent.begin(), result.absent.end(), [&](std::uint32_t i) { return run.budget_held.count(i) > 0; });
            if (released_here)
                return StepResult::stopped(StopReason::budget, fmt::format("{}; {} file{} of job {} wait for the next run",
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
            target_refuses = why.target_refuses;
            if (auto stop = stall.observe(run, why, moved, last_probe))
                return why.target_refuses ? target_cannot_take(run, stop->reason, stop->text) : *stop;
            run.progress("sync", 2, present, total, files_done, "");
        }
        if (auto stop = run.should_stop()) return *stop;
        if (run.env.budgets.min_free && run.clock().steady() - last_floor_probe >= std::chrono::seconds(2)) {
            last_floor_probe = run.clock().steady();
            // The floor holds against what Syncthing will still write into the target for this
            // job, not only against what is already there.
            const std::uint64_t still = total > present ? total - present : 0;
            auto free = target_free(run, *dst.value(), unmeasured_said);
            if (free && *free < run.env.budgets.min_free + still)
                return target_cannot_take(
                    run, StopReason::disk, still == 0 || *free < run.env.budgets.min_free
                                ? fmt::format("destination free space on '{}' fell below the floor ({} free < {} floor)", run.def.target,
                                              format_size(*free), format_size(run.env.budgets.min_free))
                                : fmt::format("destination free space on '{}' would fall below the floor ({} free, {} of the job still "
                                              "to arrive, {} floor)",
                                              run.def.target, format_size(*free), format_size(still), format_size(run.env.budgets.min_free)));
        }
        if (Status scan = scan_once(); !scan.ok()) return StepResult::failed(scan.error());
        // --no-wait ends the wait now, after the floor's look; a target that refuses the job counts
        // towards its bound all the same, so a loop of --no-wait runs moves on from a full node too.
        if (run.env.budgets.no_wait) {
            const std::string text = "still waiting on Syncthing (--no-wait)" + (run.waiting_on.empty() ? "" : ": " + run.waiting_on);
            return target_refuses ? target_cannot_take(run, StopReason::waiting, text) : StepResult::stopped(StopReason::waiting, text);
        }
        wait_for_target(run.clock(), events, checked_at, gap);
    }
    run.waiting_on.clear();
    target_took(run);
    run.ledger.synced = true;
    ARCHCTL_TRY_STATUS(run.event("synced", {{"bytes", run.ledger.bytes_present}}));
    return StepResult::ok();
}

}  // namespace archctl::jobs::transfer
