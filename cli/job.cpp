// archctl job list|show|cancel|clear|rm: jobs, their events, cancellation and display retention.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/driver.hpp"
#include "lib/jobs/status.hpp"
#include "lib/state/job_store.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct JobOptions {
    enum class Action { list, show, cancel, clear, rm } action = Action::list;
    std::string id;
};

namespace {

Outcome run_list(Context& ctx, const std::vector<jobs::JobSummary>& rows) {
    nlohmann::json list = nlohmann::json::array();
    ui::Table t;
    for (const auto& r : rows) {
        list.push_back(r.to_json());
        t.add_row({r.id, r.damaged ? "damaged" : r.definition.value("op", ""), r.definition.value("qb_id", "").substr(0, 12), r.nodes,
                   r.status});
    }
    ctx.out().result(t.empty() ? "no jobs" : t.render());
    return Outcome::done({{"jobs", list}});
}

Outcome run_show(Context& ctx, const state::JobStore& store, const jobs::JobSummary& row) {
    auto events = store.events(row.id);
    nlohmann::json ev = events.ok() ? nlohmann::json(events->records) : nlohmann::json::array();
    std::string text = fmt::format("job {}\n  {} {} \"{}\"  {}\n  state {}  step {}\n  {}\nevents\n", row.id, row.definition.value("op", ""),
                                   row.definition.value("qb_id", "").substr(0, 12), row.definition.value("name", ""), row.nodes,
                                   row.damaged ? "damaged" : to_string(row.ledger.state), row.ledger.step, row.status);
    if (!row.ledger.kept.empty()) {
        text += "kept\n";
        for (const auto& k : row.ledger.kept)
            text += fmt::format("  {}:{}  {} ({})\n", k.value("node", ""), k.value("path", ""), k.value("reason", ""),
                                k.value("step", "") == "cleanup" ? "cleanup" : "compensation");
    }
    for (const auto& e : ev) {
        text += fmt::format("  {}  {}", e.value("at", ""), e.value("type", ""));
        if (std::string d = jobs::Driver::describe_event(row, e); !d.empty()) text += "  " + d;
        text += "\n";
    }
    auto lock = LockFile::read(store.dir_of(row.id));
    if (lock.ok()) text += fmt::format("running: pid {} on {}, since {}\n", lock->pid, lock->host, lock->started_at);
    ctx.out().result(text);
    return Outcome::done({{"job", row.to_json()}, {"definition", row.definition}, {"ledger", row.stored_ledger}, {"events", ev}});
}

Outcome run_cancel(Context& ctx, const jobs::JobSummary& row) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    auto r = services.value()->driver->cancel(row.id);
    // Another archctl drives it: nothing is cancelled, and nothing failed (exit 10).
    if (r.outcome == jobs::RunOutcome::failed && r.error.is(ErrorCode::LOCKED)) {
        auto text = jobs::driven_elsewhere(*services.value()->state, row.id);
        return Outcome::partial(text + "; nothing was cancelled",
                                fmt::format("stop that archctl (Ctrl-C in its terminal, or kill its pid), then 'archctl job cancel {}'", row.id),
                                {{"job", r.to_json()}, {"driven_elsewhere", row.id}});
    }
    if (r.outcome == jobs::RunOutcome::failed) return Outcome::failed(r.error, {{"job", r.to_json()}});
    if (r.compensated)
        ctx.out().info(fmt::format("archctl: job {}: undoing it is finished; the job ended {}", row.id, r.ended));
    else if (!r.ended.empty())
        ctx.out().info(fmt::format("archctl: job {} had already ended ({}); nothing to cancel", row.id, r.ended));
    else
        ctx.out().info(fmt::format("archctl: job {} {}", row.id, r.step == "done" ? "finished" : "cancelled"));
    return Outcome::done({{"job", r.to_json()}});
}

Outcome run_job(Context& ctx, const JobOptions& o) {
    auto dir = ctx.state();
    if (!dir.ok()) return Outcome::failed(dir.take_error());
    const state::StateDir& state = *dir.value();
    if (o.action == JobOptions::Action::clear) {
        auto config = ctx.config();
        if (!config.ok()) return Outcome::failed(config.take_error());
        auto cleared = jobs::clear_finished(state, config.value()->tombstone_days);
        if (!cleared.ok()) return Outcome::failed(cleared.take_error());
        ctx.out().info(fmt::format("archctl: cleared {} finished job(s)", cleared->jobs));
        return Outcome::done({{"cleared", cleared->jobs}, {"tombstones_purged", cleared->tombstones}});
    }
    state::JobStore store(state);
    auto rows = jobs::summarize_jobs(store);
    if (!rows.ok()) return Outcome::failed(rows.take_error());
    if (o.action == JobOptions::Action::list) return run_list(ctx, rows.value());
    auto found = jobs::find_job(rows.value(), o.id);
    if (!found.ok()) return Outcome::failed(found.take_error());
    const jobs::JobSummary* row = found.value();
    switch (o.action) {
        case JobOptions::Action::show: return run_show(ctx, store, *row);
        case JobOptions::Action::cancel: return run_cancel(ctx, *row);
        case JobOptions::Action::rm: {
            if (row->damaged && !row->staging.empty()) {
                auto services = ctx.services();
                if (!services.ok()) return Outcome::failed(services.take_error());
                Status cleaned = jobs::remove_damaged_staging(*services.value()->nodes, *row);
                if (!cleaned.ok()) return Outcome::failed(cleaned.take_error());
                ctx.out().info(fmt::format("archctl: removed the staging of job {}", row->id));
            }
            Status s = jobs::hide_job(state, *row);
            if (!s.ok()) return Outcome::failed(s.take_error());
            ctx.out().info(fmt::format("archctl: removed job {} (a tombstone is kept)", row->id));
            return Outcome::done({{"removed", row->id}});
        }
        case JobOptions::Action::list:
        case JobOptions::Action::clear: break;
    }
    return Outcome::done();
}

}  // namespace

Runner register_job(CLI::App& app) {
    using Action = JobOptions::Action;
    struct Sub {
        const char* name;
        Action action;
        const char* help;
        bool takes_id;
    };
    static const Sub subs[] = {
        {"list", Action::list, "every job with its state", false},
        {"show", Action::show, "one job: definition, state and events", true},
        {"cancel", Action::cancel, "stop a job: compensate before commit, clean up after", true},
        {"clear", Action::clear, "hide every finished job (tombstones are kept)", false},
        {"rm", Action::rm, "hide one finished job (a tombstone is kept)", true},
    };
    auto o = std::make_shared<JobOptions>();
    for (const Sub& s : subs) {
        CLI::App* sub = app.add_subcommand(s.name, s.help);
        if (s.takes_id) sub->add_option("JOB", o->id, "job id (or a prefix of at least 8 characters that only one job has)")->required();
        Action action = s.action;
        sub->callback([o, action] { o->action = action; });
    }
    app.require_subcommand(1);
    return [o](Context& ctx) { return run_job(ctx, *o); };
}

}  // namespace archctl::cli
