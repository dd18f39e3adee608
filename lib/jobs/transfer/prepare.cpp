// TransferPlanner::prepare and TransferPlanner::create: the one service function every creation path shares
// (docs/design.md "Creation").

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/clients/qbittorrent/share_limits.hpp"
#include "lib/jobs/evidence/metainfo.hpp"
#include "lib/jobs/transfer/planner.hpp"
#include "lib/jobs/transfer/job_run.hpp"
#include "lib/jobs/transfer/preflight.hpp"
#include "lib/node/wire/ops.hpp"
#include "lib/routes/routes.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/reservations.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::jobs::transfer {
namespace {

using torrent::sha256_hex;

config::Role source_role(plan::Operation op) { return op == plan::Operation::archive ? config::Role::cache : config::Role::archive; }
config::Role target_role(plan::Operation op) { return op == plan::Operation::archive ? config::Role::archive : config::Role::cache; }

// What the target's share limits will do to the copy the job makes (docs/evict-proof.md "Will the copy
// stay?": a copy counts only while it will stay): a torrent archctl adds gets its own limits of none unless the node's
// config leaves it to the global ones; an existing torrent keeps its own limits, and global
// ones that would stop or remove it are replaced by none at the commit.
void note_share_limits(Prepared& p, NodeHandle& dst) {
    namespace qb = clients::qbittorrent;
    const bool protect = dst.config().share_limits == config::ShareLimitsPolicy::none;
    auto global = dst.share_limits();
    if (!global.ok()) {
        p.share_limits_text = fmt::format("unknown: cannot read qBittorrent's preferences on '{}': {}", p.target, global.error().message);
        p.share_limits = {{"node", p.target}, {"error", global.error().message}};
        return;
    }
    auto existing = p.resource.placements.find(p.target);
    const bool is_new = existing == p.resource.placements.end() || !p.plan.extends_existing;
    qb::EffectiveShareLimits eff = is_new ? (protect ? qb::EffectiveShareLimits{} : qb::new_torrent_limits(global.value()))
                                          : qb::effective_share_limits(existing->second, global.value());
    const bool cleared_at_commit = !is_new && protect && eff.global && (eff.removes() || eff.stops());
    const std::string setting = fmt::format("nodes.{}.share_limits = \"{}\"", p.target, protect ? "none" : "global");
    std::string text;
    if (is_new && protect)
        text = global->any() ? fmt::format("{}'s global share limits ({}) do not apply: the new torrent gets its own limits of none ({})",
                                           p.target, global->text(), setting)
                             : fmt::format("none on {} (the new torrent gets its own limits of none)", p.target);
    else if (is_new)
        text = global->any() ? fmt::format("{}'s global share limits apply to the new torrent ({}): {}", p.target, setting, global->text())
                             : fmt::format("none on {} ({})", p.target, setting);
    else
        text = eff.limited() ? fmt::format("the torrent on {}: {}", p.target, eff.text()) : fmt::format("none for the torrent on {}", p.target);
    if (cleared_at_commit) text += "; archctl gives it its own limits of none at the commit";
    else if (eff.removes()) text += "; evict will not count this copy";
    else if (eff.stops()) text += "; qBittorrent will stop it seeding";
    p.share_limits_text = text;
    p.share_limits = {{"node", p.target},
                      {"global", global->text()},
                      {"effective", cleared_at_commit || !eff.limited() ? "none" : eff.text()},
                      {"protected", protect},
                      {"removes", eff.removes() && !cleared_at_commit},
                      {"stops", eff.stops() && !cleared_at_commit}};
}

Result<std::string> pick_source(Nodes& nodes, const TransferRequest& r, const evidence::Resource& res) {
    config::Role role = source_role(r.op);
    if (!r.from.empty()) {
        ARCHCTL_TRY_ASSIGN(NodeHandle * n, nodes.get(r.from));
        if (n->config().role != role)
            return Error(ErrorCode::USAGE, fmt::format("cannot {} from '{}': it is {} node", plan::to_string(r.op), r.from,
                                              n->config().role == config::Role::cache ? "a cache" : "an archive"));
        if (!res.placements.count(r.from))
            return Error(ErrorCode::NOT_FOUND, fmt::format("'{}' has no torrent '{}'", r.from, res.short_id()));
        return r.from;
    }
    std::vector<std::string> candidates;
    for (NodeHandle* n : nodes.with_role(role))
        if (res.placements.count(n->name())) candidates.push_back(n->name());
    if (candidates.size() == 1) return candidates[0];
    if (candidates.empty())
        return Error(ErrorCode::NOT_FOUND, fmt::format("no {} node has torrent '{}'", role == config::Role::cache ? "cache" : "archive",
                                              res.short_id()));
    return Error(ErrorCode::USAGE, fmt::format("torrent '{}' is on several {} nodes ({})", res.short_id(),
                                      role == config::Role::cache ? "cache" : "archive", fmt::join(candidates, ", ")),
                 "choose one with --from");
}

Result<std::string> pick_target(Nodes& nodes, const TransferRequest& r) {
    config::Role role = target_role(r.op);
    if (!r.to.empty()) {
        ARCHCTL_TRY_ASSIGN(NodeHandle * n, nodes.get(r.to));
        if (n->config().role != role)
            return Error(ErrorCode::USAGE, fmt::format("cannot {} to '{}': it is {} node", plan::to_string(r.op), r.to,
                                              n->config().role == config::Role::cache ? "a cache" : "an archive"));
        return r.to;
    }
    auto all = nodes.with_role(role);
    if (all.size() == 1) return all[0]->name();
    const char* kind = role == config::Role::cache ? "cache" : "archive";
    if (all.empty()) return Error(ErrorCode::USAGE, fmt::format("no {} node is configured", kind), "add one to the config");
    std::vector<std::string> names;
    for (NodeHandle* n : all) names.push_back(n->name());
    return Error(ErrorCode::USAGE,
                 fmt::format("several {} nodes are configured ({}): name the target with --to NODE", kind, fmt::join(names, ", ")),
                 fmt::format("add --to {} (or another of {})", names.front(), fmt::join(names, ", ")));
}

// The files of `sel`, each with its paths on the source's and the target's disk (the plan's layouts).
std::vector<JobFile> files_of(const torrent::FileModel& model, const torrent::Selection& sel, const plan::Plan& plan) {
    std::vector<JobFile> out;
    for (const auto& f : model.files()) {
        if (!sel.contains(f.index)) continue;
        std::string source = plan.source_layout.disk_path(f.index), target = plan.target_layout.disk_path(f.index);
        out.push_back({f.index, f.path, static_cast<std::uint64_t>(f.size), source == f.path ? "" : source,
                       target == f.path ? "" : target});
    }
    return out;
}

// The target holds every file of the torrent selected and complete (`view`), in a state that
// keeps them: nothing is left to copy, whatever the source holds.
bool holds_every_file(const evidence::Resource& resource, const std::string& target, const std::optional<plan::PlacementView>& view) {
    using clients::qbittorrent::RunState;
    auto listed = resource.placements.find(target);
    if (!view || view->names.empty() || listed == resource.placements.end()) return false;
    if (listed->second.run_state == RunState::error || listed->second.run_state == RunState::missing_files) return false;
    const auto every = torrent::Selection::all(view->names.size());
    return view->selected == every && view->complete == every;
}

}  // namespace

