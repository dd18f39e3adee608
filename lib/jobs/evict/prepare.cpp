// Evictor::prepare and Evictor::create: prove coverage from fresh reads, then record the proofs.

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/jobs/evidence/metainfo.hpp"
#include "lib/jobs/evict/evictor.hpp"
#include "lib/jobs/evict/run.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/state/job_store.hpp"
#include "lib/state/placements.hpp"
#include "lib/state/reservations.hpp"
#include "lib/torrent/file_model.hpp"
#include "lib/torrent/metainfo.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::jobs::evict {
namespace {

namespace qb = clients::qbittorrent;

using torrent::sha256_hex;

std::string request_digest(const std::vector<std::string>& aliases, const std::string& cache) {
    std::vector<std::string> sorted = aliases;
    std::sort(sorted.begin(), sorted.end());
    return sha256_hex(nlohmann::json{{"op", "evict"}, {"aliases", sorted}, {"cache", cache}}.dump());
}

Result<std::string> pick_cache(jobs::Nodes& nodes, const EvictRequest& r, const jobs::evidence::Resource& res, bool& none) {
    none = false;
    if (!r.from.empty()) {
        ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * n, nodes.get(r.from));
        if (n->config().role != config::Role::cache)
            return Error(ErrorCode::USAGE, fmt::format("cannot evict from '{}': it is an archive node", r.from),
                         "evict removes cache copies; archive placements are never evicted");
        none = !res.placements.count(r.from);
        return r.from;
    }
    std::vector<std::string> candidates;
    for (jobs::NodeHandle* n : nodes.with_role(config::Role::cache))
        if (res.placements.count(n->name())) candidates.push_back(n->name());
    if (candidates.size() == 1) return candidates[0];
    if (candidates.empty()) {
        none = true;
        return std::string();
    }
    return Error(ErrorCode::USAGE, fmt::format("torrent '{}' is on several cache nodes ({})", res.short_id(), fmt::join(candidates, ", ")),
                 "choose one with --from");
}

// Required files as they are on the cache's disk now, each at the path its content layout gives
// it; absent files have nothing to unlink.
Result<std::vector<OwnedFile>> owned_files(jobs::NodeHandle& cache, const std::string& save_path, const plan::Coverage& coverage,
                                           const torrent::PlacementLayout& layout) {
    std::vector<plan::CoverageFile> files;
    std::size_t count = 0;
    for (const auto& f : coverage.files) {
        files.push_back({f.file.index, layout.disk_path(f.file.index), f.file.size});
        count = std::max<std::size_t>(count, f.file.index + 1);
    }
    ARCHCTL_TRY_ASSIGN(auto stats, jobs::evidence::stat_files(cache, save_path, files, count));
    std::vector<OwnedFile> out;
    for (const auto& f : files) {
        const plan::DiskFile& d = stats[f.index];
        if (d.on_disk != plan::OnDisk::file) continue;
        out.push_back({f.index, f.path, d.stamp.size, d.stamp.ino, d.stamp.dev});
    }
    return out;
}

// The cache copy must be storage separate from every archive copy that proves it: a cache file
// that is the very file (same device and inode) an archive node holds is no second copy, and
// unlinking it could take the archive's data with it. Decided on the stamps both nodes' stat
// just gave; refuses before anything is deleted.
Status check_separate_storage(const std::string& cache_name, const std::vector<OwnedFile>& owned,
                              const std::vector<plan::ArchiveProof>& proofs) {
    std::map<std::uint32_t, const OwnedFile*> by_index;
    for (const auto& f : owned) by_index[f.index] = &f;
    for (const auto& proof : proofs) {
        for (const auto& p : proof.proven) {
            auto it = by_index.find(p.index);
            if (it == by_index.end() || p.size == 0) continue;
            const OwnedFile& f = *it->second;
            if (f.dev != p.stamp.dev || f.ino != p.stamp.ino) continue;
            return Error(ErrorCode::SHARED_STORAGE,
                         fmt::format("cannot evict from '{}': '{}' is the same file as the archive copy on '{}' (device {}, inode {})",
                                     cache_name, f.path, proof.node, f.dev, f.ino),
                         "the two nodes share storage, so the archive copy is not a second copy; give each node its own storage");
        }
    }
    return {};
}

