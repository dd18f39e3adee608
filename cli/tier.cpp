// archctl tier [NAME]: resume the policy's unfinished jobs, archive its candidates in order,
// evict those whose archive copy is proven live, until the cache's goal holds. plan tier: the
// same choice, read-only, from one torrent list per node.
#include "cli/tier.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/confirm.hpp"
#include "cli/services.hpp"
#include "cli/transfer_common.hpp"
#include "lib/base/atomic_file.hpp"
#include "lib/base/clock.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/core/kind.hpp"
#include "lib/jobs/tier_plan.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/routes/routes.hpp"
#include "lib/state/job_store.hpp"
#include "lib/torrent/sha.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {

struct TierOptions {
    std::string name;
    BudgetOptions budgets;
    bool yes = false;
};

namespace {

using clients::qbittorrent::TorrentInfo;

const char* k_example =
    "add a policy to config.toml, e.g. [tier.seedbox] cache = \"seedbox\", archive = [\"nas\"], keep_free = \"200G\", "
    "archive_when = { completed_before = \"14d\" } (see 'man archctl-tier')";

Result<std::vector<const config::TierPolicy*>> policies_of(const config::Config& config, const std::string& name) {
    std::vector<const config::TierPolicy*> out;
    if (config.tiers.empty())
        return Error(ErrorCode::CONFIG_INVALID, "no tier policy is configured (no [tier.NAME] table in config)", k_example);
    if (name.empty()) {
        for (const auto& [_, p] : config.tiers) out.push_back(&p);
        return out;
    }
    auto it = config.tiers.find(name);
    if (it == config.tiers.end()) {
        std::vector<std::string> names;
        for (const auto& [n, _] : config.tiers) names.push_back(n);
        return Error(ErrorCode::USAGE, fmt::format("no tier policy '{}' (configured: {})", name, fmt::join(names, ", ")),
                     "name one of them, or none for all");
    }
    out.push_back(&it->second);
    return out;
}

// What the policy works from, read live: the cache's torrents and free space, each archive
// node's torrents; and how many qBittorrent requests that took per node.
struct Live {
    std::vector<TorrentInfo> cache;
    std::map<std::string, std::vector<TorrentInfo>> archives;
    std::vector<std::string> unreachable;  // "nas: reason"
    std::uint64_t free = 0, total = 0;
    std::map<std::string, std::uint64_t> requests;
};

// Free and total bytes of the filesystem that holds the cache's qb_root.
Result<std::pair<std::uint64_t, std::uint64_t>> space_of(session::NodeSession& node) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, node.ops());
    ARCHCTL_TRY_ASSIGN(node::InfoResult info, node::Ops(*transport).info({.probe_dirs = {node.config().qb_root}}));
    for (const auto& d : info.probes)
        if (d.free_bytes && d.total_bytes) return std::make_pair(*d.free_bytes, *d.total_bytes);
    return Error(ErrorCode::NODE_UNREACHABLE, fmt::format("node '{}' could not measure the free space of '{}'", node.name(), node.config().qb_root));
}

Result<Live> read_live(session::NodeSessions& nodes, const config::TierPolicy& policy, bool space) {
    Live live;
    ARCHCTL_TRY_ASSIGN(session::NodeSession * cache, nodes.get(policy.cache));
    const std::uint64_t before = cache->qb().request_count();
    ARCHCTL_TRY_ASSIGN(live.cache, cache->qb().all_torrents());
    live.requests[policy.cache] = cache->qb().request_count() - before;
    if (space) {
        ARCHCTL_TRY_ASSIGN(auto sp, space_of(*cache));
        live.free = sp.first;
        live.total = sp.second;
    }
    for (const auto& name : policy.archive) {
        auto node = nodes.get(name);
        if (!node.ok()) {
            live.unreachable.push_back(fmt::format("{}: {}", name, node.error().message));
            continue;
        }
        const std::uint64_t sent = node.value()->qb().request_count();
        auto list = node.value()->qb().all_torrents();
        live.requests[name] = node.value()->qb().request_count() - sent;
        if (!list.ok()) {
            live.unreachable.push_back(fmt::format("{}: {}", name, list.error().message));
            continue;
        }
        live.archives[name] = std::move(list.value());
    }
    return live;
}

