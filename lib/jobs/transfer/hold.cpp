// Holding a stopped job's transfer (docs/design.md "A stop stops the bytes").
//
// Mechanism: ignore patterns for the job's directory in the route folder on the target's
// Syncthing (the receiver), written at the top of its .stignore through db/ignores:
//
//   // archctl hold <job-id>: <reason>; lifted by the job's next run
//   /<job-id>
//
// then the folder is restarted (paused and resumed through its config), because Syncthing only
// consults new patterns when it queues a pull: measured on 1.19.2 with 3 MiB files at 2 MiB/s,
// patterns alone let the running pull iteration bring in the whole rest of the job; with the
// restart nothing more arrived, and after the release the pull resumed from the kept temp files
// with the sender's versions (no rescan churn).
//
// Why not leave the route folder paused: a route carries every job between its two nodes, so a
// paused folder stops the other jobs on it too, and a paused folder is exactly what route health
// calls broken ("folder paused"), so a new job on the route would refuse or wait on it. Ignore
// patterns are per job, stay on the target (.stignore never travels), leave the route healthy,
// and are themselves the durable record: the marker line names the job, so the next run finds
// and lifts exactly this job's hold from the target's live state, with nothing in archctl's
// records that could disagree with it. `transfer_held` / `transfer_released` events say when.
//
// A byte budget holds files before they move (limit_transfer): the hold then names payload files,
// one line each, instead of the whole directory —
//
//   // archctl hold <job-id>: budget; lifted by the job's next run
//   /<job-id>/p/0/7
//   /<job-id>/p/0/9
//
// written before the stage links anything (nothing of the job is announced yet, so no restart) and
// again when the sync step starts (replacing the whole-directory hold a stop left, in one write,
// so nothing slips through between a release and a new hold). `transfer_limited` says when.

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/jobs/transfer/job_run.hpp"
#include "lib/node/wire/job_layout.hpp"

namespace archctl::jobs::transfer {
namespace {

std::string marker_prefix(const std::string& job_id) { return "// archctl hold " + job_id + ":"; }

bool is_marker(const std::string& line, const std::string& job_id) { return line.rfind(marker_prefix(job_id), 0) == 0; }

// A pattern line of the job's hold: its whole directory, or one path below it.
bool is_job_pattern(const std::string& line, const std::string& job_id) {
    const std::string dir = "/" + job_id;
    return line == dir || line.rfind(dir + "/", 0) == 0;
}

// `lines` without the job's hold: each marker and the pattern lines after it (put in `patterns`).
std::vector<std::string> without_hold(const std::vector<std::string>& lines, const std::string& job_id, bool& found,
                                      std::vector<std::string>* patterns = nullptr) {
    std::vector<std::string> out;
    found = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (is_marker(lines[i], job_id)) {
            found = true;
            while (i + 1 < lines.size() && is_job_pattern(lines[i + 1], job_id)) {
                if (patterns) patterns->push_back(lines[i + 1]);
                ++i;
            }
            continue;
        }
        out.push_back(lines[i]);
    }
    return out;
}

// Restart the folder so that a pull already running stops and the next one honours the new
// patterns. A folder the user paused is left as it is (nothing pulls into it anyway).
Status restart_folder(clients::syncthing::Api& st, const std::string& folder) {
    auto f = st.folder(folder);
    if (!f.ok()) return f.take_error();
    if (!f.value() || f.value()->paused) return ok_status();
    ARCHCTL_TRY_STATUS(st.patch_folder(folder, {{"paused", true}}));
    Status resumed = st.patch_folder(folder, {{"paused", false}});
    if (!resumed.ok()) resumed = st.patch_folder(folder, {{"paused", false}});
    if (!resumed.ok())
        return Error(resumed.error().code, fmt::format("the route folder '{}' was left paused: {}", folder, resumed.error().message),
                     fmt::format("resume it in Syncthing (PATCH /rest/config/folders/{} paused=false) or rerun archctl", folder));
    return ok_status();
}

Error hold_error(const JobRun& run, const std::string& what, const Error& cause) {
    return Error(cause.code, fmt::format("cannot {} the transfer of job {} on '{}': {}", what, run.def.id, run.def.target, cause.message),
                 cause.hint);
}

// The job's hold on the target becomes `patterns` (replacing any it had), under one marker line
// naming `reason`. A path newly held may be in a pull already: the folder is restarted unless the
// caller knows nothing of the job can be announced yet. True when the lines changed.
Result<bool> set_hold(JobRun& run, const std::string& reason, const std::vector<std::string>& patterns, bool restart) {
    auto dst = run.target();
    if (!dst.ok()) return hold_error(run, "hold", dst.error());
    auto& st = dst.value()->st();
    auto current = st.ignores(run.def.route.id);
    if (!current.ok()) return hold_error(run, "hold", current.error());
    bool found = false;
    std::vector<std::string> before;
    std::vector<std::string> rest = without_hold(current->lines, run.def.id, found, &before);
    run.released = false;
    if (found && before == patterns) return false;
    // First match wins in .stignore: the hold goes above any line that could re-include it.
    std::vector<std::string> lines = {fmt::format("{} {}; lifted by the job's next run", marker_prefix(run.def.id), reason)};
    lines.insert(lines.end(), patterns.begin(), patterns.end());
    lines.insert(lines.end(), rest.begin(), rest.end());
    if (Status s = st.set_ignores(run.def.route.id, lines); !s.ok()) return hold_error(run, "hold", s.error());
    const bool whole_before = std::find(before.begin(), before.end(), "/" + run.def.id) != before.end();
    const bool newly_held = !whole_before && std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
        return std::find(before.begin(), before.end(), p) == before.end();
    });
    if (restart && newly_held)
        if (Status s = restart_folder(st, run.def.route.id); !s.ok()) return hold_error(run, "hold", s.error());
    return true;
}

}  // namespace

