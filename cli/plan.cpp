// archctl plan archive|unarchive|evict RES... and plan tier [NAME]: read-only; prints the arithmetic
// and a confirmation token.
#include <fmt/format.h>

#include "cli/batch.hpp"
#include "cli/commands.hpp"
#include "cli/tier.hpp"
#include "cli/evict.hpp"
#include "cli/services.hpp"
#include "cli/transfer_common.hpp"
#include "lib/state/tokens.hpp"

namespace archctl::cli {

struct PlanOptions {
    TransferOptions transfer;
    std::string op_name;
    bool verify_archive = false;
};

namespace {

std::string confirm_line(const PlanOptions& o, const jobs::transfer::Prepared& p, const std::string& token) {
    std::string cmd = fmt::format("archctl {} {}", o.op_name, o.transfer.res);
    if (!o.transfer.from.empty()) cmd += " --from " + o.transfer.from;
    cmd += " --to " + p.target;
    if (!o.transfer.files.empty()) cmd += " --files " + o.transfer.files;
    for (const auto& f : o.transfer.file_paths) cmd += " --file '" + f + "'";
    for (const auto& d : o.transfer.dir_paths) cmd += " --dir '" + d + "'";
    return fmt::format("confirm with: {} --confirm {}   (valid 1 h, single use)", cmd, token);
}

Outcome run_plan_evict_from(Context& ctx, const PlanOptions& o) {
    const TransferOptions& t = o.transfer;
    if (!t.to.empty() || !t.files.empty() || !t.file_paths.empty() || !t.dir_paths.empty() || t.verify_transit)
        return Outcome::usage(Error(ErrorCode::USAGE, "'plan evict' takes RES, --from and --verify-archive only",
                                    "evict removes one whole cache placement"));
    EvictOptions e;
    e.select = t.select;
    e.from = t.from;
    e.verify_archive = o.verify_archive;
    return run_plan_evict(ctx, e);
}

Outcome run_plan_transfer(Context& ctx, const PlanOptions& options, plan::Operation op) {
    if (options.verify_archive)
        return Outcome::usage(Error(ErrorCode::USAGE, "--verify-archive belongs to 'plan evict'"));
    const TransferOptions& t = options.transfer;
    if (is_batch(t.select)) return run_batch_plan(ctx, transfer_batch(op, t));
    if (t.select.res.empty()) return Outcome::usage(missing_res("plan " + options.op_name));
    PlanOptions o = options;
    o.transfer.res = t.select.res.front();
    auto request = to_request(op, o.transfer);
    if (!request.ok()) return Outcome::usage(request.take_error());
    request.value().route_mode = jobs::transfer::TransferRequest::RouteMode::look_up;  // plan moves and writes nothing
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto prepared = s.transfers->prepare(request.value());
    if (!prepared.ok()) return Outcome::failed(prepared.take_error());
    if (prepared->existing_job) {
        ctx.out().result(fmt::format("job {} is already doing this; continue it with 'archctl resume {}'", *prepared->existing_job,
                                     *prepared->existing_job));
        return Outcome::done(prepared->to_json());
    }
    nlohmann::json result = prepared->to_json();
    std::string text = render_plan(prepared.value());
    if (prepared->plan.empty_delta()) {
        ctx.out().result(text + fmt::format("\n\n{} already holds the selection; nothing to do", prepared->target));
        result["nothing_to_do"] = true;
        return Outcome::done(result);
    }
    // Plan is a promise: what the job would refuse, plan refuses the same way, with no token.
    if (auto refused = prepared->refusal()) {
        ctx.out().result(text);
        return Outcome::failed(*refused, result);
    }
    state::TokenRequest tr;
    tr.plan_digest = prepared->plan.digest;
    tr.summary = token_summary(op, prepared.value(), o.transfer);
    tr.request = token_request(op, prepared.value(), o.transfer);
    auto token = state::mint_token(*s.state, tr);
    if (!token.ok()) return Outcome::failed(token.take_error());
    result["token"] = token.value();
    ctx.out().result(text + "\n\n" + confirm_line(o, prepared.value(), token.value()));
    return Outcome::done(result);
}

// The planner of each operation `plan` takes.
struct Planner {
    const char* operation;
    Outcome (*run)(Context&, const PlanOptions&);
};
const Planner k_planners[] = {
    {"archive", [](Context& ctx, const PlanOptions& o) { return run_plan_transfer(ctx, o, plan::Operation::archive); }},
    {"unarchive", [](Context& ctx, const PlanOptions& o) { return run_plan_transfer(ctx, o, plan::Operation::unarchive); }},
    {"evict", run_plan_evict_from},
    {"tier", [](Context& ctx, const PlanOptions& o) {
         const TransferOptions& t = o.transfer;
         if (has_filter(t.select) || t.select.res.size() > 1 || !t.from.empty() || !t.to.empty() || !t.files.empty() ||
             !t.file_paths.empty() || !t.dir_paths.empty() || t.verify_transit || o.verify_archive)
             return Outcome::usage(Error(ErrorCode::USAGE, "'plan tier' takes at most a policy NAME",
                                         "the policy's [tier.NAME] table in config says what it selects"));
         return run_plan_tier(ctx, t.select.res.empty() ? std::string() : t.select.res.front());
     }},
};

Outcome run_plan(Context& ctx, const PlanOptions& o) {
    for (const Planner& p : k_planners)
        if (o.op_name == p.operation) return p.run(ctx, o);
    return Outcome::usage(Error(ErrorCode::USAGE, fmt::format("no operation '{}'", o.op_name), "archive, unarchive, evict or tier"));
}

}  // namespace

Runner register_plan(CLI::App& app) {
    auto o = std::make_shared<PlanOptions>();
    std::vector<std::string> operations;
    for (const Planner& p : k_planners) operations.emplace_back(p.operation);
    app.add_option("OPERATION", o->op_name, "archive, unarchive, evict or tier")->required()->check(CLI::IsMember(operations));
    add_transfer_options(app, o->transfer, false);
    // RES is required unless a filter chooses, or the operation is tier (its policy chooses).
    app.parse_complete_callback([o] {
        const TransferOptions& t = o->transfer;
        if (o->op_name == "tier") {
            if (has_filter(t.select) || t.select.res.size() > 1 || !t.from.empty() || !t.to.empty() || !t.files.empty() ||
                !t.file_paths.empty() || !t.dir_paths.empty() || t.verify_transit || o->verify_archive)
                throw CLI::ValidationError("'plan tier' takes at most a policy NAME (its [tier.NAME] table says what it selects)");
            return;
        }
        validate_transfer(t, true);
    });
    app.add_flag("--verify-archive", o->verify_archive, "evict: the archive copies will be proven by a piece check on their disks");
    return [o](Context& ctx) { return run_plan(ctx, *o); };
}

}  // namespace archctl::cli
