// archctl evict RES --from CACHE: remove a cache copy once archive copies are proven.
#include "cli/evict.hpp"

#include <fmt/format.h>

#include "cli/batch.hpp"
#include "cli/commands.hpp"
#include "cli/confirm.hpp"
#include "cli/services.hpp"
#include "cli/transfer_common.hpp"
#include "lib/base/units.hpp"
#include "lib/state/tokens.hpp"

namespace archctl::cli {
namespace {

jobs::evict::EvictRequest to_request(const EvictOptions& o) {
    return {o.res, o.from, o.verify_archive ? jobs::evict::VerifyArchive::yes : jobs::evict::VerifyArchive::no};
}

// The command an evict token confirms (cli/confirm.hpp), and its words for messages.
std::string evict_token_request(const jobs::evict::EvictPrepared& p) {
    return nlohmann::json{{"op", "evict"}, {"resource", p.resource.identity.qb_id()}, {"from", p.cache}}.dump();
}
std::string evict_token_summary(const jobs::evict::EvictPrepared& p) { return fmt::format("evict {} from {}", p.resource.short_id(), p.cache); }

Outcome nothing_to_do(Context& ctx, const jobs::evict::EvictPrepared& p) {
    std::string where = p.cache.empty() ? "no cache node" : fmt::format("'{}'", p.cache);
    ctx.out().info(fmt::format("archctl: {} holds no placement of '{}'; nothing to evict", where, p.resource.short_id()));
    return Outcome::done({{"evict", p.to_json()}, {"nothing_to_do", true}});
}

// An evict run as an Outcome: done 0, stopped 10, failed/refused 1.
Outcome evict_outcome(Context& ctx, const jobs::RunResult& r, nlohmann::json result) {
    result["job"] = r.to_json();
    result["evicted"] = r.detail;
    switch (r.outcome) {
        case jobs::RunOutcome::done: {
            std::uint64_t files = r.detail.value("files_removed", std::uint64_t{0});
            ctx.out().info(fmt::format("archctl: job {} done: {} files ({}) and {} directories removed{}", r.job_id, files,
                                       format_size(r.detail.value("bytes_freed", std::uint64_t{0})),
                                       r.detail.value("dirs_removed", std::uint64_t{0}),
                                       r.detail.value("kept", nlohmann::json::array()).empty()
                                           ? ""
                                           : fmt::format(", {} kept (see 'archctl job show {}')", r.detail["kept"].size(), r.job_id)));
            return Outcome::done(result);
        }
        case jobs::RunOutcome::stopped:
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost", r.job_id, r.step));
            return Outcome::partial(r.stop_text, "rerun the same command, or 'archctl resume', to continue", result);
        case jobs::RunOutcome::failed: break;
    }
    // Another archctl holds the job's lock (an overlapping run): the job goes on there, it has
    // not failed.
    if (r.error.is(ErrorCode::LOCKED)) return driven_elsewhere(ctx, r.job_id, std::move(result));
    Error e = r.error;
    if (e.message.find(r.job_id) == std::string::npos) e.message = fmt::format("job {} failed: {}", r.job_id, e.message);
    return Outcome::failed(e, result);
}

BatchRequest batch_of(const EvictOptions& o) {
    BatchRequest r;
    r.op = BatchOp::evict;
    r.select = o.select;
    r.from = o.from;
    r.verify_archive = o.verify_archive;
    r.yes = o.yes;
    r.confirm = o.confirm;
    return r;
}

Outcome run_evict(Context& ctx, const EvictOptions& options) {
    if (is_batch(options.select)) return run_batch(ctx, batch_of(options));
    if (options.select.res.empty()) return Outcome::usage(missing_res("evict"));
    EvictOptions o = options;
    o.res = o.select.res.front();
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto prepared = s.evictor->prepare(to_request(o));
    if (!prepared.ok()) return Outcome::failed(prepared.take_error());
    const jobs::evict::EvictPrepared& p = prepared.value();
    if (p.existing_job) {
        ctx.out().info(fmt::format("archctl: continuing job {}", *p.existing_job));
    } else {
        if (p.nothing_to_do) return nothing_to_do(ctx, p);
        if (!p.coverage.complete()) return Outcome::failed(jobs::evict::incomplete_error(p), {{"evict", p.to_json()}});
        ConfirmRequest c;
        c.yes = o.yes;
        c.token = o.confirm;
        c.plan_digest = p.coverage.digest;
        c.request = evict_token_request(p);
        c.summary = evict_token_summary(p);
        c.plan = [&p] { return jobs::evict::render_plan(p); };
        c.question = fmt::format("evict {} from {}: unlink {} files ({}) held by archive copies?", p.resource.short_id(), p.cache,
                                 p.owned.size(), format_size(p.coverage.required_bytes));
        c.needs = fmt::format("evict of '{}' needs confirmation", p.resource.short_id());
        c.needs_hint = "pass --yes, or --confirm TOKEN from 'archctl plan evict'";
        if (auto refused = confirm(ctx, *s.state, c)) return Outcome::failed(*refused, {{"evict", p.to_json()}});
    }
    auto job = s.evictor->create(p);
    if (!job.ok()) return Outcome::failed(job.take_error(), {{"evict", p.to_json()}});
    if (!p.existing_job) ctx.out().info(fmt::format("archctl: job {}  evict {} from {}", job.value(), p.resource.short_id(), p.cache));
    jobs::Budgets budgets;
    budgets.outage_wait = std::chrono::seconds(s.config->outage_wait_s);
    auto r = s.driver->run(job.value(), budgets, o.verify_archive ? jobs::evict::VerifyArchive::yes : jobs::evict::VerifyArchive::no);
    s.progress->finish();
    return evict_outcome(ctx, r, {{"evict", p.to_json()}});
}

std::string confirm_line(const EvictOptions& o, const jobs::evict::EvictPrepared& p, const std::string& token) {
    std::string cmd = fmt::format("archctl evict {} --from {}", o.res, p.cache);
    if (o.verify_archive) cmd += " --verify-archive";
    return fmt::format("confirm with: {} --confirm {}   (valid 1 h, single use)", cmd, token);
}

}  // namespace

Outcome run_plan_evict(Context& ctx, const EvictOptions& options) {
    if (is_batch(options.select)) return run_batch_plan(ctx, batch_of(options));
    if (options.select.res.empty()) return Outcome::usage(missing_res("plan evict"));
    EvictOptions o = options;
    o.res = o.select.res.front();
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto prepared = s.evictor->prepare(to_request(o));
    if (!prepared.ok()) return Outcome::failed(prepared.take_error());
    const jobs::evict::EvictPrepared& p = prepared.value();
    nlohmann::json result = p.to_json();
    if (p.existing_job) {
        ctx.out().result(fmt::format("job {} is already doing this; continue it with 'archctl resume {}'", *p.existing_job, *p.existing_job));
        return Outcome::done(result);
    }
    if (p.nothing_to_do) return nothing_to_do(ctx, p);
    std::string text = jobs::evict::render_plan(p);
    if (!p.coverage.complete()) {
        ctx.out().result(text);
        return Outcome::failed(jobs::evict::incomplete_error(p), result);
    }
    state::TokenRequest tr;
    tr.plan_digest = p.coverage.digest;
    tr.summary = evict_token_summary(p);
    tr.request = evict_token_request(p);
    auto token = state::mint_token(*s.state, tr);
    if (!token.ok()) return Outcome::failed(token.take_error());
    result["token"] = token.value();
    ctx.out().result(text + "\n\n" + confirm_line(o, p, token.value()));
    return Outcome::done(result);
}

Runner register_evict(CLI::App& app) {
    auto o = std::make_shared<EvictOptions>();
    add_select_options(app, o->select);
    app.add_option("--from", o->from, "cache node (default: the one cache node that has it)")->type_name("CACHE");
    app.add_flag("--verify-archive", o->verify_archive, "check the pieces of the covered files on each archive node's disk first");
    app.add_flag("--yes", o->yes, "do not ask for confirmation");
    app.add_option("--confirm", o->confirm, "confirmation token from 'archctl plan evict'")->type_name("TOKEN");
    return [o](Context& ctx) { return run_evict(ctx, *o); };
}

}  // namespace archctl::cli