// The route the job travels over, found once per pair of nodes in a snapshot.
Status TransferPlanner::route_for(Prepared& p, const TransferRequest& request, PlanSnapshot& snapshot) {
    const bool ensure = request.route_mode == TransferRequest::RouteMode::ensure;
    const std::string key = fmt::format("{} {} {} {}", plan::to_string(request.op), p.source, p.target, ensure ? "ensure" : "look_up");
    auto found = snapshot.routes.find(key);
    if (found == snapshot.routes.end()) {
        Status status = find_route(p, request);
        found = snapshot.routes.emplace(key, PlanSnapshot::FoundRoute{p.route, p.route_state, std::nullopt}).first;
        if (!status.ok()) found->second.error = status.error();
    }
    if (found->second.error) return *found->second.error;
    p.route = found->second.route;
    p.route_state = found->second.state;
    return {};
}

// The route the job travels over: looked up for plan (read-only), ensured — discovered, verified
// by a nonce exchange, or provisioned on demand — for archive/unarchive (docs/routes.md).
Status TransferPlanner::find_route(Prepared& p, const TransferRequest& request) {
    bool archive = request.op == plan::Operation::archive;
    const std::string& cache = archive ? p.source : p.target;
    const std::string& arch = archive ? p.target : p.source;
    routes::Env env{m_config, m_state, m_io.log, m_nodes};
    auto use = [&](const std::string& id, const std::string& cache_path, const std::string& archive_path, std::string state) {
        p.route = {id, archive ? cache_path : archive_path, archive ? archive_path : cache_path};
        p.route_state = std::move(state);
    };
    if (request.route_mode == TransferRequest::RouteMode::ensure) {
        routes::EnsureOptions options;
        options.stop_at = request.stop_at;
        options.no_wait = request.no_wait;
        // Another archctl ensuring the same route holds its lock for a moment: wait for it
        // (bounded) rather than fail; the route is then ready and the check is quick.
        auto give_up = m_io.clock->steady() + (request.no_wait ? std::chrono::minutes(0) : std::chrono::minutes(2));
        if (request.stop_at && *request.stop_at < give_up) give_up = *request.stop_at;
        auto ensured = routes::ensure_route(env, cache, arch, options);
        for (bool told = false; !ensured.ok() && ensured.error().is(ErrorCode::LOCKED) && m_io.clock->steady() < give_up; told = true) {
            if (!told && m_io.log) m_io.log(fmt::format("archctl: waiting for another archctl: {}", ensured.error().message));
            m_io.clock->sleep_for(std::chrono::milliseconds(200));
            ensured = routes::ensure_route(env, cache, arch, options);
        }
        if (!ensured.ok() && ensured.error().is(ErrorCode::LOCKED) && request.no_wait)
            return Error(ErrorCode::ROUTE_WAITING, fmt::format("not waiting (--no-wait): {}", ensured.error().message),
                         "rerun without --no-wait to wait for the other archctl");
        ARCHCTL_TRY_ASSIGN(routes::Route r, std::move(ensured));
        use(r.id, r.cache_path, r.archive_path, r.action == routes::EnsureAction::provisioned ? "ready (provisioned now)" : "ready");
        return {};
    }
    ARCHCTL_TRY_ASSIGN(routes::Listing listing, routes::list_routes(env));
    for (const auto& e : listing.routes)
        if (e.cache == cache && e.archive == arch && e.discovered) {
            // A folder whose settings break the valve is named with its fix (docs/routes.md).
            use(e.id, e.cache_path, e.archive_path,
                e.valve.empty() ? e.state
                                : fmt::format("unsafe: {}; fix: {}", routes::valve_text(e.valve), routes::valve_fix(e.id)));
            return {};
        }
    // Unreachable is not missing: with a node's Syncthing silent nothing is known about the
    // pair, and the job waits for it (transfer.outage_wait) rather than provision a second route.
    if (std::string down = routes::unreachable_text(listing.discovery, cache, arch); !down.empty()) {
        std::string state = fmt::format("unreachable: {}; the job waits for it", down);
        for (const auto& e : listing.routes)
            if (e.cache == cache && e.archive == arch && e.state == "unreachable") {
                use(e.id, e.cache_path, e.archive_path, std::move(state));
                return {};
            }
        p.route_state = std::move(state);
        return {};
    }
    p.route_state = m_config.route_policy == config::RoutePolicy::on_demand ? "missing: provisioned on demand by the job"
                                                                            : "missing: provisioned by eager_mesh";
    return {};
}