std::int64_t unix_now() { return std::chrono::duration_cast<std::chrono::seconds>(system_now().time_since_epoch()).count(); }

tier::Plan plan_of(const config::TierPolicy& policy, const Live& live) {
    tier::Input in;
    in.policy = &policy;
    in.cache = live.cache;
    in.archives = live.archives;
    in.free = live.free;
    in.total = live.total;
    in.now = unix_now();
    return tier::make_plan(in);
}

std::string clip(const std::string& name, std::size_t width) {
    if (name.size() <= width) return name;
    std::size_t cut = width - 1;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    return name.substr(0, cut) + "…";
}

std::string action_text(const tier::Row& r) {
    switch (r.action) {
        case tier::Action::evict: return fmt::format("evict (archived on {}; proven live first)", r.archived_on);
        case tier::Action::archive_evict: return fmt::format("archive to {}, then evict", r.archive_to);
        case tier::Action::archive: return fmt::format("archive to {}", r.archive_to);
        case tier::Action::none: return "— " + r.why;
        case tier::Action::skipped: return "skipped: " + r.why;
        case tier::Action::blocked: return "blocked: " + r.why;
    }
    return "";
}

bool acts(const tier::Row& r) {
    return r.action == tier::Action::evict || r.action == tier::Action::archive_evict || r.action == tier::Action::archive;
}

std::string render_plan(const config::TierPolicy& policy, const tier::Plan& p, const Live& live, const config::Config& config) {
    const config::NodeConfig* cache = config.node(policy.cache);
    std::string out = fmt::format("tier {}   cache {} → archive {}      goal {} on {}\n", policy.name, policy.cache,
                                  fmt::join(policy.archive, ", "), p.goal.text, cache ? cache->qb_root : "?");
    out += fmt::format("  now   {} free ({} torrents)   after this plan   {} free — {}\n", format_size(p.goal.free_now),
                       p.cache_torrents, format_size(p.projected_free),
                       p.goal.met(p.goal.free_now) ? "goal already met"
                       : p.goal.met(p.projected_free) ? "goal met"
                                                      : "goal NOT met: not enough candidates");
    for (const auto& u : live.unreachable) out += fmt::format("  unreachable  {} (its copies are not counted)\n", u);
    out += "\n";
    ui::Table t({ui::Align::right, ui::Align::left, ui::Align::left, ui::Align::right, ui::Align::left, ui::Align::left}, "  ");
    t.add_row({"#", "resource", "name", "size", "rule", "action"});
    constexpr std::size_t k_shown = 50;
    std::size_t n = 0, hidden = 0;
    for (const auto& r : p.rows) {
        ++n;
        if (n > k_shown) {
            ++hidden;
            continue;
        }
        t.add_row({std::to_string(n), r.torrent.id.substr(0, 12), clip(r.torrent.name, 36),
                   format_size(r.torrent.size > 0 ? static_cast<std::uint64_t>(r.torrent.size) : 0), r.rule.empty() ? "—" : r.rule,
                   action_text(r)});
    }
    out += p.rows.empty() ? "  (no torrent on the cache matches the policy's archive_when)" : t.render();
    if (hidden) out += fmt::format("\n  … and {} more (see --json)", hidden);
    std::uint64_t an = 0, ab = 0, en = 0, eb = 0, bn = 0, sn = 0;
    for (const auto& r : p.rows) {
        std::uint64_t b = r.torrent.size > 0 ? static_cast<std::uint64_t>(r.torrent.size) : 0;
        if (r.action == tier::Action::archive || r.action == tier::Action::archive_evict) ++an, ab += b;
        if (r.action == tier::Action::evict || r.action == tier::Action::archive_evict) ++en, eb += b;
        if (r.action == tier::Action::blocked) ++bn;
        if (r.action == tier::Action::skipped) ++sn;
    }
    out += fmt::format("\n\n  archive  {} torrent(s)   {}", an, format_size(ab));
    out += fmt::format("\n  evict    {} torrent(s)   {}   freed once each archive copy is proven live", en, format_size(eb));
    if (bn) out += fmt::format("\n  blocked  {} torrent(s)   still downloading", bn);
    if (sn) out += fmt::format("\n  skipped  {} torrent(s)   excluded by the policy", sn);
    return out;
}

