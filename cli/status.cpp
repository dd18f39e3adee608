// archctl status [RES|JOB]: nodes (reachable, versions, Syncthing device, torrent count),
// routes, placements with per-node coverage, jobs in progress and jobs needing attention.
//
// Without an argument it covers every resource archctl has a job record or a placement record
// for (the inventory: records outlive `job clear`), every job that runs (with the pid driving it)
// or needs a command (with that command); with RES (a hash or an unambiguous prefix) or a job id
// (or a prefix only one job has) it shows that resource's placements on every node, how much
// of each cache copy archive copies hold, and its jobs.
//
// The reads live in lib/jobs/status (probes, free space, routes, jobs, placements); this file
// renders them. A node that is down is reported, not fatal: the command still prints everything
// it could read and then fails with NODES_UNREACHABLE (exit 1) carrying the full result.

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/commands.hpp"
#include "cli/services.hpp"
#include "cli/tier.hpp"
#include "lib/session/node_probe.hpp"
#include "lib/config/config.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/report/status.hpp"
#include "lib/ui/table.hpp"

namespace archctl::cli {
namespace {

struct StatusOptions {
    std::string target;  // RES or JOB; empty: everything
};

// "qBittorrent unreachable: connection refused (URL)" for transport failures, else the error.
std::string failure_cell(const std::string& service, const session::ServiceProbe& s) {
    const bool transport = s.error && s.error->code.rfind("HTTP_", 0) == 0;
    return service + (transport ? " unreachable: " : ": ") + session::unreachable_reason(s);
}

std::string qb_cell(const session::NodeProbe& p) {
    if (!p.qbittorrent.reachable) return failure_cell("qBittorrent", p.qbittorrent);
    return fmt::format("qBittorrent {} (API {})", p.qbittorrent.version, p.qbittorrent.api_version);
}

std::string st_cell(const session::NodeProbe& p) {
    if (!p.syncthing.reachable) return failure_cell("Syncthing", p.syncthing);
    return fmt::format("Syncthing {} ({})", p.syncthing.version, p.device_id.substr(0, 7));
}

std::string torrents_cell(const session::NodeProbe& p) {
    if (!p.torrent_count) return "";
    return fmt::format("{} torrent{}", *p.torrent_count, *p.torrent_count == 1 ? "" : "s");
}

// The `nodes` block of `status` (docs/design.md "What the user sees").
// `free` maps a node to the free space at its qBittorrent root, when its node operations answer;
// `free_errors` a node whose operations answered to why that space cannot be measured.
std::string render_nodes(const std::vector<session::NodeProbe>& probes, const std::map<std::string, std::uint64_t>& free,
                         const std::map<std::string, std::string>& free_errors) {
    if (probes.empty()) return "nodes\n  (none configured)";
    std::size_t name_w = 0, role_w = 0;
    for (const auto& p : probes) {
        name_w = std::max(name_w, p.name.size());
        role_w = std::max(role_w, p.role.size());
    }
    ui::Table up({}, "  ");
    std::vector<std::string> down;
    for (const auto& p : probes) {
        const std::string who = fmt::format("{:<{}}  {:<{}}", p.name, name_w, p.role, role_w);
        if (!p.transport.ok) {
            // The node's operations cannot run: the cause first, the services after it.
            std::string cause = p.transport.error ? p.transport.cause() : "unknown error";
            std::string line = "  " + who + "  transport: " + cause;
            if (p.qbittorrent.reachable && p.syncthing.reachable) line += "; " + qb_cell(p) + ", " + st_cell(p);
            if (!p.qbittorrent.reachable) line += "; " + failure_cell("qBittorrent", p.qbittorrent);
            if (!p.syncthing.reachable) line += "; " + failure_cell("Syncthing", p.syncthing);
            down.push_back(line + "  down");
            continue;
        }
        if (!p.qbittorrent.reachable && !p.syncthing.reachable) {
            std::string line = "  " + who + "  unreachable: " + session::unreachable_reason(p.qbittorrent);
            const auto st = session::unreachable_reason(p.syncthing);
            if (st != session::unreachable_reason(p.qbittorrent)) line += "; Syncthing: " + st;
            down.push_back(std::move(line));
            continue;
        }
        auto f = free.find(p.name);
        std::string free_cell = f != free.end()                   ? "free " + format_size(f->second)
                                : free_errors.count(p.name) ? "free: cannot measure"
                                                            : "";
        up.add_row({who, qb_cell(p), st_cell(p), torrents_cell(p), free_cell, p.reachable() ? "ok" : "down"});
    }
    std::string out = "nodes";
    if (!up.empty()) out += "\n" + up.render();
    for (const auto& line : down) out += "\n" + line;
    return out;
}

// The `routes` block: every route discovered in live Syncthing config, with its state.
std::string render_routes(const jobs::report::Overview& o, nlohmann::json& out) {
    out = nlohmann::json::array();
    if (!o.routes) return "routes\n  (" + o.routes_error + ")";
    ui::Table t({}, "  ");
    for (const auto& r : o.routes->routes) {
        out.push_back(routes::to_json(r));
        std::string checked = r.record && !r.record->verified_at.empty() ? "checked " + r.record->verified_at : "";
        t.add_row({r.id, fmt::format("{} ⇄ {}", r.cache, r.archive), r.state, checked});
    }
    std::string text = "routes" + (t.empty() ? std::string("\n  (none)") : "\n" + t.render());
    for (const auto& r : o.routes->routes) {
        if (!r.valve.empty())
            text += fmt::format("\n  unsafe: {}: {}; fix: {}", r.id, routes::valve_text(r.valve), routes::valve_fix(r.id));
        else if (r.state == "unreachable")
            text += fmt::format("\n  unreachable: {}: {}", r.id, r.health);
    }
    return text;
}

// The `jobs` block: every unfinished job (with the pid that drives it, or the command that goes
// on with it), every failed or damaged one (until `job rm`/`job clear`), finished ones whose
// compensation or cleanup kept files; then `needs attention`: each job that needs a command,
// with the commands that resolve it. With a resource, only its jobs (finished ones too); with a
// job id, only that job. `out` gets the rows; `activity` the running jobs and those needing action.
struct JobFilter {
    std::string qb_id;
    std::string job_id;
    bool matches(const jobs::JobSummary& j) const {
        if (!job_id.empty()) return j.id == job_id;
        return qb_id.empty() || j.definition.value("qb_id", "") == qb_id;
    }
    bool any() const { return !qb_id.empty() || !job_id.empty(); }
};

struct JobsJson {
    nlohmann::json rows = nlohmann::json::array();
    nlohmann::json running = nlohmann::json::array();
    nlohmann::json attention = nlohmann::json::array();
    nlohmann::json waiting = nlohmann::json::array();  // jobs waiting for room on their target
};

// The last cell of a job row: who drives it, or what to run next.
std::string activity_cell(const jobs::report::JobActivity& a) {
    if (a.driver) {
        std::string pct = a.percent ? fmt::format(", {:.0f}%", *a.percent) : "";
        return fmt::format("running: pid {}{}, step {}{}", a.driver->pid, a.driver->host == host_name() ? "" : " on " + a.driver->host,
                           a.step, pct);
    }
    if (a.waiting) return fmt::format("waiting for room on '{}' since {}", a.waiting->node, a.waiting->since);
    return a.resolve.empty() ? "" : "→ " + a.resolve.front();
}

bool listed(const jobs::JobSummary& j, const jobs::report::JobActivity& a, const JobFilter& filter) {
    if (filter.any()) return true;
    if (!j.finished() || j.damaged || a.needs_action() || a.running()) return true;
    return j.needs_attention || !j.ledger.kept.empty();
}

std::string render_jobs(const state::StateDir& state, const std::vector<jobs::JobSummary>& all, const JobFilter& filter, JobsJson& out) {
    ui::Table t({}, "  ");
    std::vector<std::string> attention, waiting;
    for (const auto& j : all) {
        if (!filter.matches(j)) continue;
        out.rows.push_back(j.to_json());
        const jobs::report::JobActivity a = jobs::report::activity_of(state, j);
        if (a.running()) out.running.push_back(a.to_json());
        if (a.needs_action()) {
            out.attention.push_back(a.to_json());
            attention.push_back(fmt::format("  {}  {}: {}", j.id, a.why, fmt::join(a.resolve, ", then ")));
        }
        if (a.waiting) {
            out.waiting.push_back(a.to_json());
            waiting.push_back(fmt::format("  {}  {}", j.id, a.why));
        }
        if (!listed(j, a, filter)) continue;
        t.add_row({j.id, j.damaged ? "damaged" : j.definition.value("op", ""), j.definition.value("qb_id", "").substr(0, 12), j.nodes,
                   j.status, activity_cell(a)});
    }
    std::string text = "jobs";
    text += t.empty() ? (filter.any() ? "\n  (none)" : "\n  (none in progress, none failed)") : "\n" + t.render();
    if (!waiting.empty())
        text += fmt::format("\nwaiting for room: {} job{} (nothing to do: each run goes on with it)\n{}", waiting.size(),
                            waiting.size() == 1 ? "" : "s", fmt::join(waiting, "\n"));
    if (!attention.empty())
        text += fmt::format("\nneeds attention: {} job{}\n{}", attention.size(), attention.size() == 1 ? "" : "s", fmt::join(attention, "\n"));
    return text;
}

// "15/15 files complete (55.6 GiB)" for a placement, or why nothing is known.
std::string holding_cell(const jobs::report::PlacementSummary& p) {
    if (!p.error.empty()) return "unreadable: " + p.error;
    if (!p.present && p.record) return "recorded but gone: its torrent is no longer in qBittorrent";
    if (!p.present) return "no placement";
    std::string text = fmt::format("{}/{} files complete ({})", p.complete, p.selected, format_size(static_cast<std::uint64_t>(p.complete_bytes)));
    if (p.selected < p.files) text += fmt::format(", {} of {} selected", p.selected, p.files);
    return text;
}

// "cache1: 4/5 files with a proven archive copy (4 files on nas); 1 without one:" and a line per file
// saying why no archive copy of it counts.
std::string coverage_line(const jobs::report::CoverageSummary& c) {
    std::string holders;
    for (const auto& [node, n] : c.by_archive)
        holders += fmt::format("{}{} on {}", holders.empty() ? "" : ", ", n == 1 ? std::string("1 file") : fmt::format("{} files", n), node);
    std::string text = fmt::format("  {}: {}/{} files with a proven archive copy", c.cache, c.covered, c.files);
    if (!holders.empty()) text += " (" + holders + ")";
    if (c.missing.empty()) return text + " — every file has one";
    text += fmt::format("; {} without one:", c.missing.size());
    const std::size_t shown = std::min<std::size_t>(c.refused.size(), 5);
    for (std::size_t i = 0; i < shown; ++i) text += fmt::format("\n    {} — {}", c.refused[i].first, c.refused[i].second);
    if (shown < c.refused.size()) text += fmt::format("\n    … and {} more (--json lists all)", c.refused.size() - shown);
    return text;
}

// One resource in full: every node's placement, then the coverage of each cache copy.
std::string render_resource(const jobs::report::ResourceStatus& r) {
    std::string text = fmt::format("{}  \"{}\"", r.identity.short_id(), r.name);
    ui::Table t({}, "  ");
    for (const auto& p : r.placements) {
        std::string generation = p.record ? fmt::format("generation {}", p.record->generation) : "";
        t.add_row({p.node, p.role, p.present ? p.run_state : "", holding_cell(p), p.present ? p.save_path : "", generation});
    }
    text += "\nplacements\n" + t.render();
    if (!r.coverage.empty()) {
        text += "\ncoverage";
        for (const auto& c : r.coverage) text += "\n" + coverage_line(c);
    }
    return text;
}

// The `placements` block of the overview: one line per resource archctl has a job record or a
// placement record for (records outlive `job clear`), with what each node reports for it now.
std::string render_placements(const std::vector<jobs::report::ResourceStatus>& resources) {
    if (resources.empty()) return "placements\n  (none recorded)";
    ui::Table t({}, "  ");
    for (const auto& r : resources) {
        std::string where;
        for (const auto& p : r.placements) {
            if (!p.error.empty()) where += fmt::format("{}{} unreadable", where.empty() ? "" : " · ", p.node);
            else if (p.present) where += fmt::format("{}{} {}/{}", where.empty() ? "" : " · ", p.node, p.complete, p.selected);
            else if (p.record) where += fmt::format("{}{} recorded (generation {}) but gone", where.empty() ? "" : " · ", p.node, p.record->generation);
        }
        std::string covered;
        for (const auto& c : r.coverage) covered += fmt::format("{}{} covered {}/{}", covered.empty() ? "" : ", ", c.cache, c.covered, c.files);
        t.add_row({r.identity.short_id(), r.name, where.empty() ? "no placement" : where, covered});
    }
    return "placements\n" + t.render();
}

// status RES|JOB: the one resource, its placements and coverage, its jobs.
Outcome run_focused(Context& ctx, const config::Config& config, const std::string& target) {
    auto state = ctx.state();
    if (!state.ok()) return Outcome::failed(Error(ErrorCode::STATE_UNREADABLE, "state directory unreadable: " + state.error().message));
    clients::Tuning tuning;
    Output& out = ctx.out();
    if (out.verbose() > 1) tuning.log = [&out](const std::string& line) { out.debug(line); };
    tuning.logins = login_records(*state.value(), [&out](const std::string& line) { out.warn(line); });
    jobs::Nodes nodes(config, tuning);
    auto focus = jobs::report::read_focus(*state.value(), nodes, target, config.count_shared_copies);
    if (!focus.ok()) return Outcome::failed(focus.take_error());
    const jobs::report::ResourceStatus& r = focus->resource;
    JobFilter filter{focus->qb_id, focus->job_id};
    JobsJson jobs_json;
    out.result(render_resource(r) + "\n" + render_jobs(*state.value(), focus->jobs, filter, jobs_json));
    nlohmann::json result = r.to_json();
    result["jobs"] = jobs_json.rows;
    result["running"] = jobs_json.running;
    result["attention"] = jobs_json.attention;
    result["waiting"] = jobs_json.waiting;
    std::vector<std::string> unreadable;
    for (const auto& p : r.placements)
        if (!p.error.empty()) unreadable.push_back("'" + p.node + "'");
    if (unreadable.empty()) return Outcome::done(result);
    return Outcome::failed(Error(ErrorCode::NODES_UNREACHABLE, fmt::format("{} of {} nodes unreadable: {}", unreadable.size(), r.placements.size(),
                                                                  fmt::join(unreadable, ", ")),
                                 "check that qBittorrent runs on those nodes, and its URL and credentials"),
                           result);
}

Outcome run_status(Context& ctx, const StatusOptions& options) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    if (!options.target.empty()) return run_focused(ctx, *config.value(), options.target);
    // One session per node for the whole command: the probes, free space, routes and placements
    // share its logins and its node-operations transport.
    clients::Tuning tuning = session::probe_tuning();
    Output& out = ctx.out();
    if (out.verbose() > 1) tuning.log = [&out](const std::string& line) { out.debug(line); };
    tuning.warn = [&out](const std::string& line) { out.warn(line); };
    auto state = ctx.state();
    if (state.ok()) tuning.logins = login_records(*state.value(), tuning.warn);
    session::NodeSessions sessions(*config.value(), tuning);
    const jobs::report::Overview o = jobs::report::read_overview(*config.value(), state.ok() ? state.value() : nullptr,
                                                 state.ok() ? std::string() : state.error().message, sessions);