std::string request_digest(const TransferRequest& r, const std::vector<std::string>& aliases, const std::string& source,
                           const std::string& target) {
    std::vector<std::string> sorted = aliases;
    std::sort(sorted.begin(), sorted.end());
    nlohmann::json j = {{"op", plan::to_string(r.op)}, {"aliases", sorted}, {"source", source}, {"target", target},
                        {"files", r.files ? r.files->to_string() : std::string("*")}, {"file_paths", r.file_paths},
                        {"dir_paths", r.dir_paths}};
    return sha256_hex(j.dump());
}

TransferPlanner::TransferPlanner(const config::Config& config, const state::StateDir& state, Nodes& nodes, JobIo io)
    : m_config(config), m_state(state), m_nodes(nodes), m_io(std::move(io)) {}

Result<Prepared> TransferPlanner::prepare(const TransferRequest& request) {
    PlanSnapshot snapshot(m_nodes);
    return prepare(request, snapshot);
}

Result<Prepared> TransferPlanner::prepare(const TransferRequest& request, PlanSnapshot& snapshot) {
    Prepared p;
    p.request = request;
    ARCHCTL_TRY_ASSIGN(p.resource, snapshot.live.resolve(request.res));
    ARCHCTL_TRY_ASSIGN(p.source, pick_source(m_nodes, request, p.resource));
    ARCHCTL_TRY_ASSIGN(p.target, pick_target(m_nodes, request));
    p.request_digest = request_digest(request, p.resource.aliases(), p.source, p.target);
    ARCHCTL_TRY_ASSIGN(p.existing_job, state::holding_job(m_state, p.resource.aliases(), p.request_digest));
    if (p.existing_job) return p;

    ARCHCTL_TRY_ASSIGN(NodeHandle * src, m_nodes.get(p.source));
    ARCHCTL_TRY_ASSIGN(NodeHandle * dst, m_nodes.get(p.target));
    ARCHCTL_TRY_ASSIGN(auto target_view, snapshot.live.placement(*dst, p.resource));
    p.held = request.settle_held && !request.files && request.file_paths.empty() && request.dir_paths.empty() &&
             holds_every_file(p.resource, p.target, target_view);
    if (p.held) return p;
    ARCHCTL_TRY_ASSIGN(auto source_view, snapshot.live.placement(*src, p.resource));
    if (!source_view) return Error(ErrorCode::NOT_FOUND, fmt::format("'{}' has no torrent '{}'", p.source, p.resource.short_id()));
    p.source_data_path = evidence::data_path(*source_view);
    ARCHCTL_TRY_ASSIGN(auto read, evidence::read_metainfo(*src, source_view->qb_id, p.resource.identity, p.resource.name, m_io.log));
    const torrent::Metainfo& meta = p.metainfo.emplace(std::move(read.meta));
    if (!meta.identity().same_resource(p.resource.identity))
        return Error(ErrorCode::IDENTITY_MISMATCH, fmt::format("the torrent exported by '{}' is not resource '{}'", p.source, p.resource.short_id()));
    ARCHCTL_TRY_ASSIGN(p.resource.identity, p.resource.identity.join(meta.identity()));

    plan::PlanInput in;
    in.meta = &meta;
    in.source = *source_view;
    in.target = target_view;
    in.source_qb_root = src->config().qb_root;
    in.target_qb_root = dst->config().qb_root;
    in.request = {request.op, request.files, request.file_paths, request.dir_paths};
    // A target that cannot measure its free space refuses the plan with why, not as a full disk.
    ARCHCTL_TRY_ASSIGN(session::Space target_space, snapshot.live.space(*dst, dst->config().qb_root));
    p.target_free = target_space.free;
    in.caps.target_free = p.target_free;
    in.caps.min_free = p.min_free = m_config.min_free;
    ARCHCTL_TRY_ASSIGN(p.plan, plan::compute(in));
    if (!p.plan.empty_delta()) note_share_limits(p, *dst);
    torrent::FileModel model(meta);
    // Each file list once: at 100,000 files a list is ~10 MB and the checks below read both.
    p.delta_files = files_of(model, p.plan.delta, p.plan);
    p.union_files = files_of(model, p.plan.union_set, p.plan);
    if (!p.plan.empty_delta()) {
        // Plan is a promise: what the job's preflight would refuse is refused here, by the same checks.
        ARCHCTL_TRY_STATUS(evidence::check_data_path_served(*source_view, src->config(), p.resource.name));
        SourceNeeds needs{.save_path = p.source_data_path,
                          .files = std::move(p.delta_files),
                          .partfile = p.plan.partfile,
                          .boundary_pieces = p.plan.boundary_pieces,
                          .union_set = p.plan.union_set,
                          .piece_count = meta.piece_count(),
                          .piece_length = meta.piece_length(),
                          .model = &model,
                          .piece_hashes = &meta.v1_pieces()};
        PartfileSourcing sourcing;
        needs.sourcing_out = &sourcing;
        needs.layout = &p.plan.source_layout;
        ARCHCTL_TRY_STATUS(check_source_ready(*src, *source_view, needs, p.union_files, p.resource.name));
        ARCHCTL_TRY_ASSIGN(p.preexisting, checked_preexisting_target_files(*dst, p.plan.target_save_path, needs.files));
        p.delta_files = std::move(needs.files);
        needs.files.clear();  // the target's part file check reads the model, not the delta
        needs.layout = &p.plan.target_layout;
        ARCHCTL_TRY_STATUS(check_target_partfile(*dst, p.plan.target_save_path, p.resource.identity.qb_id(), needs));
        p.partfile_from_disk = sourcing.from_disk;
        p.partfile_from_partfile = sourcing.from_partfile;
        for (const auto& b : sourcing.bytes) p.partfile_bytes.push_back({{"piece", b.piece}, {"file", b.file}, {"from", b.from}});
    }
    p.source_fingerprint = evidence::fingerprint(*source_view);
    p.target_fingerprint = target_view ? evidence::fingerprint(*target_view) : "";
    p.file_count = model.file_count();
    p.piece_count = meta.piece_count();
    p.piece_length = meta.piece_length();
    // The route last: a job that would be refused, or that has nothing to do, provisions none.
    if (request.route_mode == TransferRequest::RouteMode::look_up || (!p.plan.empty_delta() && !p.refusal()))
        ARCHCTL_TRY_STATUS(route_for(p, request, snapshot));
    return p;
}