// A file evict would delete that is renamed in qBittorrent (its name is not the path the cache's
// content layout gives it): evict deletes only files where the layout puts them.
Status check_names(const plan::PlacementView& cache, const std::vector<plan::CoverageFile>& files, const torrent::PlacementLayout& layout) {
    for (std::uint32_t i : cache.selected.indices())
        if (i < cache.names.size() && i < files.size() && layout.renamed(i))
            return Error(ErrorCode::RENAMED,
                         fmt::format("cannot evict from '{}': file {} is renamed in qBittorrent ('{}', metainfo '{}', its content layout puts it at '{}')",
                                     cache.node, i, cache.names[i], files[i].path, layout.expected_path(i)),
                         fmt::format("rename it back first (qBittorrent's Content tab: to '{}'); evict deletes only files where their layout puts them",
                                     layout.expected_path(i)));
    return {};
}

}  // namespace

Evictor::Evictor(const config::Config& config, const state::StateDir& state, jobs::Nodes& nodes, jobs::JobIo io)
    : m_config(config), m_state(state), m_nodes(nodes), m_io(std::move(io)) {}

Result<EvictPrepared> Evictor::prepare(const EvictRequest& request) {
    EvictPrepared p;
    p.request = request;
    ARCHCTL_TRY_ASSIGN(p.resource, jobs::evidence::resolve(m_nodes, request.res));
    bool none = false;
    ARCHCTL_TRY_ASSIGN(p.cache, pick_cache(m_nodes, request, p.resource, none));
    for (jobs::NodeHandle* n : m_nodes.with_role(config::Role::archive)) p.archive_nodes.push_back(n->name());
    std::vector<std::string> cache_nodes;
    for (jobs::NodeHandle* n : m_nodes.with_role(config::Role::cache)) cache_nodes.push_back(n->name());
    // An unfinished eviction continues even when its cache torrent is already gone.
    for (const auto& c : p.cache.empty() ? cache_nodes : std::vector<std::string>{p.cache}) {
        ARCHCTL_TRY_ASSIGN(p.existing_job, state::holding_job(m_state, p.resource.aliases(), request_digest(p.resource.aliases(), c)));
        if (p.existing_job) {
            p.cache = c;
            return p;
        }
    }
    if (none) {
        p.nothing_to_do = true;
        return p;
    }
    p.request_digest = request_digest(p.resource.aliases(), p.cache);
    ARCHCTL_TRY_ASSIGN(jobs::NodeHandle * cache, m_nodes.get(p.cache));
    const qb::TorrentInfo& cache_info = p.resource.placements.at(p.cache);
    ARCHCTL_TRY_ASSIGN(p.cache_view, read_view(*cache, cache_info));
    p.cache_fingerprint = jobs::evidence::fingerprint(p.cache_view);
    ARCHCTL_TRY_ASSIGN(auto cache_record, committed_record(m_state, p.resource.aliases(), p.cache));
    p.cache_generation = cache_record ? cache_record->generation : 0;
    ARCHCTL_TRY_ASSIGN(auto read, jobs::evidence::read_metainfo(*cache, cache_info.id, p.resource.identity, p.resource.name, m_io.log,
                                                                  jobs::evidence::MetainfoUse::verify_pieces));
    const torrent::Metainfo& meta = p.metainfo.emplace(std::move(read.meta));
    if (!meta.identity().same_resource(p.resource.identity))
        return Error(ErrorCode::IDENTITY_MISMATCH, fmt::format("the torrent exported by '{}' is not resource '{}'", p.cache, p.resource.short_id()));
    torrent::FileModel model(meta);
    p.piece_count = meta.piece_count();
    p.piece_length = meta.piece_length();

    plan::CoverageInput in;
    in.cache = p.cache_view;
    for (const auto& f : model.files()) in.files.push_back({f.index, f.path, static_cast<std::uint64_t>(f.size)});
    std::vector<std::string> paths(in.files.size());
    for (const auto& f : in.files)
        if (f.index < paths.size()) paths[f.index] = f.path;
    torrent::PlacementLayout cache_layout = torrent::infer_layout(paths, p.cache_view.names);
    ARCHCTL_TRY_STATUS(check_names(p.cache_view, in.files, cache_layout));
    for (const auto& u : p.resource.unreachable) in.unreachable.push_back(u);
    for (jobs::NodeHandle* n : m_nodes.with_role(config::Role::archive)) {
        auto it = p.resource.placements.find(n->name());
        if (it == p.resource.placements.end()) continue;
        // The node's one torrent list of this command finds the torrents sharing the copy's
        // files (a batch or tier plans many resources on it); the revalidation right before
        // every deletion reads a fresh one.
        const auto& list = n->torrent_list();
        jobs::evidence::EvidenceOptions options{.verify = request.verify_archive,
                                      .count_shared = m_config.count_shared_copies,
                                      .torrents = list.ok() ? &list.value() : nullptr};
        auto evidence = read_evidence(*n, it->second, in.files, m_state, p.resource.aliases(), options);
        if (!evidence.ok()) {
            in.unreachable.push_back(fmt::format("{}: {}", n->name(), evidence.error().message));
            continue;
        }
        in.archives.push_back(std::move(evidence).value());
    }
    ARCHCTL_TRY_ASSIGN(p.coverage, plan::compute_coverage(in));
    ARCHCTL_TRY_ASSIGN(p.owned, owned_files(*cache, strip_trailing_slashes(p.cache_view.save_path), p.coverage, cache_layout));
    ARCHCTL_TRY_STATUS(check_separate_storage(p.cache, p.owned, p.coverage.proofs));
    return p;
}

