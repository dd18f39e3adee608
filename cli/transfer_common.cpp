#include "cli/transfer_common.hpp"

#include "cli/batch.hpp"
#include "cli/confirm.hpp"
#include "cli/services.hpp"

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/units.hpp"
#include "lib/config/config.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/routes/routes.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

void add_transfer_options(CLI::App& app, TransferOptions& o, bool res_required) {
    add_select_options(app, o.select, res_required);
    app.parse_complete_callback([&o, res_required] { validate_transfer(o, res_required); });
    app.add_option("--from", o.from, "source node (default: the one node that has it)")->type_name("NODE");
    app.add_option("--to", o.to, "target node (default: the one suitable node)")->type_name("NODE");
    app.add_option("--file", o.file_paths, "only this file (metainfo path, root folder first); repeatable")->type_name("PATH");
    app.add_option("--dir", o.dir_paths, "only the selected, complete files below this directory; repeatable")->type_name("PATH");
    app.add_option("--files", o.files, "only these file indices, e.g. 0-3,7")->type_name("SEL");
    app.add_flag("--verify-transit", o.verify_transit, "compare xxh3-128 of every file at both ends before merge");
}

namespace {

// A SIZE option checked when the command line is parsed.
CLI::Validator size_check() {
    return CLI::Validator([](std::string& text) -> std::string {
        auto v = parse_size(text);
        return v.ok() ? std::string() : v.error().message;
    }, "SIZE");
}

// A budget number: above 0 (leaving the option out means no limit).
CLI::Validator positive_check() {
    return CLI::Validator([](std::string& text) -> std::string {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(v > 0) || v > 1e12)
            return fmt::format("invalid value '{}': expected a number above 0 (leave the option out for no limit)", text);
        return {};
    }, "N");
}

}  // namespace

void add_budget_options(CLI::App& app, BudgetOptions& o) {
    app.add_option("--max-gb", o.max_gb, "stop cleanly once this many GiB moved this run (overshoot: at most the one file crossing it)")->type_name("N")->check(positive_check());
    app.add_option("--max-bytes", o.max_bytes, "stop cleanly once this many bytes moved this run (500M, 20G; overshoot: at most the one file crossing it)")->type_name("SIZE")->check(size_check());
    app.add_option("--max-minutes", o.max_minutes, "stop cleanly after N minutes")->type_name("N")->check(positive_check());
    app.add_option("--min-free", o.min_free, "pause when destination free space falls below SIZE (0 disables)")->type_name("SIZE")->check(size_check());
    app.add_flag("--no-wait", o.no_wait, "do what can be done now, exit 10 instead of waiting for Syncthing");
}

Result<jobs::transfer::TransferRequest> to_request(plan::Operation op, const TransferOptions& o) {
    jobs::transfer::TransferRequest r;
    r.op = op;
    r.res = o.res;
    r.from = o.from;
    r.to = o.to;
    r.file_paths = o.file_paths;
    r.dir_paths = o.dir_paths;
    r.verify_transit = o.verify_transit;
    if (!o.files.empty()) {
        auto sel = torrent::Selection::parse(o.files);
        if (!sel.ok()) return Error(ErrorCode::USAGE, fmt::format("invalid --files '{}': {}", o.files, sel.error().message));
        r.files = sel.value();
    }
    return r;
}

Result<jobs::Budgets> to_budgets(const BudgetOptions& o, const config::Config& config) {
    jobs::Budgets b;
    if (o.max_gb > 0) b.max_bytes = static_cast<std::uint64_t>(o.max_gb * 1073741824.0);
    if (!o.max_bytes.empty()) {
        ARCHCTL_TRY_ASSIGN(std::uint64_t v, parse_size(o.max_bytes));
        b.max_bytes = v;
    }
    if (o.max_minutes > 0) b.max_duration = std::chrono::seconds(static_cast<std::int64_t>(o.max_minutes * 60));
    b.min_free = config.min_free;
    b.outage_wait = std::chrono::seconds(config.outage_wait_s);
    b.no_wait = o.no_wait;
    return b;
}

std::string token_request(plan::Operation op, const jobs::transfer::Prepared& p, const TransferOptions& o) {
    // The selection as typed: the same files named another way is another command's token.
    return nlohmann::json{{"op", plan::to_string(op)},  {"resource", p.resource.identity.qb_id()}, {"from", p.source},
                          {"to", p.target},             {"files", o.files},                    {"file", o.file_paths},
                          {"dir", o.dir_paths}}
        .dump();
}

std::string token_summary(plan::Operation op, const jobs::transfer::Prepared& p, const TransferOptions& o) {
    std::string out = fmt::format("{} {} {} → {}", plan::to_string(op), p.resource.short_id(), p.source, p.target);
    if (!o.files.empty()) out += " --files " + o.files;
    for (const auto& f : o.file_paths) out += " --file '" + f + "'";
    for (const auto& d : o.dir_paths) out += " --dir '" + d + "'";
    return out;
}