Result<std::string> TransferPlanner::create(const Prepared& p) {
    if (p.existing_job) return *p.existing_job;
    JobDefinition d;
    d.id = state::new_job_id();
    d.op = p.request.op;
    d.created_at = format_rfc3339(system_now());
    d.identity = p.resource.identity;
    d.name = p.resource.name;
    d.qb_id = p.resource.identity.qb_id();
    d.aliases = p.resource.aliases();
    d.source = p.source;
    d.target = p.target;
    d.source_save_path = p.resource.placements.at(p.source).save_path;
    d.source_data_path = p.source_data_path;
    d.target_save_path = p.plan.target_save_path;
    d.new_target = !p.plan.extends_existing;
    d.target_layout = p.plan.target_layout.layout;
    d.source_fingerprint = p.source_fingerprint;
    d.target_fingerprint = p.target_fingerprint;
    d.route = p.route;
    d.requested = p.plan.requested;
    d.baseline = p.plan.baseline;
    d.delta = p.plan.delta;
    d.union_set = p.plan.union_set;
    d.delta_bytes = p.plan.delta_bytes;
    d.files = p.delta_files;
    d.union_files = p.union_files;
    d.file_count = p.file_count;
    d.partfile = p.plan.partfile;
    d.boundary_pieces = p.plan.boundary_pieces;
    d.piece_count = p.piece_count;
    d.piece_length = p.piece_length;
    d.verify_transit = p.request.verify_transit || m_config.verify_transit;
    d.payload_layout = node::PayloadLayout::sharded;
    d.request_digest = p.request_digest;
    d.plan_digest = p.plan.digest;

    ARCHCTL_TRY_STATUS(state::reserve(m_state, d.aliases, d.id));
    state::JobStore store(m_state);
    nlohmann::json def = d.to_json();
    def["metainfo_b64"] = nullptr;  // the exported torrent lives beside the definition
    // The document holds the file lists now (the prepared job keeps its own).
    std::vector<JobFile>().swap(d.files);
    std::vector<JobFile>().swap(d.union_files);
    Status created = store.create(d.id, def);
    if (!created.ok()) {
        // A reservation this cannot release is released as stale by the next planner (no job
        // definition holds it).
        (void)state::release(m_state, d.aliases, d.id);
        return created.take_error();
    }
    ARCHCTL_TRY_STATUS(write_file_atomic(store.dir_of(d.id) + "/" + k_job_metainfo, p.metainfo ? p.metainfo->bytes() : ""));
    // Where its staging lives, so that even a job whose definition is lost can be cleaned up.
    nlohmann::json staging = {{{"node", d.source}, {"path", d.route.source_path + "/" + d.id}},
                              {{"node", d.target}, {"path", d.route.target_path + "/" + d.id}}};
    ARCHCTL_TRY_STATUS(store.append_event(d.id, "created", {{"summary", d.summary()}, {"delta", d.delta.to_string()},
                                                           {"delta_bytes", d.delta_bytes}, {"staging", staging}}));
    return d.id;
}