Result<std::string> Evictor::create(const EvictPrepared& p) {
    if (p.existing_job) return *p.existing_job;
    if (!p.coverage.complete()) return incomplete_error(p);
    EvictDefinition d;
    d.id = state::new_job_id();
    d.created_at = format_rfc3339(system_now());
    d.identity = p.resource.identity;
    d.name = p.resource.name;
    d.qb_id = p.cache_view.qb_id;
    d.aliases = p.resource.aliases();
    d.cache = p.cache;
    d.save_path = strip_trailing_slashes(p.cache_view.save_path);
    d.cache_fingerprint = p.cache_fingerprint;
    d.cache_generation = p.cache_generation;
    d.required = p.coverage.required;
    d.required_bytes = p.coverage.required_bytes;
    d.files = p.owned;
    d.proofs = p.coverage.proofs;
    d.proved_at = d.created_at;
    d.verify_archive = p.request.verify_archive == VerifyArchive::yes;
    d.piece_count = p.piece_count;
    d.piece_length = p.piece_length;
    d.request_digest = p.request_digest;
    d.coverage_digest = p.coverage.digest;

    ARCHCTL_TRY_STATUS(state::reserve(m_state, d.aliases, d.id));
    state::JobStore store(m_state);
    Status created = store.create(d.id, d.to_json());
    if (!created.ok()) {
        // A reservation this cannot release is released as stale by the next planner (no job
        // definition holds it).
        (void)state::release(m_state, d.aliases, d.id);
        return created.take_error();
    }
    ARCHCTL_TRY_STATUS(write_file_atomic(store.dir_of(d.id) + "/resource.torrent", p.metainfo ? p.metainfo->bytes() : ""));
    nlohmann::json proofs = nlohmann::json::array();
    for (const auto& proof : d.proofs) proofs.push_back(proof.to_json());
    ARCHCTL_TRY_STATUS(store.append_event(d.id, "created", {{"summary", d.summary()}, {"required", d.required.to_string()},
                                                           {"required_bytes", d.required_bytes}, {"files_owned", d.files.size()},
                                                           {"cache_fingerprint", d.cache_fingerprint},
                                                           {"cache_generation", d.cache_generation}, {"proofs", proofs},
                                                           {"verify_archive", d.verify_archive}}));
    crash_point("evict.defined");
    return d.id;
}

nlohmann::json EvictPrepared::to_json() const {
    nlohmann::json j = {{"resource", resource.identity.to_json()}, {"name", resource.name}, {"cache", cache}};
    if (existing_job) {
        j["existing_job"] = *existing_job;
        return j;
    }
    if (nothing_to_do) {
        j["nothing_to_do"] = true;
        return j;
    }
    j["save_path"] = cache_view.save_path;
    j["coverage"] = coverage.to_json();
    j["files_owned"] = owned.size();
    return j;
}

}  // namespace archctl::jobs::evict
