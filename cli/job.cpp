// archctl job list|show|cancel|clear|rm: jobs, their events, cancellation and display retention.
#include <algorithm>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/transfer_common.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/job.hpp"
#include "lib/jobs/summary.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/tombstones.hpp"
#include "lib/ui/table.hpp"
#if ARCHCTL_HAVE_EVICT
#include "cli/evict.hpp"
#endif

namespace archctl::cli {

struct JobOptions {
    std::string action;
    std::string id;
};

namespace {

bool finished(const jobs::Ledger& l) {
    return l.state == jobs::JobState::done || l.state == jobs::JobState::cancelled || l.state == jobs::JobState::failed;
}

Status hide(const state::StateDir& dir, state::JobStore& store, const jobs::JobSummary& r) {
    ARCHCTL_TRY_STATUS(state::write_tombstone(dir, {r.id, r.definition.value("request_digest", ""), to_string(r.ledger.state), ""}));
    return store.remove(r.id);
}

bool is_evict_row(const jobs::JobSummary& r) { return r.definition.value("op", "") == "evict"; }

// "seedbox → nas" for a transfer, the cache node alone for an eviction.
std::string nodes_of(const jobs::JobSummary& r) {
    std::string source = r.definition.value("source", nlohmann::json::object()).value("node", "");
    if (is_evict_row(r)) return source;
    return fmt::format("{} → {}", source, r.definition.value("target", nlohmann::json::object()).value("node", ""));
}


std::string event_line(const jobs::JobSummary& r, const nlohmann::json& e) {
    std::string line = fmt::format("  {}  {}", e.value("at", ""), e.value("type", ""));
#if ARCHCTL_HAVE_EVICT
    if (is_evict_row(r))
        if (std::string d = evict::describe_event(e); !d.empty()) line += "  " + d;
#else
    (void)r;
#endif
    return line + "\n";
}

Outcome run_job(Context& ctx, const JobOptions& o) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    auto dir = state::StateDir::open(config.value()->state_dir);
    if (!dir.ok()) return Outcome::failed(dir.take_error());
    state::JobStore store(dir.value());
    auto rows = jobs::summarize_jobs(store);
    if (!rows.ok()) return Outcome::failed(rows.take_error());
#if ARCHCTL_HAVE_EVICT
    add_evict_rows(store, rows.value());
#endif
    if (o.action == "list") {
        nlohmann::json list = nlohmann::json::array();
        ui::Table t;
        for (const auto& r : rows.value()) {
            list.push_back(r.to_json());
            t.add_row({r.id, r.definition.value("op", ""), r.definition.value("qb_id", "").substr(0, 12), nodes_of(r), r.status});
        }
        ctx.out().result(t.empty() ? "no jobs" : t.render());
        return Outcome::done({{"jobs", list}});
    }
    if (o.action == "clear") {
        size_t n = 0;
        for (const auto& r : rows.value())
            if (finished(r.ledger) && !(r.ledger.state == jobs::JobState::failed && r.ledger.merged)) {
                Status s = hide(dir.value(), store, r);
                if (!s.ok()) return Outcome::failed(s.take_error());
                ++n;
            }
        auto purged = state::purge_tombstones(dir.value(), config.value()->tombstone_days);
        ctx.out().info(fmt::format("archctl: cleared {} finished job(s)", n));
        return Outcome::done({{"cleared", n}, {"tombstones_purged", purged.ok() ? purged.value() : 0}});
    }
    if (o.id.empty()) return Outcome::usage(Error("USAGE", fmt::format("'job {}' needs a job id", o.action), "see 'archctl job list'"));
    const jobs::JobSummary* row = nullptr;
    for (const auto& r : rows.value())
        if (r.id == o.id || (o.id.size() >= 8 && r.id.rfind(o.id, 0) == 0)) row = &r;
    if (!row) return Outcome::failed(Error("NOT_FOUND", fmt::format("no job '{}'", o.id), "see 'archctl job list'"));
    if (o.action == "show") {
        auto events = store.events(row->id);
        nlohmann::json ev = events.ok() ? nlohmann::json(events->records) : nlohmann::json::array();
        std::string text = fmt::format("job {}\n  {} {} \"{}\"  {}\n  state {}  step {}\n  {}\nevents\n", row->id,
                                       row->definition.value("op", ""), row->definition.value("qb_id", "").substr(0, 12),
                                       row->definition.value("name", ""), nodes_of(*row), to_string(row->ledger.state), row->ledger.step,
                                       row->status);
        if (!row->ledger.kept.empty()) {
            text += "kept\n";
            for (const auto& k : row->ledger.kept)
                text += fmt::format("  {}:{}  {} ({})\n", k.value("node", ""), k.value("path", ""), k.value("reason", ""),
                                    k.value("step", "") == "cleanup" ? "cleanup" : "compensation");
        }
        for (const auto& e : ev) text += event_line(*row, e);
        auto lock = LockFile::read(store.dir_of(row->id));
        if (lock.ok()) text += fmt::format("running: pid {} on {}, since {}\n", lock->pid, lock->host, lock->started_at);
        ctx.out().result(text);
        nlohmann::json ledger = row->ledger.to_json();
        if (is_evict_row(*row)) {
            auto l = store.ledger(row->id);
            ledger = l.ok() ? l.value() : nlohmann::json::object();
        }
        return Outcome::done({{"job", row->to_json()}, {"definition", row->definition}, {"ledger", ledger}, {"events", ev}});
    }
    if (o.action == "rm") {
        if (!finished(row->ledger))
            return Outcome::failed(Error("JOB_ACTIVE", fmt::format("job {} is not finished", row->id),
                                         fmt::format("cancel it first: 'archctl job cancel {}'", row->id)));
        Status s = hide(dir.value(), store, *row);
        if (!s.ok()) return Outcome::failed(s.take_error());
        ctx.out().info(fmt::format("archctl: removed job {} (a tombstone is kept)", row->id));
        return Outcome::done({{"removed", row->id}});
    }
    // cancel
    auto setup = setup_engine(ctx, nullptr);
    if (!setup.ok()) return Outcome::failed(setup.take_error());
#if ARCHCTL_HAVE_EVICT
    if (is_evict_row(*row)) {
        auto r = make_evictor(ctx, setup.value())->cancel(row->id);
        if (r.run.outcome == jobs::RunOutcome::failed) return Outcome::failed(r.run.error, {{"job", r.run.to_json()}});
        ctx.out().info(fmt::format("archctl: job {} {}", row->id, r.run.step == "done" ? "finished" : "cancelled"));
        return Outcome::done({{"job", r.run.to_json()}});
    }
#endif
    auto r = setup->engine->cancel(row->id);
    if (r.outcome == jobs::RunOutcome::failed) return Outcome::failed(r.error, {{"job", r.to_json()}});
    ctx.out().info(fmt::format("archctl: job {} cancelled", row->id));
    return Outcome::done({{"job", r.to_json()}});
}

}  // namespace

Runner register_job(CLI::App& app) {
    auto o = std::make_shared<JobOptions>();
    for (const char* action : {"list", "show", "cancel", "clear", "rm"}) {
        const char* help = std::string(action) == "list"     ? "every job with its state"
                           : std::string(action) == "show"   ? "one job: definition, state and events"
                           : std::string(action) == "cancel" ? "stop a job: compensate before commit, clean up after"
                           : std::string(action) == "clear"  ? "hide every finished job (tombstones are kept)"
                                                             : "hide one finished job (a tombstone is kept)";
        CLI::App* sub = app.add_subcommand(action, help);
        if (std::string(action) == "show" || std::string(action) == "cancel" || std::string(action) == "rm")
            sub->add_option("JOB", o->id, "job id (or a prefix of at least 8 characters)")->required();
        sub->callback([o, action] { o->action = action; });
    }
    app.require_subcommand(1);
    return [o](Context& ctx) { return run_job(ctx, *o); };
}

}  // namespace archctl::cli