    nlohmann::json nodes = nlohmann::json::array();
    std::vector<std::string> unreachable;
    std::uint64_t requests = 0;
    for (const auto& p : o.probes) {
        nodes.push_back(session::to_json(p));
        if (!p.reachable()) unreachable.push_back(p.name);
        requests += p.requests;
    }
    for (auto& n : nodes) {
        const std::string name = n.value("name", "");
        if (auto f = o.free.find(name); f != o.free.end()) n["free_bytes"] = f->second;
        else if (auto e = o.free_errors.find(name); e != o.free_errors.end()) n["free_error"] = e->second;
    }
    std::string text = render_nodes(o.probes, o.free, o.free_errors);
    nlohmann::json result = {{"nodes", nodes},
                             {"routes", nlohmann::json::array()},
                             {"placements", nlohmann::json::array()},
                             {"jobs", nlohmann::json::array()},
                             {"running", nlohmann::json::array()},
                             {"attention", nlohmann::json::array()},
                             {"waiting", nlohmann::json::array()}};
    text += "\n" + render_routes(o, result["routes"]);
    if (o.state_readable) {
        for (const auto& r : o.resources) result["placements"].push_back(r.to_json());
        text += "\n" + render_placements(o.resources);
    }
    if (o.jobs_error.empty()) {
        JobsJson jobs_json;
        text += "\n" + render_jobs(*state.value(), o.jobs, JobFilter{}, jobs_json);
        result["jobs"] = jobs_json.rows;
        result["running"] = jobs_json.running;
        result["attention"] = jobs_json.attention;
        result["waiting"] = jobs_json.waiting;
    } else {
        text += "\njobs\n  (" + o.jobs_error + ")";
    }
    std::string policies = render_policies(*config.value(), state.ok() ? state.value() : nullptr, sessions, result["policies"]);
    if (!policies.empty()) text += "\n" + policies;
    out.result(text);
    out.debug(fmt::format("{} HTTP requests to {} nodes", requests, o.probes.size()));
    if (unreachable.empty()) return Outcome::done(result);
    std::string names;
    for (const auto& n : unreachable) names += (names.empty() ? "'" : ", '") + n + "'";
    std::string hint = "check that qBittorrent and Syncthing run on those nodes, and their URLs and credentials";
    for (const auto& p : o.probes)
        if (!p.transport.ok) hint = fmt::format("run 'archctl node check {}' to see each check and its cause", p.name);
    return Outcome::failed(Error(ErrorCode::NODES_UNREACHABLE,
                                 fmt::format("{} of {} nodes unreachable: {}", unreachable.size(), o.probes.size(), names), hint),
                           result);
}

}  // namespace

Runner register_status(CLI::App& app) {
    auto options = std::make_shared<StatusOptions>();
    app.add_option("TARGET", options->target, "a resource (a hash or at least 8 hex of one) or a job id: show only that")
        ->type_name("RES|JOB");
    app.footer("Exit status: 0 when every node is reachable, 1 otherwise (the report still lists every node).");
    return [options](Context& ctx) { return run_status(ctx, *options); };
}

}  // namespace archctl::cli
