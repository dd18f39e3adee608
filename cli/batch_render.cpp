#include "cli/batch_render.hpp"

#include <map>

#include <fmt/format.h>

#include "lib/base/units.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

namespace {

std::string target_of(const runs::BatchItem& it) {
    if (it.transfer) return it.transfer->target;
    return {};
}

std::string clip(const std::string& name, std::size_t width) {
    if (name.size() <= width) return name;
    std::size_t cut = width - 1;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    return name.substr(0, cut) + "…";
}

std::string plural(std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

nlohmann::json item_json(const runs::BatchItem& it, runs::BatchOp op, bool run) {
    nlohmann::json j = {{"resource", it.id.empty() ? it.res : it.id}, {"short_id", it.short_id}, {"name", it.name},
                        {"files", it.files}, {"bytes", it.bytes}, {"action", runs::to_string(it.action, op)}};
    if (!it.rule.empty()) j["rule"] = it.rule;
    if (!it.reason.empty()) j["reason"] = it.reason;
    if (it.existing_job) j["job"] = *it.existing_job;
    if (it.error) j["error"] = {{"code", it.error->code}, {"message", it.error->message}};
    if (run) {
        j["outcome"] = runs::to_string(it.outcome);
        if (it.result) {
            j["job"] = it.result->job_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(it.result->job_id);
            j["run"] = it.result->to_json();
            if (it.result->outcome == jobs::RunOutcome::failed) j["error"] = {{"code", it.result->error.code}, {"message", it.result->error.message}};
        } else if (!j.contains("job")) {
            j["job"] = nullptr;
        }
    }
    return j;
}

}  // namespace

std::string action_text(const runs::BatchItem& it, runs::BatchOp op) {
    using runs::Action;
    switch (it.action) {
        case Action::continue_job: return fmt::format("continue job {}", it.existing_job.value_or(""));
        case Action::nothing_to_do: return "nothing to do: " + it.reason;
        case Action::refused:
        case Action::skipped:
        case Action::stopped: return fmt::format("{}: {}", runs::to_string(it.action, op), it.reason.substr(0, it.reason.find('\n')));
        case Action::new_job: break;
    }
    if (op == runs::BatchOp::evict) return "evict (archive copies proven live)";
    std::string to = target_of(it);
    return to.empty() ? runs::to_string(op) : fmt::format("{} to {}", runs::to_string(op), to);
}

std::string render_batch(const runs::Planned& planned, runs::BatchOp op) {
    const auto& items = planned.items;
    std::string out = fmt::format("{} {}{}\n", runs::to_string(op), plural(items.size(), "resource"),
                                  planned.source.empty() ? "" : fmt::format(" from {}", planned.source));
    ui::Table t({ui::Align::right, ui::Align::left, ui::Align::left, ui::Align::right, ui::Align::right, ui::Align::left}, "  ");
    t.add_row({"#", "resource", "name", "files", "bytes", "action"});
    std::size_t n = 0;
    for (const auto& it : items)
        t.add_row({std::to_string(++n), it.short_id.empty() ? it.res : it.short_id, clip(it.name, 40), std::to_string(it.files),
                   format_size(it.bytes), action_text(it, op) + (it.rule.empty() ? "" : fmt::format("  [{}]", it.rule))});
    out += t.render() + "\n\n";
    runs::Totals tt = runs::totals_of(items);
    out += fmt::format("  total  {} {}, {} files, {}", runs::to_string(op), plural(tt.new_jobs, "resource"), tt.files, format_size(tt.bytes));
    if (tt.continued) out += fmt::format("\n  continue  {} unfinished job(s), first", tt.continued);
    if (tt.nothing) out += fmt::format("\n  nothing to do  {}", tt.nothing);
    if (tt.refused) out += fmt::format("\n  refused  {} (see each line; the others go ahead)", tt.refused);
    if (tt.skipped) out += fmt::format("\n  skipped  {}", tt.skipped);
    if (!planned.not_chosen.empty()) {
        out += fmt::format("\n  not chosen  {} on {}, passed over by the filters:", plural(planned.not_chosen.size(), "torrent"),
                           planned.source);
        ui::Table passed({ui::Align::left, ui::Align::left, ui::Align::left}, "    ");
        for (const auto& p : planned.not_chosen) passed.add_row({p.short_id, clip(p.name, 40), p.reason});
        out += "\n" + passed.render();
    }
    return out;
}

nlohmann::json batch_json(const runs::Planned& planned, runs::BatchOp op, bool run) {
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& it : planned.items) resources.push_back(item_json(it, op, run));
    runs::Totals t = runs::totals_of(planned.items);
    nlohmann::json totals = {{"resources", t.resources}, {"new_jobs", t.new_jobs}, {"continue", t.continued}, {"nothing_to_do", t.nothing},
                             {"refused", t.refused}, {"skipped", t.skipped}, {"files", t.files}, {"bytes", t.bytes}};
    if (run) {
        std::map<std::string, std::size_t> by;
        std::uint64_t moved = 0;
        for (const auto& it : planned.items) {
            ++by[runs::to_string(it.outcome)];
            if (it.result) moved += it.result->bytes_moved;
        }
        for (const char* k : {"done", "stopped", "failed", "nothing_to_do", "not_run"}) totals[k] = by[k];
        totals["bytes_moved"] = moved;
    }
    nlohmann::json not_chosen = nlohmann::json::array();
    for (const auto& p : planned.not_chosen)
        not_chosen.push_back({{"resource", p.id}, {"short_id", p.short_id}, {"name", p.name}, {"reason", p.reason}});
    totals["not_chosen"] = not_chosen.size();
    return {{"op", runs::to_string(op)}, {"source", planned.source}, {"resources", resources}, {"not_chosen", not_chosen}, {"totals", totals}};
}

void say_batch_step(Context& ctx, Services& s, runs::BatchOp op, const runs::BatchEvent& e) {
    const runs::BatchItem& it = e.item;
    const std::string at = fmt::format("archctl: [{}/{}]", e.n, e.of);
    switch (e.step) {
        case runs::BatchStep::continuing: ctx.out().info(fmt::format("{} {} {}: continuing job {}", at, it.short_id, it.name, e.job_id)); return;
        case runs::BatchStep::settled: ctx.out().info(fmt::format("{} {} {}: {}", at, it.short_id, it.name, action_text(it, op))); return;
        case runs::BatchStep::changed: ctx.out().info(fmt::format("{} {} {}: {}", at, it.short_id, it.name, it.reason)); return;
        case runs::BatchStep::not_created: ctx.out().info(fmt::format("{} {} {}: {}", at, it.short_id, it.name, it.error->message)); return;
        case runs::BatchStep::created:
            ctx.out().info(fmt::format("{} job {}  {} {} {}", at, e.job_id, runs::to_string(op), it.short_id, it.name));
            return;
        case runs::BatchStep::ran: break;
    }
    s.progress->finish();
    const runs::JobRun& turn = *e.turn;
    switch (turn.outcome) {
        case runs::JobOutcome::done: ctx.out().info(fmt::format("archctl: job {} done", e.job_id)); break;
        case runs::JobOutcome::stopped:
        case runs::JobOutcome::locked:
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost ({})", e.job_id, turn.result.step, runs::stop_text_of(turn)));
            break;
        case runs::JobOutcome::failed:
            ctx.out().info(fmt::format("archctl: job {} failed: {}; going on with the others", e.job_id, turn.result.error.message));
            break;
    }
}

}  // namespace archctl::cli
