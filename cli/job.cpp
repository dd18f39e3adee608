// archctl job list|show|cancel|clear|rm: jobs, their events, cancellation and display retention.
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/text.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/core/driver.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/state/job_index.hpp"
#include "lib/state/job_store.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct JobOptions {
    enum class Action { list, show, cancel, clear, rm } action = Action::list;
    std::string id;
    // list: how many finished jobs to show (the newest), or all of them; rebuild the index first.
    std::size_t limit = 20;
    bool all = false;
    bool rebuild_index = false;
};

namespace {

// One row of `job list`: its id (rows are in id order), its JSON row and its table cells.
struct ListRow {
    std::string id;
    nlohmann::json row;
    std::array<std::string, 5> cells;
};

ListRow active_row(const jobs::JobSummary& r) {
    return {r.id, r.to_json(),
            {r.id, r.damaged ? "damaged" : r.definition.value("op", ""), r.definition.value("qb_id", "").substr(0, 12), r.nodes, r.status}};
}

ListRow finished_row(const state::FinishedEntry& e) {
    return {e.id, e.row, {e.id, e.row.value("op", ""), e.row.value("resource", "").substr(0, 12), e.nodes, e.row.value("status", "")}};
}

// Every row of `job list --all` in id order: the active jobs (few, held) merged into the
// finished log's stream, which holds no finished job's row (state::FinishedStream). Each pass
// yields the same rows.
class AllRows {
public:
    AllRows(std::vector<ListRow> active, state::FinishedStream finished) : m_active(std::move(active)), m_finished(std::move(finished)) {}

    [[nodiscard]] Status each(const std::function<void(const ListRow&)>& f) {
        std::size_t a = 0;
        Status s = m_finished.each([&](const state::FinishedEntry& e) {
            ListRow row = finished_row(e);
            while (a < m_active.size() && m_active[a].id < row.id) f(m_active[a++]);
            f(row);
            return Status{};
        });
        while (a < m_active.size()) f(m_active[a++]);
        return s;
    }
    std::size_t active() const { return m_active.size(); }

private:
    std::vector<ListRow> m_active;
    state::FinishedStream m_finished;
};

// The table of `job list` as ui::Table renders it (columns padded to their widest cell, two
// spaces apart, the last one not padded, trailing spaces cut), written a megabyte at a time.
Status print_all_table(Context& ctx, AllRows& rows, const std::array<std::size_t, 5>& widths) {
    std::string chunk;
    Status s = rows.each([&](const ListRow& r) {
        std::size_t start = chunk.size();
        for (std::size_t c = 0; c < r.cells.size(); ++c) {
            chunk += r.cells[c];
            if (c + 1 == r.cells.size()) break;
            chunk.append(widths[c] - ui::display_width(r.cells[c]), ' ');
            chunk += "  ";
        }
        while (chunk.size() > start && chunk.back() == ' ') chunk.pop_back();
        chunk.push_back('\n');
        if (chunk.size() > (1u << 20)) {
            ctx.out().result(chunk);
            chunk.clear();
        }
    });
    if (!chunk.empty()) ctx.out().result(chunk);
    return s;
}

// The "jobs" member of `job list --all --json`, written as the document's dump(2) would (an
// array at nesting level 1), one row at a time.
std::function<void(std::FILE*)> all_jobs_json(std::shared_ptr<AllRows> rows, std::size_t count) {
    return [rows, count](std::FILE* out) {
        if (count == 0) {
            std::fputs("[]", out);
            return;
        }
        std::string chunk = "[\n";
        const char* separator = "";
        Status s = rows->each([&](const ListRow& r) {
            chunk += separator;
            chunk += "    ";
            for (char c : dump_json(r.row, 2)) {
                chunk.push_back(c);
                if (c == '\n') chunk += "    ";
            }
            separator = ",\n";
            if (chunk.size() > (1u << 20)) {
                std::fwrite(chunk.data(), 1, chunk.size(), out);
                chunk.clear();
            }
        });
        chunk += "\n  ]";
        std::fwrite(chunk.data(), 1, chunk.size(), out);
        if (!s.ok()) std::fprintf(stderr, "archctl: warning: job list: %s\n", s.error().message.c_str());
    };
}

// `job list --all`: every job, the finished ones streamed from the finished-job log twice (once
// to measure the columns and count the rows, once to print), so memory does not grow with them.
Outcome run_list_all(Context& ctx, const state::StateDir& state, std::vector<jobs::JobSummary> active) {
    std::vector<ListRow> held;
    for (const auto& r : active) held.push_back(active_row(r));
    std::sort(held.begin(), held.end(), [](const ListRow& a, const ListRow& b) { return a.id < b.id; });
    auto stream = state::JobIndex(state).finished_stream();
    if (!stream.ok()) return Outcome::failed(stream.take_error());
    auto rows = std::make_shared<AllRows>(std::move(held), std::move(stream.value()));
    std::array<std::size_t, 5> widths{};
    std::size_t count = 0;
    Status s = rows->each([&](const ListRow& r) {
        ++count;
        for (std::size_t c = 0; c < r.cells.size(); ++c) widths[c] = std::max(widths[c], ui::display_width(r.cells[c]));
    });
    if (!s.ok()) return Outcome::failed(s.take_error());
    if (!(ctx.out().json() && ctx.out().quiet())) {
        if (count == 0) ctx.out().result("no jobs");
        else if (Status p = print_all_table(ctx, *rows, widths); !p.ok()) return Outcome::failed(p.take_error());
    }
    Outcome out = Outcome::done({{"finished_shown", count - rows->active()}, {"finished_hidden", 0}, {"limit", nullptr}});
    if (ctx.out().json()) out.streamed["jobs"] = all_jobs_json(rows, count);
    return out;
}

// Every active job (unfinished, failed, damaged, or that kept files) and the newest finished
// ones from the finished-job log: never every job's records.
Outcome run_list(Context& ctx, const state::StateDir& state, const JobOptions& o) {
    state::JobStore store(state);
    if (o.rebuild_index) {
        Status s = jobs::rebuild_job_index(store);
        if (!s.ok()) return Outcome::failed(s.take_error());
        ctx.out().info("archctl: rebuilt the job index from the job directories");
    }
    auto active = jobs::summarize_active(store);
    if (!active.ok()) return Outcome::failed(active.take_error());
    if (o.all) return run_list_all(ctx, state, std::move(active.value()));
    const std::optional<std::size_t> limit = o.all ? std::nullopt : std::optional<std::size_t>(o.limit);
    auto page = state::JobIndex(state).finished(limit);
    if (!page.ok()) return Outcome::failed(page.take_error());
    struct Line {
        std::string id;
        nlohmann::json row;
        std::vector<std::string> cells;
    };
    std::vector<Line> lines;
    for (const auto& r : active.value())
        lines.push_back({r.id, r.to_json(),
                         {r.id, r.damaged ? "damaged" : r.definition.value("op", ""), r.definition.value("qb_id", "").substr(0, 12), r.nodes,
                          r.status}});
    for (const auto& e : page->entries)
        lines.push_back({e.id, e.row, {e.id, e.row.value("op", ""), e.row.value("resource", "").substr(0, 12), e.nodes, e.row.value("status", "")}});
    std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.id < b.id; });
    nlohmann::json list = nlohmann::json::array();
    ui::Table t;
    for (auto& l : lines) {
        list.push_back(std::move(l.row));
        t.add_row(l.cells);
    }
    const std::size_t shown = page->entries.size(), hidden = page->total > shown ? page->total - shown : 0;
    std::string text = t.empty() ? "no jobs" : t.render();
    if (hidden > 0)
        text += fmt::format("\n{} older finished job{} hidden; 'archctl job list --all' shows them", hidden, hidden == 1 ? "" : "s");
    ctx.out().result(text);
    return Outcome::done({{"jobs", list},
                          {"finished_shown", shown},
                          {"finished_hidden", hidden},
                          {"limit", limit ? nlohmann::json(*limit) : nlohmann::json(nullptr)}});
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
    if (lock.ok()) {
        // A lock whose process has died says so: the next run reclaims it.
        if (lock_holder_alive(lock.value()))
            text += fmt::format("running: pid {} on {}, since {}\n", lock->pid, lock->host, lock->started_at);
        else
            text += fmt::format("not running: pid {} on {} (since {}) has ended; the next run takes the job over\n", lock->pid,
                                lock->host, lock->started_at);
    }
    ctx.out().result(text);
    return Outcome::done({{"job", row.to_json()}, {"definition", row.definition}, {"ledger", row.stored_ledger}, {"events", ev}});
}