// ---- the run -------------------------------------------------------------------------------

struct PolicyRun {
    const config::TierPolicy* policy = nullptr;
    nlohmann::json steps = nlohmann::json::array();  // one entry per job run or refusal
    std::size_t archived = 0, evicted = 0, failed = 0, blocked = 0, resumed = 0;
    bool stopped = false;
    std::string stop_text;
    std::optional<Error> first_error;
    std::uint64_t free_before = 0, free_after = 0;
    tier::Goal goal;
    bool goal_met = false;
    std::string outcome;  // done|stopped|failed
};

enum class Step { done, stopped, failed, refused };

struct PolicySteps {
    Context& ctx;
    Services& s;
    jobs::SharedBudgets& shared;
    PolicyRun& run;

    void note(const std::string& resource, const std::string& what, const std::string& job, const std::string& outcome,
              const std::string& message = {}) {
        nlohmann::json j = {{"resource", resource}, {"what", what}, {"outcome", outcome}};
        j["job"] = job.empty() ? nlohmann::json(nullptr) : nlohmann::json(job);
        if (!message.empty()) j["message"] = message;
        run.steps.push_back(std::move(j));
    }

    void fail(const Error& e) {
        ++run.failed;
        if (!run.first_error) run.first_error = e;
    }

    // Drive one job under the shared budgets.
    Step drive(const std::string& job_id, const std::string& resource, const std::string& what) {
        if (auto stop = shared.exhausted(s.io.clock->steady())) {
            run.stopped = true;
            run.stop_text = stop->text;
            return Step::stopped;
        }
        jobs::RunResult r = s.driver->run(job_id, shared.next());
        s.progress->finish();
        shared.count(r);
        if (r.outcome == jobs::RunOutcome::done) {
            note(resource, what, job_id, "done");
            ctx.out().info(fmt::format("archctl: job {} done", job_id));
            return Step::done;
        }
        if (r.outcome == jobs::RunOutcome::stopped || r.error.is(ErrorCode::LOCKED)) {
            std::string text = r.outcome == jobs::RunOutcome::stopped ? r.stop_text : r.error.message;
            note(resource, what, job_id, "stopped", text);
            ctx.out().info(fmt::format("archctl: job {} is at {}; nothing is lost ({})", job_id, r.step, text));
            run.stopped = true;
            run.stop_text = text;
            return Step::stopped;
        }
        note(resource, what, job_id, "failed", r.error.message);
        ctx.out().info(fmt::format("archctl: job {} failed: {}", job_id, r.error.message));
        fail(r.error);
        return Step::failed;
    }

    // The policy's unfinished jobs: archive from its cache to one of its archive nodes, evict
    // from its cache. Partial before new.
    Step resume_unfinished() {
        auto ids = s.driver->unfinished();
        if (!ids.ok()) {
            fail(ids.error());
            return Step::failed;
        }
        state::JobStore store(*s.state);
        const config::TierPolicy& p = *run.policy;
        for (const auto& id : ids.value()) {
            auto def = store.definition(id);
            if (!def.ok()) continue;
            const auto& d = def.value();
            std::string op = d.value("op", "");
            std::string source = d.contains("source") ? d["source"].value("node", "") : "";
            std::string target = d.contains("target") ? d["target"].value("node", "") : "";
            bool ours = source == p.cache &&
                        (op == "evict" || (op == "archive" && std::find(p.archive.begin(), p.archive.end(), target) != p.archive.end()));
            if (!ours) continue;
            ++run.resumed;
            ctx.out().info(fmt::format("archctl: tier {}: continuing job {} ({} {})", p.name, id, op, d.value("name", "")));
            Step st = drive(id, d.value("qb_id", ""), op);
            if (st == Step::stopped) return st;
            if (st == Step::done && op == "evict") ++run.evicted;
            if (st == Step::done && op == "archive") ++run.archived;
        }
        return Step::done;
    }