bool holds_transfer(const std::vector<std::string>& ignore_lines, const std::string& job_id) {
    return std::any_of(ignore_lines.begin(), ignore_lines.end(), [&](const std::string& l) { return is_marker(l, job_id); });
}

Status hold_transfer(JobRun& run, const std::string& reason) {
    // After sync the job's payload is on the target; nothing of it travels any more.
    if (run.ledger.synced) return ok_status();
    ARCHCTL_TRY_ASSIGN(bool changed, set_hold(run, reason, {"/" + run.def.id}, true));
    if (changed) run.record("transfer_held", {{"node", run.def.target}, {"folder", run.def.route.id}, {"reason", reason}});
    return ok_status();
}

Status limit_transfer(JobRun& run, const std::set<std::uint32_t>& present, bool before_staging) {
    run.budget_held.clear();
    if (!run.env.budgets.max_bytes || run.ledger.synced) return release_transfer(run);
    const std::uint64_t used = run.env.budgets.moved_before + run.session_bytes();
    const std::uint64_t left = *run.env.budgets.max_bytes > used ? *run.env.budgets.max_bytes - used : 0;
    std::vector<const JobFile*> files;
    for (const auto& f : run.def.files)
        if (!present.count(f.index)) files.push_back(&f);
    std::sort(files.begin(), files.end(), [](const JobFile* a, const JobFile* b) { return a->index < b->index; });
    std::uint64_t released = 0, held_bytes = 0;
    std::vector<std::string> patterns;
    for (const JobFile* f : files) {
        // The file that crosses the cap still travels: a job larger than any budget moves on.
        if (released < left) {
            released += f->size;
            continue;
        }
        run.budget_held.insert(f->index);
        held_bytes += f->size;
        patterns.push_back(fmt::format("/{}/{}", run.def.id, node::payload_name(f->index, run.def.payload_layout)));
    }
    if (patterns.empty()) return release_transfer(run);
    ARCHCTL_TRY_ASSIGN(bool changed, set_hold(run, "budget", patterns, !before_staging));
    if (changed)
        run.record("transfer_limited", {{"node", run.def.target}, {"folder", run.def.route.id}, {"files_held", patterns.size()},
                                        {"bytes_held", held_bytes}, {"bytes_released", released}});
    return ok_status();
}

Status release_transfer(JobRun& run) {
    if (run.released) return ok_status();
    auto dst = run.target();
    if (!dst.ok()) return hold_error(run, "release", dst.error());
    auto& st = dst.value()->st();
    auto current = st.ignores(run.def.route.id);
    if (!current.ok()) return hold_error(run, "release", current.error());
    bool found = false;
    std::vector<std::string> lines = without_hold(current->lines, run.def.id, found);
    if (found) {
        if (Status s = st.set_ignores(run.def.route.id, lines); !s.ok()) return hold_error(run, "release", s.error());
        run.record("transfer_released", {{"node", run.def.target}, {"folder", run.def.route.id}});
    }
    run.released = true;
    return ok_status();
}

void hold_after_stop(JobRun& run, StopReason reason) {
    if (reason == StopReason::none) return;
    // --no-wait asks archctl not to wait while Syncthing carries the job; holding there would
    // keep a loop of --no-wait runs from ever moving a byte.
    if (reason == StopReason::waiting && run.env.budgets.no_wait) return;
    if (run.ledger.synced) return;  // every byte has arrived: nothing left to hold
    Status s = hold_transfer(run, to_string(reason));
    if (!s.ok())
        run.log(fmt::format("archctl: warning: {}; Syncthing may go on carrying it until the next run", s.error().message));
}

void release_before_run(JobRun& run) {
    // Not skipped for a synced job: a ledger rebuilt from evidence may say synced while the
    // target still holds a hold written before the ledger was lost.
    Status s = release_transfer(run);
    if (!s.ok()) run.log(fmt::format("archctl: warning: {}; the sync step tries again", s.error().message));
}

}  // namespace archctl::jobs::transfer
