#include "lib/jobs/evidence/resolve.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/text.hpp"
#include "lib/jobs/core/outage.hpp"
#include "lib/jobs/evidence/archive_evidence.hpp"

namespace archctl::jobs::evidence {
namespace {

namespace qb = clients::qbittorrent;

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The placement `info` on `node` is, with its file list, and where qBittorrent keeps its content
// (a transfer reads the content and download paths to find the files it moves).
plan::PlacementView view_of(const std::string& node, const qb::TorrentInfo& info, const std::vector<qb::TorrentFile>& files) {
    plan::PlacementView v = placement_view(node, info, files);
    v.content_path = info.content_path;
    v.download_path = info.download_path;
    return v;
}

}  // namespace

std::vector<std::string> Resource::aliases() const {
    std::vector<std::string> out;
    if (identity.has_v1()) out.push_back(identity.v1_hex());
    if (identity.has_v2()) out.push_back(identity.v2_hex());
    return out;
}

namespace {

std::string_view valid_res_text() {
    return "a v1 hash has 40 hex digits, a v2 hash 64, and a prefix of at least 8 of either also works";
}

}  // namespace

Result<std::string> res_prefix(const std::string& res_in) {
    std::string res = lower(res_in);
    if (!is_hex(res))
        return Error(ErrorCode::BAD_VALUE, fmt::format("invalid resource '{}': not hexadecimal; {}", clipped(res_in), valid_res_text()),
                     "give a torrent's info hash (or its first 8 or more hex digits), as 'archctl status' lists them");
    if (res.size() < 8 || res.size() > 64)
        return Error(ErrorCode::BAD_VALUE,
                     fmt::format("invalid resource '{}' ({} hex digits): {}", clipped(res_in), res.size(), valid_res_text()),
                     "give a torrent's info hash (or its first 8 or more hex digits), as 'archctl status' lists them");
    return res;
}

namespace {

Error no_torrent_matches(const std::string& res_in, const std::string& where) {
    const std::string hint = "RES is a v1 or v2 info hash or a prefix of one; see 'archctl status'";
    const std::size_t n = res_in.size();
    // 40 and 64 digits are a whole hash; any other length is a prefix, or a hash pasted wrong:
    // say what a valid id looks like.
    if (n == 40 || n == 64 || !is_hex(res_in))
        return Error(ErrorCode::NOT_FOUND, fmt::format("no node has a torrent matching '{}'{}", clipped(res_in), where), hint);
    return Error(ErrorCode::NOT_FOUND,
                 fmt::format("no torrent matches '{}' ({} hex digits){}: {}", clipped(res_in), n, where, valid_res_text()), hint);
}

}  // namespace

bool matches_res(const qb::TorrentInfo& t, const std::string& prefix) {
    return lower(t.infohash_v1).rfind(prefix, 0) == 0 || lower(t.infohash_v2).rfind(prefix, 0) == 0 ||
           lower(t.id).rfind(prefix, 0) == 0;
}

Result<Resource> resource_of(const std::string& res_in, const std::vector<ResMatch>& matches, std::vector<std::string> unreachable,
                             std::optional<Error> outage) {
    std::vector<Resource> found;
    for (const ResMatch& m : matches) {
        const qb::TorrentInfo& t = *m.torrent;
        auto id = torrent::Identity::from_qb(t.infohash_v1, t.infohash_v2);
        if (!id.ok()) continue;
        bool joined = false;
        for (auto& r : found) {
            if (!r.identity.same_resource(id.value())) continue;
            auto merged = r.identity.join(id.value());
            if (!merged.ok()) return merged.take_error();
            r.identity = merged.value();
            r.placements[m.node] = t;
            joined = true;
            break;
        }
        if (!joined) {
            Resource r;
            r.identity = id.value();
            r.name = t.name;
            r.placements[m.node] = t;
            found.push_back(std::move(r));
        }
    }
    if (found.empty() && outage)
        return Error(outage->code,
                     fmt::format("cannot tell which node has '{}': no node that answered has it, and {}", clipped(res_in),
                                 fmt::join(unreachable, "; ")),
                     "rerun the same command once the node answers again");
    if (found.empty()) {
        std::string where = unreachable.empty() ? "" : fmt::format(" (unreachable: {})", fmt::join(unreachable, "; "));
        return no_torrent_matches(res_in, where);
    }
    if (found.size() > 1) {
        std::string list;
        for (const auto& r : found) list += fmt::format("\n  {}  {}", r.short_id(), r.name);
        return Error(ErrorCode::AMBIGUOUS, fmt::format("'{}' matches {} resources:{}", clipped(res_in), found.size(), list),
                     "give more hex characters");
    }
    found[0].unreachable = std::move(unreachable);
    return found[0];
}

Result<Resource> resolve(Nodes& nodes, const std::string& res_in, Lists lists) {
    ARCHCTL_TRY_ASSIGN(std::string res, res_prefix(res_in));
    std::vector<Result<NodeHandle::TorrentList>> fresh;  // keeps the fresh lists the matches point into
    fresh.reserve(nodes.all().size());
    std::vector<ResMatch> matches;
    std::vector<std::string> unreachable;
    std::optional<Error> outage;
    for (NodeHandle* node : nodes.all()) {
        const Result<NodeHandle::TorrentList>* list = nullptr;
        if (lists == Lists::session) {
            list = &node->torrent_list();
        } else {
            fresh.push_back(node->qb().all_torrents());
            list = &fresh.back();
        }
        if (!list->ok()) {
            unreachable.push_back(fmt::format("{}: {}", node->name(), list->error().message));
            if (!outage && is_outage(list->error())) outage = list->error();
            continue;
        }
        for (const auto& t : list->value())
            if (matches_res(t, res)) matches.push_back({node->name(), &t});
    }
    return resource_of(res_in, matches, std::move(unreachable), std::move(outage));
}

Result<std::optional<plan::PlacementView>> read_placement(NodeHandle& node, const Resource& resource) {
    std::string id = resource.identity.qb_id();
    ARCHCTL_TRY_ASSIGN(auto infos, node.qb().torrents({id}));
    if (infos.empty()) return std::optional<plan::PlacementView>();
    ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(id));
    return std::optional<plan::PlacementView>(view_of(node.name(), infos[0], files));
}

