#include "cli/batch.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "cli/batch_render.hpp"
#include "cli/confirm.hpp"
#include "cli/services.hpp"
#include "lib/base/clock.hpp"
#include "lib/base/units.hpp"
#include "lib/state/tokens.hpp"

namespace archctl::cli {

void add_select_options(CLI::App& app, SelectOptions& o, bool res_required) {
    app.add_option("RES", o.res, "resource: a v1/v2 info hash or a prefix of at least 8 hex; several, or filters, make a batch");
    // Checked when the command line is parsed, so a usage error comes before any node is contacted.
    app.parse_complete_callback([&o, res_required] { validate_selection(o, res_required); });
    app.add_flag("--all", o.all, "every torrent of the source node")->group("Selecting many");
    app.add_option("--category", o.categories, "torrents in this qBittorrent category; repeatable (any of)")->type_name("C")->group("Selecting many");
    app.add_option("--tag", o.tags, "torrents with this tag; repeatable (any of)")->type_name("T")->group("Selecting many");
    app.add_option("--name", o.names, "torrents whose name matches this glob; repeatable (any of)")->type_name("GLOB")->group("Selecting many");
    app.add_option("--completed-before", o.completed_before, "completed more than AGE ago (14d) or before DATE (2026-01-31)")
        ->type_name("AGE|DATE")->group("Selecting many");
    app.add_option("--inactive-for", o.inactive_for, "no upload or download for AGE (qBittorrent's last activity)")->type_name("AGE")->group("Selecting many");
    app.add_option("--min-ratio", o.min_ratio, "share ratio at least R")->type_name("R")->group("Selecting many");
    app.add_option("--min-seeding-time", o.min_seeding_time, "seeded for at least AGE")->type_name("AGE")->group("Selecting many");
    app.add_option("--larger-than", o.larger_than, "wanted size above SIZE (500M, 20G)")->type_name("SIZE")->group("Selecting many");
    app.add_option("--exclude-category", o.exclude_categories, "never torrents in this category; repeatable")->type_name("C")->group("Selecting many");
    app.add_option("--exclude-tag", o.exclude_tags, "never torrents with this tag; repeatable")->type_name("T")->group("Selecting many");
}

bool has_filter(const SelectOptions& o) {
    return o.all || !o.categories.empty() || !o.tags.empty() || !o.names.empty() || !o.completed_before.empty() ||
           !o.inactive_for.empty() || !o.min_seeding_time.empty() || !o.larger_than.empty() || !o.min_ratio.empty() ||
           !o.exclude_categories.empty() || !o.exclude_tags.empty();
}

bool is_batch(const SelectOptions& o) { return o.res.size() > 1 || has_filter(o); }

void validate_selection(const SelectOptions& o, bool res_required) {
    if (res_required && o.res.empty() && !has_filter(o)) throw CLI::RequiredError("RES");
    if (auto c = criteria_of(o); !c.ok()) throw CLI::ValidationError(c.error().message);
}

void validate_transfer(const TransferOptions& o, bool res_required) {
    validate_selection(o.select, res_required);
    if (is_batch(o.select) && (!o.files.empty() || !o.file_paths.empty() || !o.dir_paths.empty()))
        throw CLI::ValidationError("--files, --file and --dir take a single RES, not a batch (select files of one resource at a time)");
}

Error missing_res(const std::string& command) {
    return Error(ErrorCode::USAGE,
                 fmt::format("{}: missing RES (resource: a v1/v2 info hash or a prefix of at least 8 hex, or a filter such as --category)",
                             command),
                 fmt::format("see 'archctl {} --help'", command));
}

Result<config::Criteria> criteria_of(const SelectOptions& o) {
    config::Criteria c;
    c.all = o.all;
    c.categories = o.categories;
    c.tags = o.tags;
    c.names = o.names;
    c.exclude_categories = o.exclude_categories;
    c.exclude_tags = o.exclude_tags;
    auto age = [](const std::string& option, const std::string& text) -> Result<std::int64_t> {
        auto v = parse_duration_seconds(text);
        if (!v.ok() || v.value() < 0)
            return Error(ErrorCode::USAGE, fmt::format("invalid {} '{}': expected an age such as 14d, 12h or 30m", option, text));
        return v.value();
    };
    if (!o.completed_before.empty()) {
        auto bound = config::parse_time_bound(o.completed_before);
        if (!bound.ok()) return Error(ErrorCode::USAGE, fmt::format("invalid --completed-before: {}", bound.error().message));
        c.completed_before = bound.value();
    }
    if (!o.inactive_for.empty()) {
        ARCHCTL_TRY_ASSIGN(std::int64_t s, age("--inactive-for", o.inactive_for));
        c.inactive_for_s = s;
    }
    if (!o.min_seeding_time.empty()) {
        ARCHCTL_TRY_ASSIGN(std::int64_t s, age("--min-seeding-time", o.min_seeding_time));
        c.min_seeding_time_s = s;
    }
    if (!o.larger_than.empty()) {
        auto v = parse_size(o.larger_than);
        if (!v.ok()) return Error(ErrorCode::USAGE, fmt::format("invalid --larger-than '{}': expected a size such as 500M or 20G", o.larger_than));
        c.larger_than = v.value();
    }
    if (!o.min_ratio.empty()) {
        char* end = nullptr;
        double r = std::strtod(o.min_ratio.c_str(), &end);
        if (end == o.min_ratio.c_str() || *end != '\0' || !(r >= 0))
            return Error(ErrorCode::USAGE, fmt::format("invalid --min-ratio '{}': expected a number such as 2 or 1.5", o.min_ratio));
        c.min_ratio = r;
    }
    return c;
}

std::string selection_args(const SelectOptions& o) {
    std::string out;
    auto add = [&](const std::string& option, const std::string& value) {
        if (value.empty()) return;
        bool plain = std::all_of(value.begin(), value.end(), [](unsigned char ch) { return std::isalnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':'; });
        out += fmt::format(" {} {}", option, plain ? value : "'" + value + "'");
    };
    for (const auto& r : o.res) out += " " + r;
    if (o.all) out += " --all";
    for (const auto& v : o.categories) add("--category", v);
    for (const auto& v : o.tags) add("--tag", v);
    for (const auto& v : o.names) add("--name", v);
    add("--completed-before", o.completed_before);
    add("--inactive-for", o.inactive_for);
    add("--min-ratio", o.min_ratio);
    add("--min-seeding-time", o.min_seeding_time);
    add("--larger-than", o.larger_than);
    for (const auto& v : o.exclude_categories) add("--exclude-category", v);
    for (const auto& v : o.exclude_tags) add("--exclude-tag", v);
    return out.empty() ? out : out.substr(1);
}

BatchRequest transfer_batch(plan::Operation op, const TransferOptions& o) {
    BatchRequest r;
    r.op = op == plan::Operation::archive ? BatchOp::archive : BatchOp::unarchive;
    r.select = o.select;
    r.from = o.from;
    r.to = o.to;
    r.verify_transit = o.verify_transit;
    r.yes = o.yes;
    r.confirm = o.confirm;
    return r;
}

namespace {

// The batch as lib/runs takes it: the filters parsed (criteria_of has checked them).
Result<runs::BatchSpec> spec_of(const BatchRequest& r) {
    runs::BatchSpec spec;
    spec.op = r.op;
    spec.res = r.select.res;
    if (has_filter(r.select)) {
        ARCHCTL_TRY_ASSIGN(spec.criteria, criteria_of(r.select));
    }
    spec.from = r.from;
    spec.to = r.to;
    spec.verify_transit = r.verify_transit;
    spec.verify_archive = r.verify_archive ? plan::VerifyArchive::yes : plan::VerifyArchive::no;
    spec.no_wait = r.budgets.no_wait;
    return spec;
}

Outcome plan_failed(Error e) {
    if (e.is(ErrorCode::USAGE)) return Outcome::usage(std::move(e));
    return Outcome::failed(std::move(e));
}

// Nothing new to start: what `plan` says, and a failure when every resource is refused.
Outcome nothing_to_start(Context& ctx, const runs::Planned& planned, const std::string& text, nlohmann::json result) {
    const runs::Totals t = runs::totals_of(planned.items);
    ctx.out().result(text + "\n\n" + (t.continued ? "continue with: archctl resume" : "nothing to start"));
    if (t.refused && !t.continued) {
        const runs::BatchItem* first = nullptr;
        for (const auto& it : planned.items)
            if (it.error && !first) first = &it;
        Error e(first && first->error ? first->error->code : std::string(to_string(ErrorCode::USAGE)),
                fmt::format("every resource of the batch is refused ({} of {})", t.refused, t.resources), "see each line for why");
        return Outcome::failed(e, result);
    }
    return Outcome::done(result);
}

// After the run: 1 naming the first failure, 10 when work is left, else 0.
Outcome batch_outcome(const runs::Planned& planned, std::string stop_text, nlohmann::json result) {
    const runs::Tally t = runs::tally(planned.items);
    if (const runs::BatchItem* failed = t.first_failed) {
        Error first = failed->result && failed->result->outcome == jobs::RunOutcome::failed ? failed->result->error
                      : failed->error                                                     ? *failed->error
                                                                                          : Error(ErrorCode::INTERNAL, "failed");
        std::string who = failed->short_id.empty() ? failed->res : failed->short_id;
        return Outcome::failed(Error(first.code,
                                     fmt::format("{} of {} resources failed; the first, {}: {}", t.failures, planned.items.size(), who,
                                                 first.message.substr(0, first.message.find('\n'))),
                                     first.hint.empty() ? "see each resource in --json, and 'archctl job list'" : first.hint),
                               result);
    }
    if (t.unfinished) {
        if (stop_text.empty()) stop_text = fmt::format("{} of {} resources not finished", t.unfinished, planned.items.size());
        return Outcome::partial(stop_text, "rerun the same command, or 'archctl resume', to continue", result);
    }
    return Outcome::done(result);
}

// The command a batch token confirms (cli/confirm.hpp), and its words for messages: the
// operation, the selection as typed and the nodes.
std::string batch_token_request(const BatchRequest& r) {
    return nlohmann::json{{"op", runs::to_string(r.op)}, {"select", selection_args(r.select)}, {"from", r.from}, {"to", r.to}}.dump();
}
std::string batch_token_summary(const BatchRequest& r) {
    std::string out = fmt::format("{} {}", runs::to_string(r.op), selection_args(r.select));
    if (!r.from.empty()) out += " --from " + r.from;
    if (!r.to.empty()) out += " --to " + r.to;
    return out;
}

}  // namespace

Outcome run_batch_plan(Context& ctx, const BatchRequest& r) {
    auto spec = spec_of(r);
    if (!spec.ok()) return Outcome::usage(spec.take_error());
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    runs::LivePlanner planner(*s.transfers, *s.evictor, spec.value());
    auto planned = runs::plan_batch(*s.nodes, *s.io.clock, spec.value(), planner, runs::PlanMode::read_only);
    if (!planned.ok()) return plan_failed(planned.take_error());
    const char* op = runs::to_string(r.op);
    nlohmann::json result = {{"batch", batch_json(planned.value(), r.op, false)}};
    std::string text = render_batch(planned.value(), r.op);
    runs::Totals t = runs::totals_of(planned->items);
    if (t.new_jobs == 0) return nothing_to_start(ctx, planned.value(), text, result);
    std::string digest = runs::batch_digest(planned->items, r.op);
    result["batch"]["digest"] = digest;
    state::TokenRequest tr;
    tr.plan_digest = digest;
    tr.summary = batch_token_summary(r);
    tr.request = batch_token_request(r);
    auto token = state::mint_token(*s.state, tr);
    if (!token.ok()) return Outcome::failed(token.take_error());
    result["token"] = token.value();
    std::string cmd = fmt::format("archctl {} {}", op, selection_args(r.select));
    if (!r.from.empty()) cmd += " --from " + r.from;
    if (!r.to.empty()) cmd += " --to " + r.to;
    if (r.verify_archive) cmd += " --verify-archive";
    ctx.out().result(text + "\n\n" + fmt::format("confirm with: {} --confirm {}   (valid 1 h, single use)", cmd, token.value()));
    return Outcome::done(result);
}

Outcome run_batch(Context& ctx, const BatchRequest& r) {
    auto spec = spec_of(r);
    if (!spec.ok()) return Outcome::usage(spec.take_error());
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(r.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    Clock& clock = *s.io.clock;
    const SteadyTime started = clock.steady();
    runs::LivePlanner planner(*s.transfers, *s.evictor, spec.value());
    auto planned = runs::plan_batch(*s.nodes, clock, spec.value(), planner, runs::PlanMode::for_run);
    if (!planned.ok()) return plan_failed(planned.take_error());
    const char* op = runs::to_string(r.op);
    runs::Totals t = runs::totals_of(planned->items);
    if (t.new_jobs) {
        ConfirmRequest c;
        c.yes = r.yes;
        c.token = r.confirm;
        c.plan_digest = runs::batch_digest(planned->items, r.op);
        c.request = batch_token_request(r);
        c.summary = batch_token_summary(r);
        c.plan = [&] { return render_batch(planned.value(), r.op); };
        c.question = fmt::format("{} {} resources ({} files, {})?", op, t.new_jobs, t.files, format_size(t.bytes));
        c.needs = fmt::format("{} of {} resources needs confirmation", op, t.new_jobs);
        c.needs_hint = fmt::format("pass --yes, or --confirm TOKEN from 'archctl plan {} {}'", op, selection_args(r.select));
        if (auto refused = confirm(ctx, *s.state, c))
            return Outcome::failed(*refused, {{"batch", batch_json(planned.value(), r.op, false)}});
    }
    runs::BatchRunOptions options{budgets.value(), started, r.yes || ctx.global().yes};
    runs::BatchTools tools{planner, runs::drive_with(*s.driver, spec->verify_archive), clock, *s.nodes};
    runs::BatchRun run = runs::run_batch(planned.value(), tools, options, [&](const runs::BatchEvent& e) { say_batch_step(ctx, s, r.op, e); });
    return batch_outcome(planned.value(), run.stop_text, {{"batch", batch_json(planned.value(), r.op, true)}});
}

}  // namespace archctl::cli