    // Archive one candidate to the first archive node with room.
    Step archive(const tier::Row& row) {
        const config::TierPolicy& p = *run.policy;
        std::optional<Error> last;
        for (const auto& node : p.archive) {
            jobs::TransferRequest t;
            t.op = plan::Operation::archive;
            t.res = row.torrent.id;
            t.from = p.cache;
            t.to = node;
            t.no_wait = shared.next().no_wait;
            auto prepared = s.engine->prepare(t);
            if (!prepared.ok()) {
                if (routes::is_clean_stop(prepared.error())) {
                    run.stopped = true;
                    run.stop_text = prepared.error().message;
                    note(row.torrent.id, "archive", "", "stopped", prepared.error().message);
                    return Step::stopped;
                }
                last = prepared.take_error();
                continue;  // another archive node may take it
            }
            const jobs::Prepared& pr = prepared.value();
            if (pr.existing_job) return drive(*pr.existing_job, row.torrent.id, "archive");
            if (pr.plan.empty_delta()) {
                note(row.torrent.id, "archive", "", "done", fmt::format("'{}' already holds it", node));
                return Step::done;
            }
            if (auto refused = pr.refusal()) {
                last = *refused;
                continue;
            }
            auto job = s.engine->create(pr);
            if (!job.ok()) {
                last = job.take_error();
                continue;
            }
            ctx.out().info(fmt::format("archctl: tier {}: job {}  archive {} {} → {}", p.name, job.value(), pr.resource.short_id(),
                                       p.cache, node));
            Step st = drive(job.value(), row.torrent.id, "archive");
            if (st == Step::done) ++run.archived;
            return st;
        }
        Error e = last.value_or(Error(ErrorCode::USAGE, "no archive node in the policy"));
        e.message = fmt::format("cannot archive '{}' ({}): {}", row.torrent.id.substr(0, 12), row.torrent.name, e.message);
        note(row.torrent.id, "archive", "", "failed", e.message);
        ctx.out().info("archctl: " + e.message);
        fail(e);
        return Step::failed;
    }

    // Evict one candidate, only with live proof of its archive copies.
    Step evict(const tier::Row& row) {
        const config::TierPolicy& p = *run.policy;
        auto prepared = s.evictor->prepare({row.torrent.id, p.cache, evict::VerifyArchive::no});
        if (!prepared.ok()) {
            note(row.torrent.id, "evict", "", "failed", prepared.error().message);
            fail(prepared.error());
            return Step::failed;
        }
        const evict::EvictPrepared& ep = prepared.value();
        if (ep.existing_job) return drive(*ep.existing_job, row.torrent.id, "evict");
        if (ep.nothing_to_do) return Step::done;
        if (!ep.coverage.complete()) {
            Error e = evict::incomplete_error(ep);
            ++run.blocked;
            note(row.torrent.id, "evict", "", "blocked", e.message.substr(0, e.message.find('\n')));
            ctx.out().info(fmt::format("archctl: tier {}: not evicting {} ({}): its archive copies are not proven: {}", p.name,
                                       ep.resource.short_id(), ep.resource.name, e.message.substr(0, e.message.find('\n'))));
            return Step::refused;
        }
        auto job = s.evictor->create(ep);
        if (!job.ok()) {
            note(row.torrent.id, "evict", "", "failed", job.error().message);
            fail(job.error());
            return Step::failed;
        }
        ctx.out().info(fmt::format("archctl: tier {}: job {}  evict {} from {}", p.name, job.value(), ep.resource.short_id(), p.cache));
        Step st = drive(job.value(), row.torrent.id, "evict");
        if (st == Step::done) ++run.evicted;
        return st;
    }
};

