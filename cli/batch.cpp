#include "cli/batch.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/confirm.hpp"
#include "cli/services.hpp"
#include "lib/base/clock.hpp"
#include "lib/base/units.hpp"
#include "lib/routes/routes.hpp"
#include "lib/select/filter.hpp"
#include "lib/state/tokens.hpp"
#include "lib/torrent/sha.hpp"
#include "lib/ui/table.hpp"

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

const char* op_name(BatchOp op) {
    switch (op) {
        case BatchOp::archive: return "archive";
        case BatchOp::unarchive: return "unarchive";
        case BatchOp::evict: return "evict";
    }
    return "archive";
}

// One resource of the batch: how it was chosen, what its plan says, and how its run ended.
struct Item {
    std::string res;       // as given, or the full qB id a filter chose
    std::string id, short_id, name;
    std::string rule;      // why a filter chose it
    // archive|unarchive|evict (a new job), continue (an unfinished job), nothing_to_do, refused,
    // skipped (not on the source), stopped (cannot be planned now, e.g. a route not ready)
    std::string action;
    std::string reason;
    std::optional<Error> error;
    std::uint64_t files = 0, bytes = 0;
    std::string digest;
    std::optional<jobs::Prepared> transfer;
    std::optional<evict::EvictPrepared> evict;
    std::optional<std::string> existing_job;
    // The run: done|stopped|failed|nothing_to_do|not_run.
    std::string outcome;
    std::optional<jobs::RunResult> result;
    SteadyTime prepared_at{};
};

Item item_of(std::string res, std::string id, std::string name, std::string rule) {
    Item it;
    it.res = std::move(res);
    it.id = std::move(id);
    it.short_id = it.id.empty() ? it.res : it.id.substr(0, 12);
    it.name = std::move(name);
    it.rule = std::move(rule);
    return it;
}

// How old a plan may be when its job is created; older ones are made again from live state.
constexpr std::chrono::seconds k_replan_after{60};

bool new_job(const Item& it, BatchOp op) { return it.action == op_name(op); }

// The node whose torrent list the filters read.
Result<std::string> source_node(Services& s, const BatchRequest& r) {
    if (!r.from.empty()) {
        auto node = s.nodes->get(r.from);
        if (!node.ok()) return node.take_error();
        return r.from;
    }
    config::Role role = r.op == BatchOp::unarchive ? config::Role::archive : config::Role::cache;
    auto nodes = s.nodes->with_role(role);
    if (nodes.size() == 1) return nodes.front()->name();
    std::vector<std::string> names;
    for (auto* n : nodes) names.push_back(n->name());
    return Error(ErrorCode::USAGE,
                 nodes.empty() ? fmt::format("no {} node is configured to select from", config::to_string(role))
                               : fmt::format("filters read one node's torrents, and there are several {} nodes ({})", config::to_string(role),
                                             fmt::join(names, ", ")),
                 "pass --from NODE");
}

bool matches_prefix(const clients::qbittorrent::TorrentInfo& t, const std::string& res) {
    std::string lower = res;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    auto starts = [&](const std::string& h) { return !h.empty() && h.rfind(lower, 0) == 0; };
    return starts(t.id) || starts(t.infohash_v1) || starts(t.infohash_v2);
}

