// archctl route: list, show, check and provision Syncthing routes (docs/routes.md).
//
//   archctl route list                       every route: id, nodes, paths, state, last check
//   archctl route show ID                    one route with its provisioning record
//   archctl route ensure CACHE ARCHIVE       make sure a ready route joins the pair
//   archctl route ensure --rollback ID       undo what an unfinished attempt created
//   archctl route ensure --repair ID         set the valve settings on both folders, verify
//   archctl route check ID                   nonce exchange in both directions now
//   archctl route mesh                       provision every missing online pair
//   archctl route rm ID                      remove a route archctl created
//
// The work is in lib/routes; this file parses and renders.

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "lib/config/config.hpp"
#include "lib/routes/routes.hpp"
#include "lib/session/node_session.hpp"
#include "lib/state/state_dir.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {
namespace {

struct RouteOptions {
    std::string show_id;
    std::string check_id;
    std::vector<std::string> pair;  // ensure CACHE ARCHIVE
    std::string rollback_id;
    std::string repair_id;
    std::string rm_id;
    double max_minutes = 0;
    double mesh_max_minutes = 0;
};

// What every subcommand needs: config, state dir, an Env bound to the output.
struct Setup {
    const config::Config* config = nullptr;
    std::optional<state::StateDir> state;
    std::optional<session::NodeSessions> nodes;  // one session per node for the whole command
    std::optional<routes::Env> env;
};

Status prepare(Context& ctx, Setup& s) {
    ARCHCTL_TRY_ASSIGN(s.config, ctx.config());
    ARCHCTL_TRY_ASSIGN(const state::StateDir* dir, ctx.state());
    s.state.emplace(*dir);
    Output& out = ctx.out();
    clients::Tuning tuning;
    tuning.warn = [&out](const std::string& line) { out.warn(line); };
    tuning.logins = login_records(*dir, tuning.warn);
    if (out.verbose() > 1) tuning.log = [&out](const std::string& line) { out.debug(line); };
    s.nodes.emplace(*s.config, tuning);
    s.env.emplace(routes::Env{*s.config, *s.state, [&out](const std::string& line) { out.info(line); }, *s.nodes});
    return ok_status();
}

routes::EnsureOptions ensure_options(double max_minutes) {
    routes::EnsureOptions o;
    if (max_minutes > 0)
        o.stop_at = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<std::int64_t>(max_minutes * 60'000.0));
    return o;
}

Outcome stopped_or_failed(Error e, nlohmann::json result = nlohmann::json::object()) {
    if (routes::is_clean_stop(e)) return Outcome::partial(e.message, e.hint, std::move(result));
    return Outcome::failed(std::move(e), std::move(result));
}

std::string check_cell(const routes::RouteEntry& e) {
    if (!e.record || e.record->last_check_at.empty()) return "never checked";
    return "checked " + e.record->last_check_at + (e.record->last_check == "ok" ? "" : " (failed)");
}

std::string render_list(const routes::Listing& l, int verbose) {
    std::string out;
    if (l.routes.empty()) out = "no routes";
    ui::Table t;
    for (const auto& e : l.routes)
        t.add_row({e.id, fmt::format("{} <-> {}", e.cache, e.archive), e.state, check_cell(e)});
    if (!t.empty()) out = t.render();
    if (verbose > 0) {
        for (const auto& e : l.routes) {
            out += fmt::format("\n{}\n  {}  {}\n  {}  {}", e.id, e.cache, e.cache_path.empty() ? "-" : e.cache_path, e.archive,
                               e.archive_path.empty() ? "-" : e.archive_path);
            if (!e.health.empty()) out += "\n  health  " + e.health;
        }
        if (!l.discovery.ignored.empty()) out += "\nignored folders";
        for (const auto& f : l.discovery.ignored)
            out += fmt::format("\n  {}  {}  {}  {}", f.node, f.folder_id, f.path, f.reason);
    }
    for (const auto& e : l.routes)
        if (!e.valve.empty())
            out += fmt::format("\nunsafe: {}: {}\n  fix: {}", e.id, routes::valve_text(e.valve), routes::valve_fix(e.id));
    for (const auto& u : l.unreachable) out += "\nunreachable: " + u;
    for (const auto& p : l.problems) out += "\nunreadable record: " + p;
    return out;
}

Outcome run_list(Context& ctx) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    auto listing = routes::list_routes(*s.env);
    if (!listing.ok()) return Outcome::failed(listing.take_error());
    const auto& l = listing.value();
    nlohmann::json list = nlohmann::json::array(), ignored = nlohmann::json::array(), half = nlohmann::json::array();
    for (const auto& e : l.routes) list.push_back(routes::to_json(e));
    for (const auto& f : l.discovery.ignored) ignored.push_back(routes::to_json(f));
    for (const auto& h : l.discovery.half) half.push_back(routes::to_json(h));
    ctx.out().result(render_list(l, ctx.out().verbose()));
    return Outcome::done({{"routes", list}, {"ignored", ignored}, {"half", half}, {"unreachable", l.unreachable}});
}

std::string render_record(const routes::RouteRecord& r) {
    std::string out = fmt::format("  record   {} ({}), updated {}\n  step     {}{}", routes::to_string(r.state), r.origin,
                                  r.updated_at, r.step.empty() ? "-" : r.step,
                                  r.step_started_at.empty() ? "" : " (since " + r.step_started_at + ")");
    if (!r.seen.empty()) out += "\n  seen     " + r.seen;
    if (!r.error.empty()) out += "\n  error    " + r.error;
    if (!r.verified_at.empty()) out += "\n  verified " + r.verified_at;
    if (!r.last_check_at.empty()) out += fmt::format("\n  checked  {}: {}", r.last_check_at, r.last_check);
    if (!r.created.empty()) out += "\n  created by archctl";
    for (const auto& c : r.created)
        out += fmt::format("\n    {} {} {} on {}{}", routes::to_string(c.status), routes::to_string(c.kind), c.id, c.node,
                           c.note.empty() ? "" : " (" + c.note + ")");
    return out;
}

Outcome run_show(Context& ctx, const RouteOptions& o) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    auto entry = routes::show_route(*s.env, o.show_id);
    if (!entry.ok()) return Outcome::failed(entry.take_error());
    const auto& e = entry.value();
    std::string text = fmt::format("route {}\n  state    {}\n  cache    {}  {}\n  archive  {}  {}", e.id, e.state, e.cache,
                                   e.cache_path.empty() ? "-" : e.cache_path, e.archive,
                                   e.archive_path.empty() ? "-" : e.archive_path);
    if (!e.health.empty()) text += "\n  health   " + e.health;
    if (!e.valve.empty()) text += fmt::format("\n  valve    {}\n  fix      {}", routes::valve_text(e.valve), routes::valve_fix(e.id));
    if (e.record) text += "\n" + render_record(*e.record);
    ctx.out().result(text);
    return Outcome::done({{"route", routes::to_json(e)}});
}