// --- Snapshot ---

Snapshot::NodeList& Snapshot::list_of(NodeHandle& node) {
    auto found = m_lists.find(node.name());
    if (found != m_lists.end()) return found->second;
    NodeList& n = m_lists.emplace(node.name(), NodeList{node.qb().all_torrents(), {}}).first->second;
    if (!n.list.ok()) return n;
    const NodeHandle::TorrentList& list = n.list.value();
    for (std::size_t i = 0; i < list.size(); ++i)
        for (const std::string* hash : {&list[i].id, &list[i].infohash_v1, &list[i].infohash_v2}) {
            if (hash->empty()) continue;
            std::vector<std::size_t>& at = n.by_hash[lower(*hash)];
            if (at.empty() || at.back() != i) at.push_back(i);
        }
    return n;
}

const Result<NodeHandle::TorrentList>& Snapshot::torrents(NodeHandle& node) { return list_of(node).list; }

Result<Resource> Snapshot::resolve(const std::string& res_in) {
    ARCHCTL_TRY_ASSIGN(std::string res, res_prefix(res_in));
    std::vector<ResMatch> matches;
    std::vector<std::string> unreachable;
    std::optional<Error> outage;
    for (NodeHandle* node : m_nodes.all()) {
        const NodeList& n = list_of(*node);
        if (!n.list.ok()) {
            unreachable.push_back(fmt::format("{}: {}", node->name(), n.list.error().message));
            if (!outage && is_outage(n.list.error())) outage = n.list.error();
            continue;
        }
        // Every hash that starts with the prefix, each torrent once, in the list's order.
        std::vector<std::size_t> at;
        for (auto it = n.by_hash.lower_bound(res); it != n.by_hash.end() && it->first.rfind(res, 0) == 0; ++it)
            at.insert(at.end(), it->second.begin(), it->second.end());
        std::sort(at.begin(), at.end());
        at.erase(std::unique(at.begin(), at.end()), at.end());
        for (std::size_t i : at) matches.push_back({node->name(), &n.list.value()[i]});
    }
    return resource_of(res_in, matches, std::move(unreachable), std::move(outage));
}