// The chosen resources, in the source's name order (several RES alone: as given). `skipped`
// counts what the filters passed over, by reason.
Result<std::vector<Item>> choose(Services& s, const BatchRequest& r, std::string& source, std::map<std::string, std::size_t>& skipped) {
    std::vector<Item> items;
    if (!has_filter(r.select)) {
        for (const auto& res : r.select.res) items.push_back(item_of(res, {}, {}, {}));
        source = r.from;
        return items;
    }
    ARCHCTL_TRY_ASSIGN(config::Criteria criteria, criteria_of(r.select));
    ARCHCTL_TRY_ASSIGN(source, source_node(s, r));
    ARCHCTL_TRY_ASSIGN(session::NodeSession * node, s.nodes->get(source));
    ARCHCTL_TRY_ASSIGN(auto torrents, node->qb().all_torrents());
    std::sort(torrents.begin(), torrents.end(), [](const auto& a, const auto& b) { return std::tie(a.name, a.id) < std::tie(b.name, b.id); });
    // Several RES with filters: the filters narrow the list.
    if (!r.select.res.empty()) {
        for (const auto& res : r.select.res)
            if (std::none_of(torrents.begin(), torrents.end(), [&](const auto& t) { return matches_prefix(t, res); }))
            {
                Item it = item_of(res, {}, {}, {});
                it.action = "skipped";
                it.reason = fmt::format("not on '{}'", source);
                items.push_back(std::move(it));
            }
    }
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(s.io.clock->now().time_since_epoch()).count();
    for (const auto& t : torrents) {
        if (!r.select.res.empty() && std::none_of(r.select.res.begin(), r.select.res.end(), [&](const auto& res) { return matches_prefix(t, res); }))
            continue;
        select::Verdict v = select::evaluate(criteria, t, now);
        if (!v.chosen) {
            if (!v.skipped.empty()) ++skipped[v.skipped];
            continue;
        }
        items.push_back(item_of(t.id, t.id, t.name, v.rule));
    }
    return items;
}

// Plan one resource as its own command would.
void prepare_item(Services& s, const BatchRequest& r, const std::string& source, bool read_only, Item& it) {
    if (it.action == "skipped") return;
    it.action.clear();
    it.reason.clear();
    it.error.reset();
    it.existing_job.reset();
    it.transfer.reset();
    it.evict.reset();
    it.prepared_at = s.io.clock->steady();
    auto refuse = [&](Error e, const char* action = "refused") {
        it.action = action;
        it.reason = e.message;
        it.error = std::move(e);
    };
    if (r.op == BatchOp::evict) {
        auto p = s.evictor->prepare({it.res, source, r.verify_archive ? evict::VerifyArchive::yes : evict::VerifyArchive::no});
        if (!p.ok()) return refuse(p.take_error());
        it.id = p->resource.identity.qb_id();
        it.short_id = p->resource.short_id();
        it.name = p->resource.name;
        it.files = p->owned.size();
        it.bytes = p->coverage.required_bytes;
        it.digest = p->coverage.digest;
        if (p->existing_job) {
            it.action = "continue";
            it.existing_job = p->existing_job;
        } else if (p->nothing_to_do) {
            it.action = "nothing_to_do";
            it.reason = fmt::format("'{}' holds no placement of it", p->cache.empty() ? source : p->cache);
        } else if (!p->coverage.complete()) {
            refuse(evict::incomplete_error(p.value()));
        } else {
            it.action = "evict";
        }
        it.evict = std::move(p.value());
        return;
    }
    jobs::TransferRequest t;
    t.op = r.op == BatchOp::archive ? plan::Operation::archive : plan::Operation::unarchive;
    t.res = it.res;
    t.from = source;
    t.to = r.to;
    t.verify_transit = r.verify_transit;
    t.route_mode = read_only ? jobs::TransferRequest::RouteMode::look_up : jobs::TransferRequest::RouteMode::ensure;
    t.no_wait = r.budgets.no_wait;
    auto p = s.engine->prepare(t);
    if (!p.ok()) {
        bool clean = routes::is_clean_stop(p.error());
        return refuse(p.take_error(), clean ? "stopped" : "refused");
    }
    it.id = p->resource.identity.qb_id();
    it.short_id = p->resource.short_id();
    it.name = p->resource.name;
    it.files = p->plan.delta.count();
    it.bytes = static_cast<std::uint64_t>(p->plan.delta_bytes);
    it.digest = p->plan.digest;
    if (p->existing_job) {
        it.action = "continue";
        it.existing_job = p->existing_job;
    } else if (p->plan.empty_delta()) {
        it.action = "nothing_to_do";
        it.reason = fmt::format("'{}' already holds it", p->target);
    } else if (auto refused = p->refusal()) {
        refuse(*refused);
    } else {
        it.action = op_name(r.op);
    }
    it.transfer = std::move(p.value());
}