Outcome run_rollback(Context& ctx, const RouteOptions& o, Setup& s) {
    auto report = routes::rollback_route(*s.env, o.rollback_id);
    if (!report.ok()) return Outcome::failed(report.take_error());
    const auto& r = report.value();
    std::string text = fmt::format("route {}: {}", r.id, r.complete ? "rolled back" : "rolled back in part");
    for (const auto& c : r.objects)
        text += fmt::format("\n  {} {} {} on {}{}", routes::to_string(c.status), routes::to_string(c.kind), c.id, c.node,
                            c.note.empty() ? "" : " (" + c.note + ")");
    ctx.out().result(text);
    nlohmann::json result = {{"rollback", routes::to_json(r)}};
    if (r.complete) return Outcome::done(result);
    return Outcome::failed(Error(ErrorCode::ROLLBACK_INCOMPLETE, fmt::format("rollback of route '{}' left config in place", r.id),
                                 "see the objects listed; rerun once the nodes answer"),
                           result);
}

Outcome run_repair(Context& ctx, const RouteOptions& o, Setup& s) {
    auto report = routes::repair_route(*s.env, o.repair_id, ensure_options(o.max_minutes));
    if (!report.ok()) return stopped_or_failed(report.take_error());
    const auto& r = report.value();
    std::string text = fmt::format("route {}: valve settings hold on both sides; verified", r.id);
    for (const auto& f : r.folders)
        text += fmt::format("\n  {} folder on {}{}", f.status == "repaired" ? "repaired" : "already right", f.node,
                            f.note.empty() ? "" : " (" + f.note + ")");
    ctx.out().result(text);
    return Outcome::done({{"repair", routes::to_json(r)}});
}