Result<std::optional<plan::PlacementView>> Snapshot::placement(NodeHandle& node, const Resource& resource) {
    const std::string id = resource.identity.qb_id();
    const NodeList& n = list_of(node);
    if (!n.list.ok()) return n.list.error();
    // qBittorrent's torrents/info?hashes= names a torrent by its id.
    const clients::qbittorrent::TorrentInfo* info = nullptr;
    if (auto at = n.by_hash.find(lower(id)); at != n.by_hash.end())
        for (std::size_t i : at->second)
            if (lower(n.list.value()[i].id) == lower(id)) info = &n.list.value()[i];
    if (!info) return std::optional<plan::PlacementView>();
    ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(info->id));
    return std::optional<plan::PlacementView>(view_of(node.name(), *info, files));
}

Result<session::Space> Snapshot::space(NodeHandle& node, const std::string& path) {
    auto key = std::make_pair(node.name(), path);
    if (auto found = m_space.find(key); found != m_space.end()) return found->second;
    ARCHCTL_TRY_ASSIGN(session::Space space, node.space(path));
    m_space.emplace(std::move(key), space);
    return space;
}

namespace {

// `path` is `dir` or below it, component-wise.
bool at_or_below(const std::string& path_in, const std::string& dir_in) {
    std::string path = strip_trailing_slashes(path_in), dir = strip_trailing_slashes(dir_in);
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

}  // namespace

std::string data_path(const plan::PlacementView& v) {
    const bool in_download_path = !v.download_path.empty() && !v.content_path.empty() && v.content_path.front() == '/' &&
                                  at_or_below(v.content_path, v.download_path) && !at_or_below(v.content_path, v.save_path);
    return strip_trailing_slashes(in_download_path ? v.download_path : v.save_path);
}

Status check_data_path_served(const plan::PlacementView& view, const config::NodeConfig& node, const std::string& name) {
    std::string data = data_path(view);
    if (data == strip_trailing_slashes(view.save_path) || at_or_below(data, node.qb_root)) return {};
    return Error(ErrorCode::BAD_PATH,
                 fmt::format("the files of '{}' on '{}' are in qBittorrent's incomplete-downloads folder '{}', outside the node's "
                             "qb_root '{}'",
                             name, view.node, data, node.qb_root),
                 fmt::format("set nodes.{}.qb_root in the config to a directory that holds both '{}' and the save path '{}'",
                             view.node, data, strip_trailing_slashes(view.save_path)));
}

std::string fingerprint(const plan::PlacementView& v) {
    std::string facts = fmt::format("{}\n{}\n{}\n{}\n{}", v.qb_id, v.save_path, v.selected.to_string(), v.complete.to_string(),
                                    v.names.size());
    // Files in the incomplete-downloads folder: where they are is part of what a job relies on
    // (added only then, so the fingerprint of every other placement is what it always was).
    if (std::string data = data_path(v); data != strip_trailing_slashes(v.save_path)) facts += "\ndata " + data;
    unsigned char out[32];
    unsigned len = 0;
    EVP_Digest(facts.data(), facts.size(), out, &len, EVP_sha256(), nullptr);
    return to_hex(std::string_view(reinterpret_cast<const char*>(out), 16));
}

}  // namespace archctl::jobs::evidence
