// archctl evict RES --from CACHE: remove a cache copy once archive copies are proven.
#include "cli/evict.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/state/tokens.hpp"

namespace archctl::cli {
namespace {

bool ask(const std::string& question) {
    std::fprintf(stderr, "%s [y/N] ", question.c_str());
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes";
}

evict::EvictRequest to_request(const EvictOptions& o) {
    return {o.res, o.from, o.verify_archive ? evict::VerifyArchive::yes : evict::VerifyArchive::no};
}

Outcome nothing_to_do(Context& ctx, const evict::EvictPrepared& p) {
    std::string where = p.cache.empty() ? "no cache node" : fmt::format("'{}'", p.cache);
    ctx.out().info(fmt::format("archctl: {} holds no placement of '{}'; nothing to evict", where, p.resource.short_id()));
    return Outcome::done({{"evict", p.to_json()}, {"nothing_to_do", true}});
}

// --yes, --confirm TOKEN, or a question on a terminal.
std::optional<Error> confirm(Context& ctx, const EvictOptions& o, const state::StateDir& dir, const evict::EvictPrepared& p) {
    if (!o.confirm.empty()) {
        Status spent = state::spend_token(dir, o.confirm, p.coverage.digest);
        if (!spent.ok()) return spent.take_error();
        return std::nullopt;
    }
    if (o.yes || ctx.global().yes) return std::nullopt;
    if (::isatty(0) && ::isatty(2)) {
        ctx.out().info(evict::render_plan(p));
        if (ask(fmt::format("evict {} from {}: unlink {} files ({}) held by archive copies?", p.resource.short_id(), p.cache,
                            p.owned.size(), format_size(p.coverage.required_bytes))))
            return std::nullopt;
        return Error("NOT_CONFIRMED", "nothing done: not confirmed");
    }
    return Error("CONFIRM_REQUIRED", fmt::format("evict of '{}' needs confirmation", p.resource.short_id()),
                 "pass --yes, or --confirm TOKEN from 'archctl plan evict'");
}

Outcome run_evict(Context& ctx, const EvictOptions& o) {
    auto setup = setup_engine(ctx, nullptr);
    if (!setup.ok()) return Outcome::failed(setup.take_error());
    auto evictor = make_evictor(ctx, setup.value());
    auto prepared = evictor->prepare(to_request(o));
    if (!prepared.ok()) return Outcome::failed(prepared.take_error());
    const evict::EvictPrepared& p = prepared.value();
    if (p.existing_job) {
        ctx.out().info(fmt::format("archctl: continuing job {}", *p.existing_job));
    } else {
        if (p.nothing_to_do) return nothing_to_do(ctx, p);
        if (!p.coverage.complete()) return Outcome::failed(evict::incomplete_error(p), {{"evict", p.to_json()}});
        if (auto refused = confirm(ctx, o, *setup->state, p)) return Outcome::failed(*refused, {{"evict", p.to_json()}});
    }
    auto job = evictor->create(p);
    if (!job.ok()) return Outcome::failed(job.take_error(), {{"evict", p.to_json()}});
    if (!p.existing_job) ctx.out().info(fmt::format("archctl: job {}  evict {} from {}", job.value(), p.resource.short_id(), p.cache));
    evict::RunOptions options;
    options.verify_archive = o.verify_archive ? evict::VerifyArchive::yes : evict::VerifyArchive::no;
    auto r = evictor->run(job.value(), options);
    setup->progress->finish();
    return evict_outcome(ctx, r, {{"evict", p.to_json()}});
}

std::string confirm_line(const EvictOptions& o, const evict::EvictPrepared& p, const std::string& token) {
    std::string cmd = fmt::format("archctl evict {} --from {}", o.res, p.cache);
    if (o.verify_archive) cmd += " --verify-archive";
    return fmt::format("confirm with: {} --confirm {}   (valid 1 h, single use)", cmd, token);
}

}  // namespace

void add_evict_rows(const state::JobStore& store, std::vector<jobs::JobSummary>& rows) {
    auto ids = store.list();
    if (!ids.ok()) return;
    for (const auto& id : ids.value()) {
        auto def = store.definition(id);
        if (!def.ok() || !evict::is_evict(def.value())) continue;
        auto it = std::find_if(rows.begin(), rows.end(), [&](const jobs::JobSummary& r) { return r.id == id; });
        if (it == rows.end()) it = rows.insert(rows.end(), jobs::JobSummary{});
        it->id = id;
        it->definition = def.value();
        auto l = store.ledger(id);
        nlohmann::json ledger = l.ok() ? l.value() : nlohmann::json::object();
        it->ledger = jobs::Ledger{};
        it->ledger.state = jobs::parse_job_state(ledger.value("state", "running"));
        it->ledger.step = ledger.value("step", "hold");
        it->ledger.failure = ledger.value("failure", nlohmann::json());
        auto lock = LockFile::read(store.dir_of(id));
        it->running = lock.ok() && lock_holder_alive(lock.value());
        it->status = evict::evict_progress_text(it->definition, ledger);
        it->needs_attention = it->ledger.state == jobs::JobState::cleanup_required;
    }
    std::sort(rows.begin(), rows.end(), [](const jobs::JobSummary& a, const jobs::JobSummary& b) { return a.id < b.id; });
}

std::unique_ptr<evict::Evictor> make_evictor(Context& ctx, EngineSetup& setup) {
    jobs::EngineIo io;
    ui::ProgressRenderer* renderer = setup.progress.get();
    Output* out = &ctx.out();
    io.log = [renderer, out](const std::string& line) {
        if (!out->quiet()) renderer->log(line);
    };
    io.progress = renderer;
    return std::make_unique<evict::Evictor>(*setup.config, *setup.state, *setup.nodes, io);
}

Outcome run_plan_evict(Context& ctx, const EvictOptions& o) {
    auto setup = setup_engine(ctx, nullptr);
    if (!setup.ok()) return Outcome::failed(setup.take_error());
    auto evictor = make_evictor(ctx, setup.value());
    auto prepared = evictor->prepare(to_request(o));
    if (!prepared.ok()) return Outcome::failed(prepared.take_error());
    const evict::EvictPrepared& p = prepared.value();
    nlohmann::json result = p.to_json();
    if (p.existing_job) {
        ctx.out().result(fmt::format("job {} is already doing this; continue it with 'archctl resume {}'", *p.existing_job, *p.existing_job));
        return Outcome::done(result);
    }
    if (p.nothing_to_do) return nothing_to_do(ctx, p);
    std::string text = evict::render_plan(p);
    if (!p.coverage.complete()) {
        ctx.out().result(text);
        return Outcome::failed(evict::incomplete_error(p), result);
    }
    state::TokenRequest tr;
    tr.plan_digest = p.coverage.digest;
    tr.summary = fmt::format("evict {} from {}", p.resource.short_id(), p.cache);
    auto token = state::mint_token(*setup->state, tr);
    if (!token.ok()) return Outcome::failed(token.take_error());
    result["token"] = token.value();
    ctx.out().result(text + "\n\n" + confirm_line(o, p, token.value()));
    return Outcome::done(result);
}

Outcome evict_outcome(Context& ctx, const evict::EvictResult& r, nlohmann::json result) {
    result["job"] = r.run.to_json();
    result["evicted"] = r.detail;
    switch (r.run.outcome) {
        case jobs::RunOutcome::done: {
            std::uint64_t files = r.detail.value("files_removed", std::uint64_t{0});
            ctx.out().info(fmt::format("archctl: job {} done: {} files ({}) and {} directories removed{}", r.run.job_id, files,
                                       format_size(r.detail.value("bytes_freed", std::uint64_t{0})),
                                       r.detail.value("dirs_removed", std::uint64_t{0}),
                                       r.detail.value("kept", nlohmann::json::array()).empty()
                                           ? ""
                                           : fmt::format(", {} kept (see 'archctl job show {}')", r.detail["kept"].size(), r.run.job_id)));
            return Outcome::done(result);
        }
        case jobs::RunOutcome::stopped:
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost", r.run.job_id, r.run.step));
            return Outcome::partial(r.run.stop_text, "rerun the same command, or 'archctl resume', to continue", result);
        case jobs::RunOutcome::failed: break;
    }
    Error e = r.run.error;
    if (e.message.find(r.run.job_id) == std::string::npos) e.message = fmt::format("job {} failed: {}", r.run.job_id, e.message);
    return Outcome::failed(e, result);
}

Runner register_evict(CLI::App& app) {
    auto o = std::make_shared<EvictOptions>();
    app.add_option("RES", o->res, "resource: a v1/v2 info hash or a prefix of at least 8 hex")->required();
    app.add_option("--from", o->from, "cache node (default: the one cache node that has it)")->type_name("CACHE");
    app.add_flag("--verify-archive", o->verify_archive, "check the pieces of the covered files on each archive node's disk first");
    app.add_flag("--yes", o->yes, "do not ask for confirmation");
    app.add_option("--confirm", o->confirm, "confirmation token from 'archctl plan evict'")->type_name("TOKEN");
    return [o](Context& ctx) { return run_evict(ctx, *o); };
}

}  // namespace archctl::cli