Outcome run_ensure(Context& ctx, const RouteOptions& o) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    if (!o.rollback_id.empty() || !o.repair_id.empty()) {
        if (!o.pair.empty() || (!o.rollback_id.empty() && !o.repair_id.empty()))
            return Outcome::usage(Error(ErrorCode::USAGE, "route ensure takes CACHE ARCHIVE, --rollback ID or --repair ID (one of them)",
                                        "see 'archctl route ensure --help'"));
        return o.repair_id.empty() ? run_rollback(ctx, o, s) : run_repair(ctx, o, s);
    }
    if (o.pair.size() != 2)
        return Outcome::usage(Error(ErrorCode::USAGE, "route ensure needs CACHE ARCHIVE (or --rollback ID, --repair ID)",
                                    "see 'archctl route ensure --help'"));
    auto route = routes::ensure_route(*s.env, o.pair[0], o.pair[1], ensure_options(o.max_minutes));
    if (!route.ok()) return stopped_or_failed(route.take_error());
    const auto& r = route.value();
    const char* what = r.action == routes::EnsureAction::already_ready ? "ready"
                       : r.action == routes::EnsureAction::verified    ? "ready (verified now)"
                                                                       : "ready (provisioned now)";
    ctx.out().result(fmt::format("route {}  {} <-> {}  {}", r.id, r.cache, r.archive, what));
    return Outcome::done({{"route", routes::to_json(r)}});
}

Outcome run_check(Context& ctx, const RouteOptions& o) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    auto report = routes::check_route(*s.env, o.check_id);
    if (!report.ok()) return stopped_or_failed(report.take_error());
    const auto& r = report.value();
    ctx.out().result(fmt::format("route {}: nonce seen in both directions ({:.1f} s)", r.id, r.seconds));
    return Outcome::done({{"check", routes::to_json(r)}});
}

Outcome run_rm(Context& ctx, const RouteOptions& o) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    auto report = routes::remove_route(*s.env, o.rm_id);
    if (!report.ok()) return stopped_or_failed(report.take_error());
    const auto& r = report.value();
    std::string text = fmt::format("route {} removed", r.id);
    for (const auto& t : r.objects)
        text += fmt::format("\n  {} {} {} on {}{}", t.status, routes::to_string(t.kind),
                            t.kind == routes::ObjectKind::device ? t.id.substr(0, 7) : t.id, t.node,
                            t.note.empty() ? "" : " (" + t.note + ")");
    std::string files;
    for (const auto& [node, path] : r.files_left) files += fmt::format("{}{}:{}", files.empty() ? "" : ", ", node, path);
    text += "\nfiles on disk were left in place: " + files;
    ctx.out().result(text);
    return Outcome::done({{"removed", routes::to_json(r)}});
}