nlohmann::json run_json(const PolicyRun& r);

// The policy's last run, for `status` (<state>/tiers/<name>.json): its summary without the steps.
Status record_run(const state::StateDir& dir, const PolicyRun& run, const std::string& started) {
    nlohmann::json j = run_json(run);
    j.erase("steps");
    j["started"] = started;
    j["ended"] = format_rfc3339(system_now());
    ARCHCTL_TRY_ASSIGN(AtomicFile f, AtomicFile::create(dir.tiers() + "/" + run.policy->name + ".json", 0600));
    ARCHCTL_TRY_STATUS(f.write(j.dump(2) + "\n"));
    return f.commit();
}

// One policy: unfinished first, then the candidates in order until the goal holds.
void run_policy(Context& ctx, Services& s, const TierOptions& o, jobs::SharedBudgets& shared, PolicyRun& run) {
    const config::TierPolicy& policy = *run.policy;
    PolicySteps runner{ctx, s, shared, run};
    auto done = [&](const char* outcome) { run.outcome = outcome; };
    if (runner.resume_unfinished() == Step::stopped) return done("stopped");
    auto live = read_live(*s.nodes, policy, true);
    if (!live.ok()) {
        // An unreachable node is a wait, not a verdict: cron tries again next time.
        if (jobs::is_outage(live.error())) {
            run.stopped = true;
            run.stop_text = fmt::format("waiting: {}", live.error().message);
            return done("stopped");
        }
        runner.fail(live.error());
        return done("failed");
    }
    tier::Plan plan = plan_of(policy, live.value());
    run.goal = plan.goal;
    run.free_before = run.free_after = live->free;
    // The rows that act now, and behind them the policy's other candidates: an eviction that
    // turns out unproven (blocked) is made up by the next candidate in order.
    std::vector<const tier::Row*> todo;
    std::size_t acting = 0, evicts = 0;
    for (const auto& r : plan.rows) {
        if (r.rule.empty()) continue;  // skipped or blocked: never touched
        todo.push_back(&r);
        acting += acts(r);
        evicts += r.action == tier::Action::evict || r.action == tier::Action::archive_evict;
    }
    if (acting == 0) todo.clear();
    if (!todo.empty()) {
        ConfirmRequest c;
        c.yes = o.yes;
        c.plan_digest = torrent::sha256_hex(plan.to_json().dump());
        c.plan = [&] { return render_plan(policy, plan, live.value(), *s.config); };
        c.question = fmt::format("tier {}: work through {} candidate(s) ({} to evict once proven)?", policy.name, acting, evicts);
        c.needs = fmt::format("tier '{}' needs confirmation", policy.name);
        c.needs_hint = fmt::format("pass --yes (cron: archctl tier {} --yes); 'archctl plan tier {}' shows what it would do", policy.name,
                                   policy.name);
        if (auto refused = confirm(ctx, *s.state, c)) {
            runner.fail(*refused);
            return done("failed");
        }
    }
    std::uint64_t free = live->free;
    for (const tier::Row* row : todo) {
        if (policy.evict == config::TierEvict::to_goal && plan.goal.met(free)) break;
        if (auto stop = shared.exhausted(s.io.clock->steady())) {
            run.stopped = true;
            run.stop_text = stop->text;
            break;
        }
        const bool archived = !row->archived_on.empty();
        if (!archived) {
            Step st = runner.archive(*row);
            if (st == Step::stopped) break;
            if (st != Step::done) continue;  // not evicted without its archive copy
        }
        if (policy.evict == config::TierEvict::never) continue;
        Step st = runner.evict(*row);
        if (st == Step::stopped) break;
        if (st == Step::done) {
            // The goal is judged on the filesystem, not on sizes: hard links shared with other
            // torrents free nothing.
            auto cache = s.nodes->get(policy.cache);
            if (cache.ok())
                if (auto sp = space_of(*cache.value()); sp.ok()) free = sp->first;
        }
    }
    run.free_after = free;
    run.goal_met = policy.evict != config::TierEvict::to_goal || plan.goal.met(free);
    if (run.stopped) return done("stopped");
    if (run.failed) return done("failed");
    if (!run.goal_met) {
        Error e(ErrorCode::TIER_GOAL_UNREACHABLE,
                fmt::format("tier {}: goal not reached: {} free, the goal wants {} free; {}", policy.name, format_size(free),
                            format_size(plan.goal.want_free),
                            run.blocked ? fmt::format("{} candidate(s) blocked because their archive copies are not proven", run.blocked)
                                        : std::string("no candidate is left")),
                run.blocked ? "see 'archctl plan evict RES' for each blocked one, or 'archctl evict RES --verify-archive' to prove the copy"
                            : "widen the policy's archive_when, or lower its goal; 'archctl plan tier " + policy.name + "' shows what is left");
        runner.fail(e);
        return done("failed");
    }
    done("done");
}

