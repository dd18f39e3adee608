// The job listings every command reads (driver.hpp): rows of every kind from the job
// directories and the job index, hiding finished jobs, and finding a job by its id.

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/text.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/tombstones.hpp"

namespace archctl::jobs {

Result<std::vector<JobSummary>> summarize_jobs(const state::JobStore& store) {
    ARCHCTL_TRY_ASSIGN(auto ids, store.list());
    ARCHCTL_TRY_ASSIGN(auto damaged, store.damaged());
    std::vector<JobSummary> out;
    for (const auto& id : ids) {
        auto def = store.definition(id);
        if (!def.ok()) continue;
        const Kind& kind = kind_of(def.value());
        out.push_back(kind.summarize(store, id, std::move(def).value()));
        read_lock(store, out.back());
    }
    for (const auto& id : damaged) out.push_back(summarize_damaged(store, id));
    std::sort(out.begin(), out.end(), [](const JobSummary& a, const JobSummary& b) { return a.id < b.id; });
    return out;
}

namespace {

// Tombstone, then the job's records, then (when `forget`) its place in the index. Readers drop a
// finished-log row whose job directory is gone, so a crash before the index changes shows
// nothing removed again.
Status hide(const state::StateDir& dir, const JobSummary& row, bool forget) {
    if (!row.finished() && !row.damaged)
        return Error(ErrorCode::JOB_ACTIVE, fmt::format("job {} is not finished", row.id), fmt::format("cancel it first: 'archctl job cancel {}'", row.id));
    ARCHCTL_TRY_STATUS(state::write_tombstone(dir, {row.id, row.definition.value("request_digest", ""), to_string(row.ledger.state), ""}));
    ARCHCTL_TRY_STATUS(state::JobStore(dir).remove(row.id));
    crash_point("job.removed");
    return forget ? state::JobIndex(dir).forget(row.id, row.retired) : Status{};
}

// The row of one job from its own directory; nullopt when it never became a job (no
// definition and no work), damaged when it worked but its definition is unreadable.
std::optional<JobSummary> summarize_one(const state::JobStore& store, const std::string& id) {
    auto def = store.definition(id);
    if (!def.ok()) {
        if (store.is_damaged(id)) return summarize_damaged(store, id);
        return std::nullopt;
    }
    const Kind& kind = kind_of(def.value());
    JobSummary row = kind.summarize(store, id, std::move(def).value());
    read_lock(store, row);
    return row;
}

void sort_rows(std::vector<JobSummary>& rows) {
    std::sort(rows.begin(), rows.end(), [](const JobSummary& a, const JobSummary& b) { return a.id < b.id; });
}

}  // namespace

Status hide_job(const state::StateDir& dir, const JobSummary& row) { return hide(dir, row, true); }

bool retirable(const JobSummary& row) {
    return !row.damaged && (row.ledger.state == JobState::done || row.ledger.state == JobState::cancelled) && !row.needs_attention &&
           (!row.ledger.kept.is_array() || row.ledger.kept.empty());
}

// One job at a time into the new index, under its lock from before the first job is read (a job
// another process retires meanwhile waits and lands in the new log), so a state directory of a
// million finished jobs never holds their rows at once.
Status rebuild_job_index(const state::JobStore& store) {
    ARCHCTL_TRY_ASSIGN(state::IndexRebuild rebuild, state::JobIndex(store.state_dir()).begin_rebuild());
    ARCHCTL_TRY_ASSIGN(auto names, list_dir(store.state_dir().jobs(), "cannot list jobs in"));  // sorted: ids in order
    for (const auto& id : names) {
        auto row = summarize_one(store, id);
        if (!row) continue;
        if (retirable(*row)) ARCHCTL_TRY_STATUS(rebuild.add_finished({id, row->to_json(), row->nodes}));
        else ARCHCTL_TRY_STATUS(rebuild.add_active(id));
    }
    return rebuild.commit();
}

Result<std::vector<JobSummary>> summarize_active(const state::JobStore& store) {
    state::JobIndex index(store.state_dir());
    if (!index.built()) ARCHCTL_TRY_STATUS(rebuild_job_index(store));
    ARCHCTL_TRY_ASSIGN(auto ids, index.active());
    std::vector<JobSummary> out;
    for (const auto& id : ids) {
        auto row = summarize_one(store, id);
        if (!row) {
            // A torn create nobody finishes (a marker, no job): dropped once it is old.
            if (index.marker_older_than(id, 3600)) (void)index.unmark(id);
            continue;
        }
        // Ended cleanly, but the run that ended it did not update the index (a crash): tidy up.
        if (retirable(*row) && index.retire(id, row->to_json(), row->nodes).ok()) continue;
        out.push_back(std::move(*row));
    }
    sort_rows(out);
    return out;
}

Result<std::vector<JobSummary>> summarize_recent(const state::JobStore& store, std::size_t finished) {
    ARCHCTL_TRY_ASSIGN(auto out, summarize_active(store));
    ARCHCTL_TRY_ASSIGN(auto page, state::JobIndex(store.state_dir()).finished(finished));
    for (const auto& e : page.entries)
        if (auto row = summarize_one(store, e.id)) {
            row->retired = true;
            out.push_back(std::move(*row));
        }
    sort_rows(out);
    return out;
}

Result<std::vector<JobSummary>> summarize_matching(const state::JobStore& store, const std::string& target) {
    ARCHCTL_TRY_ASSIGN(auto out, summarize_active(store));
    std::set<std::string> have;
    for (const auto& r : out) have.insert(r.id);
    auto add = [&](const std::string& id) {
        if (!have.insert(id).second) return;
        auto row = summarize_one(store, id);
        if (!row) return;
        row->retired = true;
        out.push_back(std::move(*row));
    };
    if (!target.empty()) {
        ARCHCTL_TRY_ASSIGN(auto entries, state::JobIndex(store.state_dir()).finished_matching(target));
        for (const auto& e : entries) add(e.id);
        // A built index holds every job (marked active, or a finished row naming its id), so the
        // job directories are listed only when it names none: then a job only its directory
        // knows (an index damaged by hand) is still found, at the cost of one readdir.
        const bool named = std::any_of(out.begin(), out.end(), [&](const JobSummary& r) { return r.id.rfind(target, 0) == 0; });
        if (!named) {
            ARCHCTL_TRY_ASSIGN(auto names, list_dir(store.state_dir().jobs(), "cannot list jobs in"));
            for (const auto& id : names)
                if (id.rfind(target, 0) == 0) add(id);
        }
    }
    sort_rows(out);
    return out;
}

namespace {

// Every finished job of the finished log as it was when the clear began, at once: their
// tombstones in one batch (durable first), then their directories (one fsync of the jobs
// directory for all), then the log emptied of them (state::IndexClear; a job that ended meanwhile
// stays). Two passes over the log, a row at a time: nothing per job is held. A crash leaves rows
// whose directories are gone (readers skip them) and the rest for a rerun, which may write a
// second tombstone for a job: either says it was hidden.
Result<std::size_t> clear_retired(const state::StateDir& dir) {
    state::JobStore store(dir);
    ARCHCTL_TRY_ASSIGN(state::IndexClear clear, state::JobIndex(dir).begin_clear());
    ARCHCTL_TRY_ASSIGN(state::TombstoneBatch batch, state::TombstoneBatch::create(dir));
    ARCHCTL_TRY_STATUS(clear.stream().each([&](const state::FinishedEntry& e) {
        return batch.add({e.id, store.request_digest(e.id), e.row.value("state", "done"), ""});
    }));
    ARCHCTL_TRY_STATUS(batch.commit());
    std::size_t removed = 0;
    ARCHCTL_TRY_STATUS(clear.stream().each([&](const state::FinishedEntry& e) {
        ++removed;
        return store.remove(e.id, state::JobStore::Sync::later);
    }));
    ARCHCTL_TRY_STATUS(store.sync_removals());
    crash_point("job.clear.removed");
    ARCHCTL_TRY_STATUS(clear.commit());
    return removed;
}

}  // namespace

Result<Cleared> clear_finished(const state::StateDir& dir, long tombstone_days) {
    Cleared c;
    state::JobStore store(dir);
    // The active jobs that ended (failed, or ended with files kept) one by one, as `job rm` would.
    ARCHCTL_TRY_ASSIGN(auto rows, summarize_active(store));
    for (const auto& r : rows)
        if (r.finished() && !(r.ledger.state == JobState::failed && r.ledger.merged)) {
            ARCHCTL_TRY_STATUS(hide(dir, r, true));
            ++c.jobs;
        }
    ARCHCTL_TRY_ASSIGN(std::size_t retired, clear_retired(dir));
    c.jobs += retired;
    auto purged = state::purge_tombstones(dir, tombstone_days);
    c.tombstones = purged.ok() ? purged.value() : 0;
    return c;
}

Result<const JobSummary*> find_job(const std::vector<JobSummary>& rows, const std::string& id) {
    std::vector<const JobSummary*> matches;
    for (const auto& r : rows) {
        if (r.id == id) return &r;
        if (id.size() >= 8 && r.id.rfind(id, 0) == 0) matches.push_back(&r);
    }
    if (matches.size() == 1) return matches.front();
    if (matches.empty()) {
        std::string hint = id.size() < 8 && !id.empty() ? "give the full id or at least 8 characters of it; see 'archctl job list'"
                                                         : "see 'archctl job list'";
        return Error(ErrorCode::NOT_FOUND, fmt::format("no job '{}'", clipped(id)), hint);
    }
    std::string list;
    for (const JobSummary* r : matches)
        list += fmt::format("\n  {}  {} {} \"{}\"", r->id, r->damaged ? "damaged" : r->definition.value("op", ""),
                            r->definition.value("qb_id", "").substr(0, 12), r->definition.value("name", ""));
    return Error(ErrorCode::AMBIGUOUS, fmt::format("job id '{}' is ambiguous: it matches {} jobs:{}", clipped(id), matches.size(), list),
                 "give more characters of the id");
}

}  // namespace archctl::jobs
