#include "lib/jobs/report/summary.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "lib/base/lock_file.hpp"
#include "lib/base/units.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::jobs {
namespace {

namespace qb = clients::qbittorrent;

void fill_placement(NodeHandle& node, const qb::TorrentInfo& info, PlacementSummary& p) {
    p.present = true;
    p.info = info;
    p.qb_id = info.id;
    p.save_path = info.save_path;
    p.run_state = qb::to_string(info.run_state);
    auto files = node.qb().files(info.id);
    if (!files.ok()) {
        p.error = files.error().message;
        return;
    }
    p.file_list = files.value();
    p.files = files->size();
    p.names.resize(files->size());
    for (const auto& f : files.value()) {
        if (f.index < p.names.size()) p.names[f.index] = f.name;
        if (f.priority <= 0) continue;
        ++p.selected;
        p.selected_bytes += f.size;
        if (f.progress < 1.0) continue;
        ++p.complete;
        p.complete_bytes += f.size;
    }
    p.selected_set = torrent::Selection::of(qb::selected_files(files.value()));
    p.complete_set = torrent::Selection::of(qb::complete_files(files.value()));
}

// A torrent list by lower-case v1 and v2 hash, for finding many resources in it.
struct TorrentIndex {
    std::unordered_map<std::string, const qb::TorrentInfo*> by_hash;
};

std::string lower_hex(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

TorrentIndex index_torrents(const std::vector<qb::TorrentInfo>& list) {
    TorrentIndex index;
    index.by_hash.reserve(2 * list.size());
    for (const auto& t : list)
        for (const std::string* hash : {&t.infohash_v1, &t.infohash_v2})
            if (!hash->empty()) index.by_hash.try_emplace(lower_hex(*hash), &t);
    return index;
}

// The first torrent of the list that is the same resource as `id` (as Identity::same_resource
// decides), or null.
const qb::TorrentInfo* find_torrent(const TorrentIndex& index, const torrent::Identity& id) {
    for (const auto& alias : {id.has_v1() ? id.v1_hex() : "", id.has_v2() ? id.v2_hex() : ""}) {
        if (alias.empty()) continue;
        auto it = index.by_hash.find(lower_hex(alias));
        if (it == index.by_hash.end()) continue;
        auto tid = torrent::Identity::from_qb(it->second->infohash_v1, it->second->infohash_v2);
        if (tid.ok() && tid->same_resource(id)) return it->second;
    }
    return nullptr;
}

std::vector<std::string> aliases_of(const torrent::Identity& id) {
    std::vector<std::string> out;
    if (id.has_v1()) out.push_back(id.v1_hex());
    if (id.has_v2()) out.push_back(id.v2_hex());
    return out;
}

// Per cache placement: which of its selected files an archive placement holds now, by the same
// live test evict applies (plan::judge_file on jobs::archive_evidence). The cache's own file
// list stands in for the metainfo (status exports no torrent).
CoverageSummary coverage_of_cache(Nodes& nodes, const state::StateDir& dir, const ResourceStatus& r, const PlacementSummary& cache,
                                  bool count_shared) {
    plan::CoverageInput in;
    in.cache = placement_view(cache.node, cache.info, cache.file_list);
    in.files.resize(cache.file_list.size());
    for (const auto& f : cache.file_list)
        if (f.index < in.files.size()) in.files[f.index] = {f.index, f.name, static_cast<std::uint64_t>(f.size)};
    for (const auto& archive : r.placements) {
        if (archive.role != "archive" || !archive.present || !archive.error.empty()) continue;
        auto evidence = [&]() -> Result<plan::ArchiveEvidence> {
            ARCHCTL_TRY_ASSIGN(NodeHandle * node, nodes.get(archive.node));
            ARCHCTL_TRY_ASSIGN(auto committed, committed_files(dir, aliases_of(r.identity), archive.node));
            const auto& list = node->torrent_list();
            EvidenceOptions options{.verify = plan::VerifyArchive::no, .count_shared = count_shared,
                                    .torrents = list.ok() ? &list.value() : nullptr};
            return archive_evidence(*node, archive.info, archive.file_list, in.files, committed, options);
        }();
        if (evidence.ok()) in.archives.push_back(std::move(evidence).value());
        else in.unreachable.push_back(fmt::format("{}: {}", archive.node, evidence.error().message));
    }
    CoverageSummary c;
    c.cache = cache.node;
    c.files = cache.selected;
    auto coverage = plan::compute_coverage(in);
    if (!coverage.ok()) {
        c.notes.push_back(coverage.error().message);
        return c;
    }
    for (const auto& f : coverage->files) {
        if (f.nodes.empty()) {
            c.missing.push_back(f.file.path);
            c.refused.push_back({f.file.path, f.refused.empty() ? "no archive placement has it" : fmt::format("{}", fmt::join(f.refused, "; "))});
            continue;
        }
        ++c.covered;
        for (const auto& n : f.nodes) ++c.by_archive[n];
    }
    c.notes = coverage->notes;
    return c;
}

}  // namespace

bool JobSummary::finished() const {
    return ledger.state == JobState::done || ledger.state == JobState::cancelled || ledger.state == JobState::failed;
}

namespace {

// A transfer's or an eviction's counts from its definition and stored ledger: bytes and files
// done of the total (an eviction counts what it freed of what it proved).
struct Counts {
    std::uint64_t bytes_done = 0, bytes_total = 0, files_done = 0, files_total = 0;
};

Counts counts_of(const nlohmann::json& def, const nlohmann::json& ledger, JobState state) {
    Counts c;
    const nlohmann::json& l = ledger.is_object() ? ledger : nlohmann::json::object();
    c.files_total = def.value("files", nlohmann::json::array()).size();
    if (def.value("op", "") == "evict") {
        c.bytes_total = def.value("required_bytes", std::uint64_t{0});
        c.bytes_done = std::min(c.bytes_total, l.value("bytes_freed", std::uint64_t{0}));
        c.files_done = std::min(c.files_total, l.value("files_removed", std::uint64_t{0}));
        return c;
    }
    c.bytes_total = def.value("delta_bytes", std::uint64_t{0});
    bool synced = l.value("synced", false) || state == JobState::done;
    c.bytes_done = synced ? c.bytes_total : std::min(c.bytes_total, l.value("bytes_present", std::uint64_t{0}));
    c.files_done = synced ? c.files_total : 0;
    return c;
}

// The last session's end for a finished job; null while it may still go on.
nlohmann::json ended_at(const nlohmann::json& ledger, bool finished) {
    if (!finished || !ledger.is_object()) return nullptr;
    auto sessions = ledger.value("sessions", nlohmann::json::array());
    for (auto it = sessions.rbegin(); it != sessions.rend(); ++it)
        if (it->is_object() && !it->value("ended", "").empty()) return it->value("ended", "");
    return nullptr;
}

}  // namespace

JobSummary::Identity JobSummary::identity() const {
    const nlohmann::json def = definition.is_object() ? definition : nlohmann::json::object();
    return {def.value("op", ""), def.value("qb_id", ""), def.value("name", ""),
            def.value("source", nlohmann::json::object()).value("node", ""),
            def.value("target", nlohmann::json::object()).value("node", "")};
}

nlohmann::json JobSummary::to_json() const {
    const nlohmann::json def = definition.is_object() ? definition : nlohmann::json::object();
    const Identity who = identity();
    Counts c = counts_of(def, stored_ledger, ledger.state);
    double percent = c.bytes_total ? 100.0 * static_cast<double>(c.bytes_done) / static_cast<double>(c.bytes_total)
                                   : (ledger.state == JobState::done ? 100.0 : 0.0);
    nlohmann::json failure = nullptr;
    if (ledger.failure.is_object() && !ledger.failure.empty())
        failure = {{"code", ledger.failure.value("code", "")}, {"message", ledger.failure.value("message", "")}};
    std::string created = def.value("created_at", "");
    bool ended = finished() && !damaged;
    return {{"id", id},
            {"op", who.op},
            {"resource", who.resource},
            {"name", who.name},
            {"source", who.source},
            {"target", who.target},
            {"state", damaged ? std::string("damaged") : to_string(ledger.state)},
            {"step", ledger.step},
            {"bytes_done", c.bytes_done},
            {"bytes_total", c.bytes_total},
            {"files_done", c.files_done},
            {"files_total", c.files_total},
            {"percent", std::round(percent * 10.0) / 10.0},
            {"started", created.empty() ? nlohmann::json(nullptr) : nlohmann::json(created)},
            {"ended", ended_at(stored_ledger, ended)},
            {"pid", running && pid > 0 ? nlohmann::json(pid) : nlohmann::json(nullptr)},
            {"failure", failure},
            {"running", running},
            {"status", status},
            {"needs_attention", needs_attention},
            {"kept", ledger.kept}};
}

void read_lock(const state::JobStore& store, JobSummary& row) {
    auto lock = LockFile::read(store.dir_of(row.id));
    row.running = lock.ok() && lock_holder_alive(lock.value());
    row.pid = row.running ? lock.value().pid : 0;
}

namespace {

// "used by other torrents" for `n` files kept for `code`.
std::string kept_reason_words(const std::string& code, std::size_t n) {
    bool one = n == 1;
    if (code == "referenced") return one ? "used by another torrent" : "used by other torrents";
    if (code == "preexisting") return "there before the job";
    if (code == "replaced") return "replaced since the job placed " + std::string(one ? "it" : "them");
    if (code == "size_changed") return "changed in size since the job placed " + std::string(one ? "it" : "them");
    if (code == "other_links") return one ? "with another hard link" : "with other hard links";
    if (code == "not_regular") return one ? "no longer a regular file" : "no longer regular files";
    return "kept for another reason";
}

std::string files_word(std::size_t n) { return n == 1 ? "file" : "files"; }

}  // namespace

std::string kept_text(const nlohmann::json& kept) {
    std::vector<std::string> parts;
    for (const char* step : {"unmerge", "cleanup"}) {
        std::vector<std::pair<std::string, std::size_t>> by_code;  // in order of first appearance
        std::size_t total = 0;
        for (const auto& k : kept) {
            if (!k.is_object() || k.value("step", "unmerge") != step) continue;
            std::string code = k.value("code", "");
            auto it = std::find_if(by_code.begin(), by_code.end(), [&](const auto& p) { return p.first == code; });
            if (it == by_code.end()) by_code.emplace_back(code, 1);
            else ++it->second;
            ++total;
        }
        if (total == 0) continue;
        std::string who = std::string(step) == "unmerge" ? "compensation" : "cleanup";
        if (by_code.size() == 1) {
            parts.push_back(fmt::format("{} kept {} {} {}", who, total, files_word(total), kept_reason_words(by_code[0].first, total)));
            continue;
        }
        std::vector<std::string> groups;
        for (const auto& [code, n] : by_code) groups.push_back(fmt::format("{} {}", n, kept_reason_words(code, n)));
        parts.push_back(fmt::format("{} kept {} {}: {}", who, total, files_word(total), fmt::join(groups, ", ")));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
}

std::string progress_text(const nlohmann::json& def, const Ledger& l) {
    std::uint64_t total = def.value("delta_bytes", std::uint64_t{0});
    std::size_t files = def.value("files", nlohmann::json::array()).size();
    std::string kept = kept_text(l.kept);
    std::string kept_note = kept.empty() ? "" : " (" + kept + ")";
    if (l.state == JobState::done) return "done" + kept_note;
    if (l.state == JobState::compensating) {
        std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
        std::string pending = l.failure.is_object() ? l.failure.value("compensation", "") : "";
        return fmt::format("COMPENSATING ({}): {}; undoing it is not finished{}; 'archctl resume {}' finishes it", to_string(l.compensation_ends),
                           msg, pending.empty() ? "" : ": " + pending, def.value("id", "")) +
               kept_note;
    }
    if (l.state != JobState::running) {
        std::string msg = l.failure.is_object() ? l.failure.value("message", "") : "";
        std::string state = l.state == JobState::cleanup_required ? "CLEANUP_REQUIRED" : to_string(l.state);
        return state + (msg.empty() ? "" : ": " + msg) + kept_note;
    }
    std::uint64_t done = l.synced ? total : std::min(total, l.bytes_present);
    double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : (l.synced ? 100.0 : 0.0);
    std::size_t files_done = l.synced ? files : 0;
    return fmt::format("{}: {:.0f}% ({}/{}, {}/{} files, step {})", def.value("op", "") == "archive" ? "archiving" : "unarchiving",
                       pct, format_size(done), format_size(total), files_done, files, l.step);
}

JobSummary summarize_damaged(const state::JobStore& store, const std::string& id) {
    JobSummary s;
    s.id = id;
    s.definition = nlohmann::json::object();
    s.damaged = true;
    s.needs_attention = true;
    auto l = store.ledger(id);
    if (l.ok()) s.ledger = Ledger::from_json(l.value());
    s.ledger.state = JobState::running;
    s.stored_ledger = l.ok() ? l.value() : nlohmann::json::object();
    auto def = store.definition(id);
    std::string why = def.ok() ? "its definition is unreadable" : def.error().message;
    auto events = store.events(id);
    if (events.ok())
        for (const auto& e : events.value().records)
            if (e.value("type", "") == "created" && e.contains("staging") && e["staging"].is_array()) s.staging = e["staging"];
    std::vector<std::string> where;
    for (const auto& st : s.staging) where.push_back(fmt::format("{} on '{}'", st.value("path", ""), st.value("node", "")));
    s.status = fmt::format("damaged: {}; nothing can drive it (its events are in 'archctl job show {}'); {}'archctl job rm {}' removes "
                           "{}",
                           why, id, where.empty() ? "" : fmt::format("its staging: {}; ", fmt::join(where, ", ")), id,
                           where.empty() ? "its records" : "its staging and its records");
    return s;
}

Status remove_damaged_staging(Nodes& nodes, const JobSummary& row) {
    Status first;
    for (const auto& st : row.staging) {
        std::string node = st.value("node", ""), path = st.value("path", "");
        if (node.empty() || path.empty()) continue;
        Status s = [&]() -> Status {
            ARCHCTL_TRY_ASSIGN(NodeHandle * handle, nodes.get(node));
            ARCHCTL_TRY_ASSIGN(node::Transport * transport, handle->ops());
            ARCHCTL_TRY_STATUS(node::Ops(*transport).cleanup({.job_dir = path, .referenced = {}, .save_path = std::nullopt, .source_base = std::nullopt, .files = {}, .aux = {}}));
            return {};
        }();
        if (!s.ok() && first.ok())
            first = Error(s.error().code, fmt::format("cannot remove the staging of damaged job {} at {} on '{}': {}", row.id, path, node,
                                                      s.error().message),
                          "the job's records stay so the path stays known; fix that and run 'archctl job rm' again");
    }
    return first;
}

JobSummary summarize_transfer(const state::JobStore& store, const std::string& id, const nlohmann::json& definition) {
    JobSummary s;
    s.id = id;
    s.definition = definition;
    auto l = store.ledger(id);
    if (l.ok()) s.ledger = Ledger::from_json(l.value());
    s.stored_ledger = s.ledger.to_json();
    s.nodes = fmt::format("{} → {}", definition.value("source", nlohmann::json::object()).value("node", ""),
                          definition.value("target", nlohmann::json::object()).value("node", ""));
    read_lock(store, s);
    s.status = progress_text(s.definition, s.ledger);
    s.needs_attention = s.ledger.state == JobState::cleanup_required || s.ledger.state == JobState::compensating ||
                        (s.ledger.state == JobState::failed && s.ledger.merged);
    return s;
}

}  // namespace archctl::jobs

namespace archctl::jobs {

nlohmann::json PlacementSummary::to_json() const {
    nlohmann::json j = {{"node", node}, {"role", role}, {"present", present}};
    if (!error.empty()) j["error"] = error;
    if (!present) return j;
    j.update({{"qb_id", qb_id},
              {"save_path", save_path},
              {"run_state", run_state},
              {"files", files},
              {"selected", selected_set.to_string()},
              {"complete", complete_set.to_string()},
              {"selected_files", selected},
              {"complete_files", complete},
              {"selected_bytes", selected_bytes},
              {"complete_bytes", complete_bytes}});
    if (record) j["generation"] = {{"generation", record->generation}, {"job", record->job_id}, {"committed_at", record->committed_at}};
    return j;
}

nlohmann::json CoverageSummary::to_json() const {
    nlohmann::json why = nlohmann::json::array();
    for (const auto& [path, reason] : refused) why.push_back({{"path", path}, {"why", reason}});
    return {{"cache", cache}, {"files", files}, {"covered", covered}, {"by_archive", by_archive}, {"missing", missing},
            {"missing_why", why}, {"notes", notes}};
}

nlohmann::json ResourceStatus::to_json() const {
    nlohmann::json ps = nlohmann::json::array(), cs = nlohmann::json::array();
    for (const auto& p : placements) ps.push_back(p.to_json());
    for (const auto& c : coverage) cs.push_back(c.to_json());
    return {{"resource", identity.qb_id()}, {"identity", identity.to_json()}, {"name", name}, {"placements", ps}, {"coverage", cs}};
}

std::vector<ResourceStatus> resource_status(Nodes& nodes, const state::StateDir& dir, const std::vector<ResourceStatus>& resources,
                                            bool count_shared) {
    std::vector<ResourceStatus> out = resources;
    state::PlacementStore records(dir);
    if (out.empty()) return out;
    for (NodeHandle* node : nodes.all()) {
        // The session's one torrent list (status's probe read it already), indexed by hash.
        const auto& list = node->torrent_list();
        const TorrentIndex index = list.ok() ? index_torrents(list.value()) : TorrentIndex{};
        for (auto& r : out) {
            PlacementSummary p;
            p.node = node->name();
            p.role = config::to_string(node->config().role);
            if (!list.ok()) {
                p.error = list.error().message;
            } else if (const qb::TorrentInfo* t = find_torrent(index, r.identity)) {
                fill_placement(*node, *t, p);
            }
            for (const auto& alias : {r.identity.has_v1() ? r.identity.v1_hex() : "", r.identity.has_v2() ? r.identity.v2_hex() : ""}) {
                auto record = alias.empty() ? Result<std::optional<state::PlacementRecord>>(std::nullopt) : records.get(alias, node->name());
                if (record.ok() && record.value()) {
                    p.record = record.value();
                    break;
                }
            }
            r.placements.push_back(std::move(p));
        }
    }
    for (auto& r : out)
        for (const auto& p : r.placements)
            if (p.role == "cache" && p.present && p.error.empty()) r.coverage.push_back(coverage_of_cache(nodes, dir, r, p, count_shared));
    return out;
}

}  // namespace archctl::jobs
