// archctl status: nodes (reachable, versions, Syncthing device, torrent count).
//
// Probing lives in lib/clients/node_probe; this file renders it. A node that is down is
// reported, not fatal: the command still prints every node and then fails with
// NODES_UNREACHABLE (exit 1) carrying the full result.

#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "lib/clients/node_probe.hpp"
#include "lib/config/config.hpp"
#include "lib/ui/table.hpp"
#if ARCHCTL_HAVE_JOBS
#include "lib/jobs/summary.hpp"
#include "lib/routes/routes.hpp"
#include "lib/state/job_store.hpp"
#endif

namespace archctl::cli {
namespace {

struct StatusOptions {};

// "qBittorrent unreachable: connection refused (URL)" for transport failures, else the error.
std::string failure_cell(const std::string& service, const clients::ServiceProbe& s) {
    const bool transport = s.error && s.error->code.rfind("HTTP_", 0) == 0;
    return service + (transport ? " unreachable: " : ": ") + clients::unreachable_reason(s);
}

std::string qb_cell(const clients::NodeProbe& p) {
    if (!p.qbittorrent.reachable) return failure_cell("qBittorrent", p.qbittorrent);
    return fmt::format("qBittorrent {} (API {})", p.qbittorrent.version, p.qbittorrent.api_version);
}

std::string st_cell(const clients::NodeProbe& p) {
    if (!p.syncthing.reachable) return failure_cell("Syncthing", p.syncthing);
    return fmt::format("Syncthing {} ({})", p.syncthing.version, p.device_id.substr(0, 7));
}

std::string torrents_cell(const clients::NodeProbe& p) {
    if (!p.torrent_count) return "";
    return fmt::format("{} torrent{}", *p.torrent_count, *p.torrent_count == 1 ? "" : "s");
}

// The `nodes` block of UX.md's status sketch.
std::string render_nodes(const std::vector<clients::NodeProbe>& probes) {
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
        if (!p.qbittorrent.reachable && !p.syncthing.reachable) {
            std::string line = "  " + who + "  unreachable: " + clients::unreachable_reason(p.qbittorrent);
            const auto st = clients::unreachable_reason(p.syncthing);
            if (st != clients::unreachable_reason(p.qbittorrent)) line += "; Syncthing: " + st;
            down.push_back(std::move(line));
            continue;
        }
        up.add_row({who, qb_cell(p), st_cell(p), torrents_cell(p), p.reachable() ? "ok" : "down"});
    }
    std::string out = "nodes";
    if (!up.empty()) out += "\n" + up.render();
    for (const auto& line : down) out += "\n" + line;
    return out;
}

#if ARCHCTL_HAVE_JOBS
// The `routes` block: every route discovered in live Syncthing config, with its state.
std::string render_routes(const config::Config& config, nlohmann::json& out) {
    out = nlohmann::json::array();
    auto dir = state::StateDir::open(config.state_dir);
    if (!dir.ok()) return "routes\n  (state directory unreadable)";
    routes::Env env{config, dir.value(), clients::Tuning{}, {}};
    auto listing = routes::list_routes(env);
    if (!listing.ok()) return "routes\n  (" + listing.error().message + ")";
    ui::Table t({}, "  ");
    for (const auto& r : listing->routes) {
        out.push_back(routes::to_json(r));
        std::string checked = r.record && !r.record->verified_at.empty() ? "checked " + r.record->verified_at : "";
        t.add_row({r.id, fmt::format("{} ⇄ {}", r.cache, r.archive), r.state, checked});
    }
    return "routes" + (t.empty() ? std::string("\n  (none)") : "\n" + t.render());
}

// The `jobs` block: unfinished jobs with their progress, and how many need attention.
std::string render_jobs(const config::Config& config, nlohmann::json& out) {
    out = nlohmann::json::array();
    auto dir = state::StateDir::open(config.state_dir);
    if (!dir.ok()) return "jobs\n  (state directory unreadable: " + dir.error().message + ")";
    state::JobStore store(dir.value());
    auto jobs = jobs::summarize_jobs(store);
    if (!jobs.ok()) return "jobs\n  (" + jobs.error().message + ")";
    ui::Table t({}, "  ");
    std::vector<std::string> attention;
    for (const auto& j : jobs.value()) {
        out.push_back(j.to_json());
        if (j.needs_attention) attention.push_back(j.id);
        if (j.finished() && !j.needs_attention) continue;
        t.add_row({j.id, j.definition.value("op", ""), j.definition.value("qb_id", "").substr(0, 12),
                   fmt::format("{} → {}", j.definition["source"].value("node", ""), j.definition["target"].value("node", "")),
                   j.status});
    }
    std::string text = "jobs";
    text += t.empty() ? "\n  (none in progress)" : "\n" + t.render();
    if (!attention.empty())
        text += fmt::format("\nneeds attention: {} job{} (archctl job show {})", attention.size(), attention.size() == 1 ? "" : "s",
                            attention.front());
    return text;
}
#endif

Outcome run_status(Context& ctx, const StatusOptions&) {
    auto config = ctx.config();
    if (!config.ok()) return Outcome::failed(config.take_error());
    clients::ProbeOptions options;
    Output& out = ctx.out();
    if (out.verbose() > 1) options.tuning.log = [&out](const std::string& line) { out.debug(line); };
    options.tuning.warn = [&out](const std::string& line) { out.warn(line); };
    const auto probes = clients::probe_nodes(*config.value(), options);

    nlohmann::json nodes = nlohmann::json::array();
    std::vector<std::string> unreachable;
    std::uint64_t requests = 0;
    for (const auto& p : probes) {
        nodes.push_back(clients::to_json(p));
        if (!p.reachable()) unreachable.push_back(p.name);
        requests += p.requests;
    }
    std::string text = render_nodes(probes);
    nlohmann::json jobs_json = nlohmann::json::array();
    nlohmann::json routes_json = nlohmann::json::array();
#if ARCHCTL_HAVE_JOBS
    text += "\n" + render_routes(*config.value(), routes_json);
    text += "\n" + render_jobs(*config.value(), jobs_json);
#endif
    out.result(text);
    out.debug(fmt::format("{} HTTP requests to {} nodes", requests, probes.size()));
    nlohmann::json result = {{"nodes", nodes}, {"routes", routes_json}, {"jobs", jobs_json}};
    if (unreachable.empty()) return Outcome::done(result);
    std::string names;
    for (const auto& n : unreachable) names += (names.empty() ? "'" : ", '") + n + "'";
    return Outcome::failed(Error("NODES_UNREACHABLE",
                                 fmt::format("{} of {} nodes unreachable: {}", unreachable.size(), probes.size(), names),
                                 "check that qBittorrent and Syncthing run on those nodes, and their URLs and credentials"),
                           result);
}

}  // namespace

Runner register_status(CLI::App& app) {
    auto options = std::make_shared<StatusOptions>();
    app.footer("Exit status: 0 when every node is reachable, 1 otherwise (the report still lists every node).");
    return [options](Context& ctx) { return run_status(ctx, *options); };
}

}  // namespace archctl::cli