// Digest of what the batch would start: the plan of every new job, in order.
std::string batch_digest(const std::vector<Item>& items, BatchOp op) {
    std::string facts = op_name(op);
    for (const auto& it : items)
        if (new_job(it, op)) facts += fmt::format("\n{} {}", it.id, it.digest);
    return torrent::sha256_hex(facts);
}

std::string target_of(const Item& it) {
    if (it.transfer) return it.transfer->target;
    return {};
}

std::string clip(const std::string& name, std::size_t width) {
    if (name.size() <= width) return name;
    std::size_t cut = width - 1;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    return name.substr(0, cut) + "…";
}

std::string action_text(const Item& it, BatchOp op) {
    if (it.action == "continue") return fmt::format("continue job {}", it.existing_job.value_or(""));
    if (it.action == "nothing_to_do") return "nothing to do: " + it.reason;
    if (it.action == "refused" || it.action == "skipped" || it.action == "stopped") {
        std::string first = it.reason.substr(0, it.reason.find('\n'));
        return fmt::format("{}: {}", it.action, first);
    }
    if (op == BatchOp::evict) return "evict (archive copies proven live)";
    std::string to = target_of(it);
    return to.empty() ? it.action : fmt::format("{} to {}", it.action, to);
}

struct Totals {
    std::size_t resources = 0, new_jobs = 0, continued = 0, nothing = 0, refused = 0, skipped = 0;
    std::uint64_t files = 0, bytes = 0;
};

Totals totals_of(const std::vector<Item>& items, BatchOp op) {
    Totals t;
    t.resources = items.size();
    for (const auto& it : items) {
        if (new_job(it, op)) {
            ++t.new_jobs;
            t.files += it.files;
            t.bytes += it.bytes;
        } else if (it.action == "continue") {
            ++t.continued;
        } else if (it.action == "nothing_to_do") {
            ++t.nothing;
        } else if (it.action == "skipped") {
            ++t.skipped;
        } else {
            ++t.refused;
        }
    }
    return t;
}

std::string render_batch(const std::vector<Item>& items, BatchOp op, const std::string& source,
                         const std::map<std::string, std::size_t>& skipped) {
    auto plural = [](std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); };
    std::string out = fmt::format("{} {}{}\n", op_name(op), plural(items.size(), "resource"), source.empty() ? "" : fmt::format(" from {}", source));
    ui::Table t({ui::Align::right, ui::Align::left, ui::Align::left, ui::Align::right, ui::Align::right, ui::Align::left}, "  ");
    t.add_row({"#", "resource", "name", "files", "bytes", "action"});
    std::size_t n = 0;
    for (const auto& it : items)
        t.add_row({std::to_string(++n), it.short_id.empty() ? it.res : it.short_id, clip(it.name, 40), std::to_string(it.files),
                   format_size(it.bytes), action_text(it, op) + (it.rule.empty() ? "" : fmt::format("  [{}]", it.rule))});
    out += t.render() + "\n\n";
    Totals tt = totals_of(items, op);
    out += fmt::format("  total  {} {}, {} files, {}", op_name(op), plural(tt.new_jobs, "resource"), tt.files, format_size(tt.bytes));
    if (tt.continued) out += fmt::format("\n  continue  {} unfinished job(s), first", tt.continued);
    if (tt.nothing) out += fmt::format("\n  nothing to do  {}", tt.nothing);
    if (tt.refused) out += fmt::format("\n  refused  {} (see each line; the others go ahead)", tt.refused);
    if (tt.skipped) out += fmt::format("\n  skipped  {}", tt.skipped);
    for (const auto& [why, count] : skipped) out += fmt::format("\n  not chosen  {} torrent(s): {}", count, why);
    return out;
}