nlohmann::json run_json(const PolicyRun& r) {
    nlohmann::json j = {{"policy", r.policy->name},
                        {"outcome", r.outcome},
                        {"resumed", r.resumed},
                        {"archived", r.archived},
                        {"evicted", r.evicted},
                        {"failed", r.failed},
                        {"blocked", r.blocked},
                        {"free_before", r.free_before},
                        {"free_after", r.free_after},
                        {"want_free", r.goal.want_free},
                        {"goal", r.goal.text},
                        {"goal_met", r.goal_met},
                        {"steps", r.steps}};
    if (r.stopped) j["stop"] = r.stop_text;
    if (r.first_error) j["error"] = {{"code", r.first_error->code}, {"message", r.first_error->message}};
    return j;
}

Outcome run_tier(Context& ctx, const TierOptions& o) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto budgets = to_budgets(o.budgets, *s.config);
    if (!budgets.ok()) return Outcome::usage(budgets.take_error());
    auto policies = policies_of(*s.config, o.name);
    if (!policies.ok()) {
        if (policies.error().is(ErrorCode::USAGE)) return Outcome::usage(policies.take_error());
        return Outcome::failed(policies.take_error());
    }
    jobs::SharedBudgets shared(budgets.value(), s.io.clock->steady());
    nlohmann::json runs = nlohmann::json::array();
    std::optional<Error> first_error;
    std::string stop_text;
    for (const config::TierPolicy* policy : policies.value()) {
        PolicyRun run;
        run.policy = policy;
        std::string started = format_rfc3339(system_now());
        run_policy(ctx, s, o, shared, run);
        Status recorded = record_run(*s.state, run, started);
        if (!recorded.ok()) ctx.out().info(fmt::format("archctl: warning: the outcome of tier {} was not recorded: {}", policy->name,
                                                       recorded.error().message));
        ctx.out().info(fmt::format("archctl: tier {}: {} archived, {} evicted, {} free (goal {}){}", policy->name, run.archived, run.evicted,
                                   format_size(run.free_after), run.goal.text,
                                   run.outcome == "done" ? "; goal holds" : run.outcome == "stopped" ? "; stopped, more to do" : ""));
        runs.push_back(run_json(run));
        if (run.first_error && !first_error) first_error = run.first_error;
        if (run.stopped && stop_text.empty()) stop_text = run.stop_text;
        if (run.stopped && shared.exhausted(s.io.clock->steady())) break;  // the budgets are the run's, not the policy's
    }
    nlohmann::json result = {{"tier", runs}};
    if (first_error) return Outcome::failed(*first_error, result);
    if (!stop_text.empty()) return Outcome::partial(stop_text, "rerun 'archctl tier' to continue (cron: exit 10 means more to do)", result);
    return Outcome::done(result);
}

}  // namespace