std::string render_plan(const jobs::transfer::Prepared& p) {
    const plan::Plan& pl = p.plan;
    std::string kind(torrent::kind_name(p.resource.identity.kind()));
    std::string out = fmt::format("{}  {}  \"{}\"   {}\n", plan::to_string(pl.op), p.resource.short_id(), p.resource.name, kind);
    const auto& src = p.resource.placements.at(p.source);
    out += fmt::format("  from   {}  {}   {}\n", p.source, src.save_path, clients::qbittorrent::to_string(src.run_state));
    if (!p.source_data_path.empty() && p.source_data_path != strip_trailing_slashes(src.save_path))
        out += fmt::format("         files read from qBittorrent's incomplete-downloads folder {}\n", p.source_data_path);
    out += fmt::format("  to     {}  {}   {}\n", p.target, pl.target_save_path,
                       pl.extends_existing ? fmt::format("existing placement: {} files (extends it)", pl.baseline.count()) : "new placement");
    if (pl.source_layout.layout != torrent::ContentLayout::original || pl.target_layout.layout != torrent::ContentLayout::original)
        out += fmt::format("  layout {} on {}, {} on {} (qBittorrent's content layout: each file is moved at its path on each disk)\n",
                           torrent::to_string(pl.source_layout.layout), p.source, torrent::to_string(pl.target_layout.layout),
                           p.target);
    out += fmt::format("  route  {}  {}\n\n", p.route.id, p.route_state);
    ui::Table t({ui::Align::left, ui::Align::right, ui::Align::right, ui::Align::left}, "  ");
    t.add_row({"", "files", "bytes", ""});
    t.add_row({"requested", std::to_string(pl.requested.count()), format_size(static_cast<std::uint64_t>(pl.requested_bytes)), ""});
    t.add_row({"on target", std::to_string(pl.baseline.count()), format_size(static_cast<std::uint64_t>(pl.baseline_bytes)),
               pl.baseline.empty() ? "" : "verified, kept as they are"});
    t.add_row({"delta", std::to_string(pl.delta.count()), format_size(static_cast<std::uint64_t>(pl.delta_bytes)),
               pl.copy_bytes ? fmt::format("{} copied, carried by Syncthing", format_size(pl.copy_bytes))
                             : fmt::format("hard link on {} (0 B copied), carried by Syncthing", p.source)});
    t.add_row({"union", std::to_string(pl.union_set.count()), format_size(static_cast<std::uint64_t>(pl.union_bytes)), ""});
    out += t.render() + "\n\n";
    out += fmt::format("  disk   {}: needs {}, free {} above the {} floor — {}\n", p.target,
                       format_size(static_cast<std::uint64_t>(pl.delta_bytes)),
                       format_size(p.target_free > p.min_free ? p.target_free - p.min_free : 0), format_size(p.min_free),
                       pl.disk_ok ? "ok" : "INSUFFICIENT");
    if (!p.share_limits_text.empty()) out += fmt::format("  share  {}\n", p.share_limits_text);
    // A built part file is printed only after the planner found every boundary piece's outside
    // bytes on the source and checked the pieces from disk (jobs::transfer::check_source_ready); otherwise
    // plan refused.
    std::string pieces = fmt::format("{}", fmt::join(pl.boundary_pieces, ", "));
    std::string part = pl.partfile == plan::PartfileNeed::none
                           ? (p.resource.identity.has_v2() ? "not needed (files are piece-aligned)" : "not needed")
                       : pl.partfile == plan::PartfileNeed::carry_source
                           ? fmt::format("needed: built on {} for boundary pieces {}{}{}", p.source, pieces,
                                         p.partfile_from_disk.empty()
                                             ? std::string()
                                             : fmt::format("; bytes of file(s) {} from the complete files on its disk",
                                                           torrent::Selection::of(p.partfile_from_disk).to_string()),
                                         p.partfile_from_partfile.empty()
                                             ? std::string()
                                             : fmt::format("; bytes of file(s) {} from its part file (the torrent is stopped while it is read)",
                                                           torrent::Selection::of(p.partfile_from_partfile).to_string()))
                           : fmt::format("needed: the target's own partfile must hold the boundary pieces {}", pieces);
    out += fmt::format("  part   {}", part);
    // A same-size file already at a delta path is kept as it is (merge does not overwrite it);
    // the recheck decides whether its bytes are the torrent's.
    constexpr std::size_t k_shown = 10;
    for (std::size_t i = 0; i < p.preexisting.size() && i < k_shown; ++i)
        out += fmt::format("\n  exists pre-existing file '{}' on '{}' ({} bytes) will be kept and checked by the recheck; "
                           "if its bytes are not the torrent's the job fails and changes nothing",
                           p.preexisting[i].path, p.target, p.preexisting[i].size);
    if (p.preexisting.size() > k_shown)
        out += fmt::format("\n  exists … and {} more pre-existing file(s) (see --json)", p.preexisting.size() - k_shown);
    return out;
}