nlohmann::json item_json(const Item& it, bool run) {
    nlohmann::json j = {{"resource", it.id.empty() ? it.res : it.id}, {"short_id", it.short_id}, {"name", it.name},
                        {"files", it.files}, {"bytes", it.bytes}, {"action", it.action}};
    if (!it.rule.empty()) j["rule"] = it.rule;
    if (!it.reason.empty()) j["reason"] = it.reason;
    if (it.existing_job) j["job"] = *it.existing_job;
    if (it.error) j["error"] = {{"code", it.error->code}, {"message", it.error->message}};
    if (run) {
        j["outcome"] = it.outcome;
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

nlohmann::json batch_json(const std::vector<Item>& items, BatchOp op, const std::string& source, bool run) {
    nlohmann::json resources = nlohmann::json::array();
    for (const auto& it : items) resources.push_back(item_json(it, run));
    Totals t = totals_of(items, op);
    nlohmann::json totals = {{"resources", t.resources}, {"new_jobs", t.new_jobs}, {"continue", t.continued}, {"nothing_to_do", t.nothing},
                             {"refused", t.refused}, {"skipped", t.skipped}, {"files", t.files}, {"bytes", t.bytes}};
    if (run) {
        std::map<std::string, std::size_t> by;
        std::uint64_t moved = 0;
        for (const auto& it : items) {
            ++by[it.outcome];
            if (it.result) moved += it.result->bytes_moved;
        }
        for (const char* k : {"done", "stopped", "failed", "nothing_to_do", "not_run"}) totals[k] = by[k];
        totals["bytes_moved"] = moved;
    }
    return {{"op", op_name(op)}, {"source", source}, {"resources", resources}, {"totals", totals}};
}

struct Planned {
    std::vector<Item> items;
    std::string source;
    std::map<std::string, std::size_t> skipped;
};

Result<Planned> plan_batch(Services& s, const BatchRequest& r, bool read_only) {
    Planned p;
    ARCHCTL_TRY_ASSIGN(p.items, choose(s, r, p.source, p.skipped));
    std::set<std::string> seen;
    for (auto& it : p.items) {
        prepare_item(s, r, p.source, read_only, it);
        // The same resource named twice (a prefix and its full hash): one job.
        if (!it.id.empty() && !seen.insert(it.id).second) {
            it.action = "nothing_to_do";
            it.reason = "named twice: one job does it";
            it.transfer.reset();
            it.evict.reset();
            it.existing_job.reset();
        }
    }
    return p;
}

}  // namespace

Outcome run_batch_plan(Context& ctx, const BatchRequest& r) {
    if (auto bad = criteria_of(r.select); !bad.ok()) return Outcome::usage(bad.take_error());
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto planned = plan_batch(s, r, true);
    if (!planned.ok()) {
        if (planned.error().is(ErrorCode::USAGE)) return Outcome::usage(planned.take_error());
        return Outcome::failed(planned.take_error());
    }
    std::vector<Item>& items = planned->items;
    nlohmann::json result = {{"batch", batch_json(items, r.op, planned->source, false)}};
    std::string text = render_batch(items, r.op, planned->source, planned->skipped);
    Totals t = totals_of(items, r.op);
    if (t.new_jobs == 0) {
        ctx.out().result(text + "\n\n" + (t.continued ? "continue with: archctl resume" : "nothing to start"));
        if (t.refused && !t.continued) {
            const Item* first = nullptr;
            for (const auto& it : items)
                if (it.error && !first) first = &it;
            Error e(first && first->error ? first->error->code : std::string(to_string(ErrorCode::USAGE)),
                    fmt::format("every resource of the batch is refused ({} of {})", t.refused, t.resources),
                    "see each line for why");
            return Outcome::failed(e, result);
        }
        return Outcome::done(result);
    }
    std::string digest = batch_digest(items, r.op);
    result["batch"]["digest"] = digest;
    state::TokenRequest tr;
    tr.plan_digest = digest;
    tr.summary = fmt::format("{} {} resources", op_name(r.op), t.new_jobs);
    auto token = state::mint_token(*s.state, tr);
    if (!token.ok()) return Outcome::failed(token.take_error());
    result["token"] = token.value();
    std::string cmd = fmt::format("archctl {} {}", op_name(r.op), selection_args(r.select));
    if (!r.from.empty()) cmd += " --from " + r.from;
    if (!r.to.empty()) cmd += " --to " + r.to;
    if (r.verify_archive) cmd += " --verify-archive";
    ctx.out().result(text + "\n\n" + fmt::format("confirm with: {} --confirm {}   (valid 1 h, single use)", cmd, token.value()));
    return Outcome::done(result);
}

Outcome run_batch(Context& ctx, const BatchRequest& r) {
    if (auto bad = criteria_of(r.select); !bad.ok()) return Outcome::usage(bad.take_error());
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(r.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    Clock& clock = *s.io.clock;
    const SteadyTime started = clock.steady();
    auto planned = plan_batch(s, r, false);
    if (!planned.ok()) {
        if (planned.error().is(ErrorCode::USAGE)) return Outcome::usage(planned.take_error());
        return Outcome::failed(planned.take_error());
    }
    std::vector<Item>& items = planned->items;
    Totals t = totals_of(items, r.op);
    if (t.new_jobs) {
        ConfirmRequest c;
        c.yes = r.yes;
        c.token = r.confirm;
        c.plan_digest = batch_digest(items, r.op);
        c.plan = [&] { return render_batch(items, r.op, planned->source, planned->skipped); };
        c.question = fmt::format("{} {} resources ({} files, {})?", op_name(r.op), t.new_jobs, t.files, format_size(t.bytes));
        c.needs = fmt::format("{} of {} resources needs confirmation", op_name(r.op), t.new_jobs);
        c.needs_hint = fmt::format("pass --yes, or --confirm TOKEN from 'archctl plan {} {}'", op_name(r.op), selection_args(r.select));
        if (auto refused = confirm(ctx, *s.state, c))
            return Outcome::failed(*refused, {{"batch", batch_json(items, r.op, planned->source, false)}});
    }
    for (auto& it : items) {
        if (it.action == "nothing_to_do") it.outcome = "nothing_to_do";
        else if (it.action == "refused" || it.action == "skipped") it.outcome = "failed";
        else if (it.action == "stopped") it.outcome = "stopped";
        else it.outcome = "not_run";
    }
    // Unfinished jobs first (partial before new), then the new ones in order.
    std::vector<Item*> order;
    for (auto& it : items)
        if (it.action == "continue") order.push_back(&it);
    for (auto& it : items)
        if (new_job(it, r.op)) order.push_back(&it);
    jobs::SharedBudgets shared(budgets.value(), started);
    const bool yes = r.yes || ctx.global().yes;
    std::string stop_text;
    for (std::size_t i = 0; i < order.size(); ++i) {
        Item& it = *order[i];
        if (auto stop = shared.exhausted(clock.steady())) {
            stop_text = stop->text;
            break;
        }
        std::string job_id;
        if (it.existing_job) {
            job_id = *it.existing_job;
            ctx.out().info(fmt::format("archctl: [{}/{}] {} {}: continuing job {}", i + 1, order.size(), it.short_id, it.name, job_id));
        } else {
            // A plan made minutes ago (earlier jobs of the batch ran since) is made again from
            // live state; one that changed runs only with --yes, never on a token for the old one.
            if (clock.steady() - it.prepared_at > k_replan_after) {
                const std::string planned_digest = it.digest;
                prepare_item(s, r, planned->source, false, it);
                if (!new_job(it, r.op) && it.action != "continue") {
                    it.outcome = it.action == "nothing_to_do" ? "nothing_to_do" : it.action == "stopped" ? "stopped" : "failed";
                    ctx.out().info(fmt::format("archctl: [{}/{}] {} {}: {}", i + 1, order.size(), it.short_id, it.name, action_text(it, r.op)));
                    continue;
                }
                if (it.digest != planned_digest && !yes) {
                    it.outcome = "failed";
                    it.action = "refused";
                    it.error = Error(ErrorCode::TOKEN_MISMATCH, fmt::format("the plan of '{}' changed since it was confirmed", it.short_id),
                                     "plan the batch again");
                    it.reason = it.error->message;
                    ctx.out().info(fmt::format("archctl: [{}/{}] {} {}: {}", i + 1, order.size(), it.short_id, it.name, it.reason));
                    continue;
                }
            }
        }
        if (it.existing_job) {
            job_id = *it.existing_job;
        } else {
            auto created = it.evict ? s.evictor->create(*it.evict) : s.engine->create(*it.transfer);
            if (!created.ok()) {
                it.outcome = "failed";
                it.error = created.take_error();
                ctx.out().info(fmt::format("archctl: [{}/{}] {} {}: {}", i + 1, order.size(), it.short_id, it.name, it.error->message));
                continue;
            }
            job_id = created.value();
            ctx.out().info(fmt::format("archctl: [{}/{}] job {}  {} {} {}", i + 1, order.size(), job_id, op_name(r.op), it.short_id, it.name));
        }
        jobs::RunResult res = s.driver->run(job_id, shared.next(), r.verify_archive ? evict::VerifyArchive::yes : evict::VerifyArchive::no);
        s.progress->finish();
        shared.count(res);
        it.result = res;
        if (res.outcome == jobs::RunOutcome::done) {
            it.outcome = "done";
            ctx.out().info(fmt::format("archctl: job {} done", job_id));
        } else if (res.outcome == jobs::RunOutcome::stopped || res.error.is(ErrorCode::LOCKED)) {
            it.outcome = "stopped";
            stop_text = res.outcome == jobs::RunOutcome::stopped ? res.stop_text : res.error.message;
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost ({})", job_id, res.step, stop_text));
            // Budgets, the deadline, a full disk and Ctrl-C end the whole run; a wait ends this job's turn.
            if (res.outcome == jobs::RunOutcome::stopped && res.stop_reason != "waiting") break;
        } else {
            it.outcome = "failed";
            ctx.out().info(fmt::format("archctl: job {} failed: {}; going on with the others", job_id, res.error.message));
        }
    }
    nlohmann::json result = {{"batch", batch_json(items, r.op, planned->source, true)}};
    const Item* failed = nullptr;
    std::size_t failures = 0, unfinished = 0;
    for (const auto& it : items) {
        if (it.outcome == "failed") {
            ++failures;
            if (!failed) failed = &it;
        }
        if (it.outcome == "stopped" || it.outcome == "not_run") ++unfinished;
    }
    if (failed) {
        Error first = failed->result && failed->result->outcome == jobs::RunOutcome::failed ? failed->result->error
                      : failed->error                                                     ? *failed->error
                                                                                          : Error(ErrorCode::INTERNAL, "failed");
        std::string who = failed->short_id.empty() ? failed->res : failed->short_id;
        return Outcome::failed(Error(first.code,
                                     fmt::format("{} of {} resources failed; the first, {}: {}", failures, items.size(), who,
                                                 first.message.substr(0, first.message.find('\n'))),
                                     first.hint.empty() ? "see each resource in --json, and 'archctl job list'" : first.hint),
                               result);
    }
    if (unfinished) {
        if (stop_text.empty()) stop_text = fmt::format("{} of {} resources not finished", unfinished, items.size());
        return Outcome::partial(stop_text, "rerun the same command, or 'archctl resume', to continue", result);
    }
    return Outcome::done(result);
}

}  // namespace archctl::cli
