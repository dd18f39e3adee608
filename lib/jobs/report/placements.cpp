#include "lib/jobs/report/placements.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "lib/base/atomic_file.hpp"
#include "lib/base/fs.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"

namespace archctl::jobs::report {
namespace {

namespace qb = clients::qbittorrent;

std::string lower_hex(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// What a placement is, from qBittorrent's torrent entry alone.
void fill_entry(const qb::TorrentInfo& info, PlacementSummary& p) {
    p.present = true;
    p.info = info;
    p.qb_id = info.id;
    p.save_path = info.save_path;
    p.run_state = qb::to_string(info.run_state);
}

// Its files, selection and completion from a file list: qBittorrent's own for this placement,
// or the resource's file table when the entry proves every file selected and complete.
void fill_files(PlacementSummary& p, std::vector<qb::TorrentFile> files) {
    p.file_list = std::move(files);
    p.files = p.file_list.size();
    p.names.assign(p.files, std::string());
    p.selected = p.complete = 0;
    p.selected_bytes = p.complete_bytes = 0;
    for (const auto& f : p.file_list) {
        if (f.index < p.names.size()) p.names[f.index] = f.name;
        if (f.priority <= 0) continue;
        ++p.selected;
        p.selected_bytes += f.size;
        if (f.progress < 1.0) continue;
        ++p.complete;
        p.complete_bytes += f.size;
    }
    p.selected_set = torrent::Selection::of(qb::selected_files(p.file_list));
    p.complete_set = torrent::Selection::of(qb::complete_files(p.file_list));
}

// The resource's file table (docs/status.md "What status reads"): every file's path and size by
// qB index. It follows from the metainfo alone, so one placement's list serves every placement
// of the resource and is kept in the state directory's cache for the next status.
using FileTable = std::vector<qb::TorrentFile>;

std::string table_path(const state::StateDir& dir, const std::string& qb_id) {
    return dir.file_tables() + "/" + lower_hex(qb_id) + ".json";
}

std::optional<FileTable> load_table(const state::StateDir& dir, const std::string& qb_id) {
    auto text = read_file(table_path(dir, qb_id));
    if (!text.ok()) return std::nullopt;
    auto doc = nlohmann::json::parse(text.value(), nullptr, false);
    if (!doc.is_object() || !doc["files"].is_array()) return std::nullopt;
    FileTable table;
    for (const auto& row : doc["files"]) {
        if (!row.is_array() || row.size() != 2 || !row[0].is_string() || !row[1].is_number_integer()) return std::nullopt;
        qb::TorrentFile f;
        f.index = static_cast<std::uint32_t>(table.size());
        f.name = row[0].get<std::string>();
        f.size = row[1].get<std::int64_t>();
        table.push_back(std::move(f));
    }
    return table;
}

// The table of `files` (qBittorrent's list of one placement), or nullopt when its indices are
// not 0..n-1 (then no table is kept and every placement reads its own list).
std::optional<FileTable> table_of(const std::vector<qb::TorrentFile>& files) {
    FileTable table(files.size());
    std::vector<bool> seen(files.size(), false);
    for (const auto& f : files) {
        if (f.index >= files.size() || seen[f.index]) return std::nullopt;
        seen[f.index] = true;
        table[f.index] = {f.index, f.name, f.size, 0.0, 0};
    }
    return table;
}

bool same_table(const FileTable& a, const FileTable& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const qb::TorrentFile& x, const qb::TorrentFile& y) { return x.name == y.name && x.size == y.size; });
}

// A cache write that fails costs the next status one file list, nothing more.
void store_table(const state::StateDir& dir, const std::string& qb_id, const FileTable& table) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& f : table) rows.push_back({f.name, f.size});
    const std::string path = table_path(dir, qb_id);
    if (!make_dirs(parent_dir(path), 0700).ok()) return;
    auto file = AtomicFile::create(path, 0600);
    if (!file.ok() || !file->write(nlohmann::json({{"files", rows}}).dump()).ok()) return;
    (void)file->commit();
}

// Whether qBittorrent's entry alone proves every file of `table` selected and complete: nothing
// wanted is left (amount_left 0, progress 1) and the wanted size is the size of all files, in a
// torrent where leaving out any one file lowers the wanted size — one file, or a v2/hybrid whose
// files each start on a piece of their own — and no file is empty (an empty file changes no size).
// A v1 torrent of several files is never proven so: a skipped file that shares its pieces with
// wanted ones leaves the wanted size whole (docs/status.md "What status reads").
bool entry_proves_whole(const qb::TorrentInfo& info, const FileTable& table) {
    if (table.empty() || info.amount_left != 0 || info.progress < 1.0) return false;
    if (table.size() > 1 && info.infohash_v2.empty()) return false;
    std::int64_t total = 0;
    for (const auto& f : table) {
        if (f.size <= 0) return false;
        total += f.size;
    }
    return info.size == total;
}