Outcome run_cancel(Context& ctx, const jobs::JobSummary& row) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    auto r = services.value()->driver->cancel(row.id);
    // Another archctl drives it: nothing is cancelled, and nothing failed (exit 10).
    if (r.outcome == jobs::RunOutcome::failed && r.error.is(ErrorCode::LOCKED)) {
        auto text = jobs::report::driven_elsewhere(*services.value()->state, row.id);
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
    if (o.action == JobOptions::Action::list) return run_list(ctx, state, o);
    state::JobStore store(state);
    auto rows = jobs::summarize_matching(store, o.id);
    if (!rows.ok()) return Outcome::failed(rows.take_error());
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
        {"list", Action::list, "unfinished jobs and the newest finished ones, with their state", false},
        {"show", Action::show, "one job: definition, state and events", true},
        {"cancel", Action::cancel, "stop a job: compensate before commit, clean up after", true},
        {"clear", Action::clear, "hide every finished job (tombstones are kept)", false},
        {"rm", Action::rm, "hide one finished job (a tombstone is kept)", true},
    };
    auto o = std::make_shared<JobOptions>();
    for (const Sub& s : subs) {
        CLI::App* sub = app.add_subcommand(s.name, s.help);
        if (s.takes_id) sub->add_option("JOB", o->id, "job id (or a prefix of at least 8 characters that only one job has)")->required();
        if (s.action == Action::list) {
            sub->add_option("--limit", o->limit, "finished jobs to show, the newest (default 20)")->type_name("N")->check(CLI::NonNegativeNumber);
            sub->add_flag("--all", o->all, "show every finished job");
            sub->add_flag("--rebuild-index", o->rebuild_index, "rebuild the job index from the job directories first");
        }
        Action action = s.action;
        sub->callback([o, action] { o->action = action; });
    }
    app.require_subcommand(1);
    return [o](Context& ctx) { return run_job(ctx, *o); };
}

}  // namespace archctl::cli