Outcome run_plan_tier(Context& ctx, const std::string& name) {
    auto services = ctx.services();
    if (!services.ok()) return Outcome::failed(services.take_error());
    Services& s = *services.value();
    auto policies = policies_of(*s.config, name);
    if (!policies.ok()) {
        if (policies.error().is(ErrorCode::USAGE)) return Outcome::usage(policies.take_error());
        return Outcome::failed(policies.take_error());
    }
    nlohmann::json plans = nlohmann::json::array();
    std::string text;
    for (const config::TierPolicy* policy : policies.value()) {
        auto live = read_live(*s.nodes, *policy, true);
        if (!live.ok()) return Outcome::failed(live.take_error());
        tier::Plan plan = plan_of(*policy, live.value());
        nlohmann::json j = plan.to_json();
        j["requests"] = live->requests;
        if (!live->unreachable.empty()) j["unreachable"] = live->unreachable;
        plans.push_back(std::move(j));
        if (!text.empty()) text += "\n\n";
        text += render_plan(*policy, plan, live.value(), *s.config);
    }
    std::string who = name.empty() ? "" : " " + name;
    text += fmt::format("\n\nrun with: archctl tier{} --yes        (cron: archctl tier --max-minutes 240 --yes || [ $? -eq 10 ])", who);
    ctx.out().result(text);
    return Outcome::done({{"tier", plans}});
}

std::string render_policies(const config::Config& config, const state::StateDir* state, session::NodeSessions& nodes,
                            nlohmann::json& out) {
    out = nlohmann::json::array();
    if (config.tiers.empty()) return {};
    std::string text = "policies\n";
    for (const auto& [name, policy] : config.tiers) {
        nlohmann::json j = {{"policy", name}, {"cache", policy.cache}, {"archive", policy.archive}};
        std::string line = fmt::format("  {}  {} → {}", name, policy.cache, fmt::join(policy.archive, ", "));
        auto live = read_live(nodes, policy, true);
        if (live.ok()) {
            tier::Plan plan = plan_of(policy, live.value());
            std::size_t to_archive = 0, to_evict = 0;
            for (const auto& r : plan.rows) {
                to_archive += r.action == tier::Action::archive || r.action == tier::Action::archive_evict;
                to_evict += r.action == tier::Action::evict || r.action == tier::Action::archive_evict;
            }
            bool met = plan.goal.met(plan.goal.free_now);
            j["goal"] = plan.goal.text;
            j["want_free"] = plan.goal.want_free;
            j["free"] = plan.goal.free_now;
            j["goal_met"] = met;
            j["candidates_left"] = {{"archive", to_archive}, {"evict", to_evict}};
            line += fmt::format("   goal {}   now {} free{}   left: {} to archive, {} to evict", plan.goal.text, format_size(plan.goal.free_now),
                                met ? " (met)" : "", to_archive, to_evict);
        } else {
            j["error"] = live.error().message;
            line += "   (" + live.error().message + ")";
        }
        if (state) {
            auto last = read_file(state->tiers() + "/" + name + ".json");
            if (last.ok()) {
                auto doc = nlohmann::json::parse(last.value(), nullptr, false);
                if (doc.is_object()) {
                    j["last_run"] = doc;
                    line += fmt::format("\n      last run {}: {}, {} archived, {} evicted{}", doc.value("ended", "?"), doc.value("outcome", "?"),
                                        doc.value("archived", 0), doc.value("evicted", 0),
                                        doc.contains("error") ? " — " + doc["error"].value("message", "") : "");
                }
            } else {
                line += "\n      never run";
            }
        }
        text += line + "\n";
        out.push_back(std::move(j));
    }
    return text;
}

Runner register_tier(CLI::App& app) {
    auto o = std::make_shared<TierOptions>();
    app.add_option("NAME", o->name, "the policy ([tier.NAME] in config); default: every policy")->type_name("NAME");
    add_budget_options(app, o->budgets);
    app.add_flag("--yes", o->yes, "do not ask for confirmation (cron)");
    return [o](Context& ctx) { return run_tier(ctx, *o); };
}

}  // namespace archctl::cli