// The table as a placement's file list: every file selected and complete.
std::vector<qb::TorrentFile> whole_list(const FileTable& table) {
    std::vector<qb::TorrentFile> out = table;
    for (auto& f : out) {
        f.progress = 1.0;
        f.priority = static_cast<int>(qb::FilePriority::normal);
    }
    return out;
}

// Whether the entry may prove the placement whole once the table is known.
bool may_be_whole(const qb::TorrentInfo& info) { return info.amount_left == 0 && info.progress >= 1.0 && info.size > 0; }

// A torrent list by lower-case v1 and v2 hash, for finding many resources in it.
struct TorrentIndex {
    std::unordered_map<std::string, const qb::TorrentInfo*> by_hash;
};

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

// qBittorrent's file list of one placement; an error is the placement's.
std::optional<std::vector<qb::TorrentFile>> read_list(Nodes& nodes, PlacementSummary& p) {
    auto node = nodes.get(p.node);
    if (!node.ok()) {
        p.error = node.error().message;
        return std::nullopt;
    }
    auto files = node.value()->qb().files(p.info.id);
    if (!files.ok()) {
        p.error = files.error().message;
        return std::nullopt;
    }
    return std::move(files).value();
}

// The files of each present placement of `r`: a placement the entry proves whole takes the
// resource's file table (the kept one, else the list of a placement read anyway, else one list
// read for it); every other placement reads its own list, one request each (qBittorrent has no
// file list of several torrents before 5.2).
void read_file_lists(Nodes& nodes, const state::StateDir& dir, ResourceStatus& r) {
    const std::string key = r.identity.qb_id();
    std::optional<FileTable> table = load_table(dir, key);
    bool store = !table;
    // A list read: the table when none is known, and in place of a kept one it contradicts.
    auto learn = [&](const std::vector<qb::TorrentFile>& files) {
        auto read = table_of(files);
        if (!read || (table && same_table(*read, *table))) return;
        store = store || table.has_value();
        table = std::move(read);
    };
    std::vector<PlacementSummary*> later;
    for (auto& p : r.placements) {
        if (!p.present || !p.error.empty()) continue;
        if (may_be_whole(p.info) && (!table || entry_proves_whole(p.info, *table))) {
            later.push_back(&p);
            continue;
        }
        auto files = read_list(nodes, p);
        if (!files) continue;
        learn(*files);
        fill_files(p, std::move(*files));
    }
    for (PlacementSummary* p : later) {
        if (table && entry_proves_whole(p->info, *table)) {
            fill_files(*p, whole_list(*table));
            continue;
        }
        auto files = read_list(nodes, *p);
        if (!files) continue;
        learn(*files);
        fill_files(*p, std::move(*files));
    }
    if (table && store) store_table(dir, key, *table);
}

// Per cache placement: which of its selected files an archive placement holds now, by the same
// live test evict applies (plan::judge_file on jobs::evidence::archive_evidence). The cache's own file
// list stands in for the metainfo (status exports no torrent).
CoverageSummary coverage_of_cache(Nodes& nodes, const state::StateDir& dir, const ResourceStatus& r, const PlacementSummary& cache,
                                  bool count_shared) {
    plan::CoverageInput in;
    in.cache = evidence::placement_view(cache.node, cache.info, cache.file_list);
    in.files.resize(cache.file_list.size());
    for (const auto& f : cache.file_list)
        if (f.index < in.files.size()) in.files[f.index] = {f.index, f.name, static_cast<std::uint64_t>(f.size)};
    for (const auto& archive : r.placements) {
        if (archive.role != "archive" || !archive.present || !archive.error.empty()) continue;
        auto evidence = [&]() -> Result<plan::ArchiveEvidence> {
            ARCHCTL_TRY_ASSIGN(NodeHandle * node, nodes.get(archive.node));
            ARCHCTL_TRY_ASSIGN(auto committed, evidence::committed_files(dir, aliases_of(r.identity), archive.node));
            const auto& list = node->torrent_list();
            evidence::EvidenceOptions options{.verify = plan::VerifyArchive::no, .count_shared = count_shared,
                                    .torrents = list.ok() ? &list.value() : nullptr};
            return evidence::archive_evidence(*node, archive.info, archive.file_list, in.files, committed, options);
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

nlohmann::json PlacementSummary::to_json() const {
    nlohmann::json j = {{"node", node}, {"role", role}, {"present", present}};
    if (!error.empty()) j["error"] = error;
    // A recorded placement whose torrent is gone keeps its record: "recorded but gone".
    if (record) j["generation"] = {{"generation", record->generation}, {"job", record->job_id}, {"committed_at", record->committed_at}};
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
                fill_entry(*t, p);
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
    for (auto& r : out) read_file_lists(nodes, dir, r);
    for (auto& r : out)
        for (const auto& p : r.placements)
            if (p.role == "cache" && p.present && p.error.empty()) r.coverage.push_back(coverage_of_cache(nodes, dir, r, p, count_shared));
    return out;
}

}  // namespace archctl::jobs::report