Outcome run_mesh(Context& ctx, const RouteOptions& o) {
    Setup s;
    if (auto p = prepare(ctx, s); !p.ok()) return Outcome::failed(p.take_error());
    auto report = routes::ensure_mesh(*s.env, ensure_options(o.mesh_max_minutes));
    if (!report.ok()) return stopped_or_failed(report.take_error());
    const auto& r = report.value();
    std::string text = fmt::format("mesh: {} route{} provisioned, {} pair{} already joined", r.ensured.size(),
                                   r.ensured.size() == 1 ? "" : "s", r.present.size(), r.present.size() == 1 ? "" : "s");
    for (const auto& route : r.ensured) text += fmt::format("\n  {}  {} <-> {}", route.id, route.cache, route.archive);
    for (const auto& skip : r.skipped) text += "\n  skipped " + skip;
    for (const auto& e : r.failed) text += "\n  failed " + e.message;
    ctx.out().result(text);
    nlohmann::json result = {{"mesh", routes::to_json(r)}};
    if (r.failed.empty()) return Outcome::done(result);
    return Outcome::failed(Error(ErrorCode::MESH_INCOMPLETE, fmt::format("{} pair{} could not be joined", r.failed.size(),
                                                                r.failed.size() == 1 ? "" : "s"),
                                 "see 'archctl route list -v'"),
                           result);
}

}  // namespace

Runner register_route(CLI::App& app) {
    auto o = std::make_shared<RouteOptions>();
    app.require_subcommand(1);
    CLI::App* list = app.add_subcommand("list", "every route: id, nodes, state, last check (-v: paths, health, ignored folders)");
    CLI::App* show = app.add_subcommand("show", "one route, with its provisioning step, what was seen and what was created");
    show->add_option("ID", o->show_id, "route (Syncthing folder) ID")->required();
    CLI::App* ensure = app.add_subcommand("ensure", "make sure a ready route joins CACHE and ARCHIVE, provisioning it if needed");
    ensure->add_option("NODES", o->pair, "CACHE ARCHIVE: the two node names")->expected(0, 2);
    ensure->add_option("--rollback", o->rollback_id, "remove the config an unfinished attempt created, while still archctl's")
        ->type_name("ID");
    ensure->add_option("--repair", o->repair_id,
                       "set the valve settings (versioning off, permissions ignored, deletes applied) on both folders, then verify")
        ->type_name("ID");
    ensure->add_option("--max-minutes", o->max_minutes, "stop cleanly (exit 10) after N minutes; a rerun continues")
        ->type_name("N");
    CLI::App* check = app.add_subcommand("check", "exchange nonce files in both directions now");
    check->add_option("ID", o->check_id, "route (Syncthing folder) ID")->required();
    CLI::App* mesh = app.add_subcommand("mesh", "provision a route for every missing online cache/archive pair");
    mesh->add_option("--max-minutes", o->mesh_max_minutes, "stop cleanly (exit 10) after N minutes; a rerun continues")
        ->type_name("N");
    CLI::App* rm = app.add_subcommand("rm", "remove a route archctl created, once no unfinished job uses it (files stay on disk)");
    rm->add_option("ID", o->rm_id, "route (Syncthing folder) ID")->required();
    for (CLI::App* sub : {list, show, ensure, check, mesh, rm}) sub->group("Subcommands");
    app.footer("Exit status: 0 done, 10 stopped cleanly (rerun continues), 1 error, 2 usage.");
    return [o, list, show, ensure, check, mesh, rm](Context& ctx) {
        if (list->parsed()) return run_list(ctx);
        if (show->parsed()) return run_show(ctx, *o);
        if (ensure->parsed()) return run_ensure(ctx, *o);
        if (check->parsed()) return run_check(ctx, *o);
        if (mesh->parsed()) return run_mesh(ctx, *o);
        if (rm->parsed()) return run_rm(ctx, *o);
        return Outcome::usage(Error(ErrorCode::USAGE, "missing route subcommand", "see 'archctl route --help'"));
    };
}

}  // namespace archctl::cli
