#include "lib/jobs/status.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/jobs/driver.hpp"
#include "lib/jobs/resolve.hpp"
#include "lib/node/ops.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::jobs {
namespace {

// Resources named by job records, oldest job first, each once.
std::vector<ResourceStatus> resources_of(const std::vector<JobSummary>& all) {
    std::vector<ResourceStatus> out;
    for (const auto& j : all) {
        auto id = torrent::Identity::from_json(j.definition.value("resource", nlohmann::json::object()));
        if (!id.ok()) continue;
        bool seen = std::any_of(out.begin(), out.end(), [&](const auto& r) { return r.identity.same_resource(id.value()); });
        if (seen) continue;
        ResourceStatus r;
        r.identity = id.value();
        r.name = j.definition.value("name", "");
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::map<std::string, std::uint64_t> free_at_qb_roots(Nodes& sessions) {
    std::map<std::string, std::uint64_t> out;
    for (NodeHandle* node : sessions.all()) {
        auto transport = node->ops();
        if (!transport.ok()) continue;
        auto info = node::Ops(*transport.value()).info();
        if (!info.ok()) continue;
        if (auto free = node::free_bytes_at(info.value(), node->config().qb_root)) out[node->name()] = *free;
    }
    return out;
}

Overview read_overview(const config::Config& config, const state::StateDir* state, const std::string& state_error, Nodes& sessions) {
    Overview o;
    o.probes = session::probe_nodes(sessions);
    o.free = free_at_qb_roots(sessions);
    if (!state) {
        o.routes_error = "state directory unreadable";
        o.jobs_error = "state directory unreadable: " + state_error;
        return o;
    }
    o.state_readable = true;
    routes::Env env{config, *state, clients::Tuning{}, {}, &sessions};
    auto listing = routes::list_routes(env);
    if (listing.ok()) o.routes = std::move(listing.value());
    else o.routes_error = listing.error().message;
    auto jobs = summarize_jobs(state::JobStore(*state));
    if (!jobs.ok()) {
        o.jobs_error = jobs.error().message;
    } else {
        o.jobs = std::move(jobs.value());
    }
    o.resources = resource_status(sessions, *state, resources_of(o.jobs));
    return o;
}

Result<Focus> read_focus(const state::StateDir& state, Nodes& sessions, const std::string& target) {
    Focus f;
    ARCHCTL_TRY_ASSIGN(f.jobs, summarize_jobs(state::JobStore(state)));
    auto job = std::find_if(f.jobs.begin(), f.jobs.end(), [&](const auto& j) { return j.id == target; });
    if (job != f.jobs.end()) {
        auto id = torrent::Identity::from_json(job->definition.value("resource", nlohmann::json::object()));
        if (!id.ok()) return Error(ErrorCode::CORRUPT, fmt::format("job '{}' names no readable resource: {}", target, id.error().message));
        f.resource.identity = id.value();
        f.resource.name = job->definition.value("name", "");
        f.job_id = target;
    } else {
        auto res = resolve(sessions, target);
        if (!res.ok()) {
            Error e = res.take_error();
            if (e.is(ErrorCode::BAD_VALUE) || e.is(ErrorCode::NOT_FOUND))
                e.hint = "give a resource (a hash or at least 8 hex of one) or a job id from 'archctl job list'";
            return e;
        }
        f.resource.identity = res->identity;
        f.resource.name = res->name;
        f.qb_id = res->identity.qb_id();
    }
    f.resource = resource_status(sessions, state, {f.resource}).front();
    return f;
}

}  // namespace archctl::jobs