std::optional<Error> Prepared::refusal() const {
    if (plan.disk_ok) return std::nullopt;
    const std::uint64_t need = static_cast<std::uint64_t>(plan.delta_bytes);
    const std::uint64_t room = target_free > min_free ? target_free - min_free : 0;
    return Error(ErrorCode::DISK_INSUFFICIENT,
                 fmt::format("not enough free space on '{}': the job needs {}, {} is free above the {} floor ({} free in all)", target,
                             format_size(need), format_size(room), format_size(min_free), format_size(target_free)),
                 fmt::format("free {} on '{}', or lower the floor (--min-free SIZE, transfer.min_free; now {})",
                             format_size(need > room ? need - room : 0), target, format_size(min_free)));
}

nlohmann::json Prepared::to_json() const {
    nlohmann::json j = {{"resource", resource.identity.to_json()}, {"name", resource.name}, {"source", source},
                        {"target", target}, {"route", {{"id", route.id}, {"state", route_state}}}};
    if (existing_job) {
        j["existing_job"] = *existing_job;
        return j;
    }
    j["plan"] = plan.to_json();
    if (plan.partfile == plan::PartfileNeed::carry_source)
        j["plan"]["partfile"].update(
            {{"from_disk", partfile_from_disk}, {"from_partfile", partfile_from_partfile}, {"bytes", partfile_bytes}});
    j["disk"] = {{"free", target_free}, {"floor", min_free}, {"ok", plan.disk_ok}};
    if (!share_limits.is_null()) j["share_limits"] = share_limits;
    j["source_data_path"] = source_data_path;
    nlohmann::json pre = nlohmann::json::array();
    for (const auto& f : preexisting) pre.push_back({{"index", f.index}, {"path", f.path}, {"size", f.size}});
    j["preexisting"] = std::move(pre);
    return j;
}

}  // namespace archctl::jobs::transfer