Outcome driven_elsewhere(Context& ctx, const std::string& job_id, nlohmann::json result) {
    auto state = ctx.state();
    std::string text = state.ok() ? jobs::report::driven_elsewhere(*state.value(), job_id)
                                  : fmt::format("job {} is being driven by another archctl", job_id);
    result["driven_elsewhere"] = job_id;
    return Outcome::partial(text, fmt::format("it goes on there; 'archctl status {}' shows its progress", job_id), std::move(result));
}

Outcome run_outcome(Context& ctx, const jobs::RunResult& r, const std::string& rerun_hint, nlohmann::json result) {
    result["job"] = r.to_json();
    switch (r.outcome) {
        case jobs::RunOutcome::done:
            ctx.out().info(fmt::format("archctl: job {} done", r.job_id));
            return Outcome::done(result);
        case jobs::RunOutcome::stopped:
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost", r.job_id, r.step));
            return Outcome::partial(r.stop_text, rerun_hint, result);
        case jobs::RunOutcome::failed:
            break;
    }
    // Another archctl holds the job's lock (an overlapping run): the job goes on there, it has
    // not failed.
    if (r.error.is(ErrorCode::LOCKED)) return driven_elsewhere(ctx, r.job_id, std::move(result));
    Error e = r.error;
    if (e.message.find(r.job_id) == std::string::npos) e.message = fmt::format("job {} failed: {}", r.job_id, e.message);
    return Outcome::failed(e, result);
}

Outcome run_transfer(Context& ctx, plan::Operation op, const TransferOptions& options, const BudgetOptions& b) {
    if (is_batch(options.select)) {
        BatchRequest r = transfer_batch(op, options);
        r.budgets = b;
        return run_batch(ctx, r);
    }
    if (options.select.res.empty()) return Outcome::usage(missing_res(plan::to_string(op)));
    TransferOptions o = options;
    o.res = o.select.res.front();
    auto request = to_request(op, o);
    if (!request.ok()) return Outcome::usage(request.take_error());
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(b, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    if (budgets->max_duration) request.value().stop_at = real_clock().steady() + *budgets->max_duration;
    request.value().no_wait = budgets->no_wait;
    auto prepared = s.transfers->prepare(request.value());
    std::string hint = "rerun the same command, or 'archctl resume', to continue";
    if (!prepared.ok()) {
        if (routes::is_clean_stop(prepared.error())) return Outcome::partial(prepared.error().message, hint);
        return Outcome::failed(prepared.take_error());
    }
    const jobs::transfer::Prepared& p = prepared.value();
    if (p.existing_job) {
        ctx.out().info(fmt::format("archctl: continuing job {}", *p.existing_job));
    } else {
        if (p.plan.empty_delta()) {
            ctx.out().info(fmt::format("archctl: {} already holds the selection of '{}'; nothing to do", p.target, p.resource.short_id()));
            return Outcome::done({{"plan", p.to_json()}, {"nothing_to_do", true}});
        }
        if (auto refused = p.refusal()) return Outcome::failed(*refused, {{"plan", p.to_json()}});
        ConfirmRequest c;
        c.yes = o.yes;
        c.token = o.confirm;
        c.plan_digest = p.plan.digest;
        c.request = token_request(op, p, o);
        c.summary = token_summary(op, p, o);
        c.plan = [&p] { return render_plan(p); };
        c.question = fmt::format("{} {} files ({}) from {} to {}?", plan::to_string(op), p.plan.delta.count(),
                                 format_size(static_cast<std::uint64_t>(p.plan.delta_bytes)), p.source, p.target);
        c.needs = fmt::format("{} of '{}' needs confirmation", plan::to_string(op), p.resource.short_id());
        c.needs_hint = "pass --yes, or --confirm TOKEN from 'archctl plan'";
        if (auto refused = confirm(ctx, *s.state, c)) return Outcome::failed(*refused);
    }
    auto job = s.transfers->create(p);
    if (!job.ok()) return Outcome::failed(job.take_error());
    if (!p.existing_job)
        ctx.out().info(fmt::format("archctl: job {}  {} {} {} → {}", job.value(), plan::to_string(op), p.resource.short_id(), p.source,
                                   p.target));
    // The run reads the job from its definition: what the plan held (the metainfo, the file
    // lists, both placements) goes before it, so it does not add to the run's peak.
    nlohmann::json plan = p.to_json();
    { const jobs::transfer::Prepared gone = std::move(prepared).value(); }
    auto result = s.driver->run(job.value(), budgets.value());
    s.progress->finish();
    return run_outcome(ctx, result, hint, {{"plan", std::move(plan)}});
}

}  // namespace archctl::cli
