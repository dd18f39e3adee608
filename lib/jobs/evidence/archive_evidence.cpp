#include "lib/jobs/evidence/archive_evidence.hpp"

#include <set>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/clients/qbittorrent/share_limits.hpp"
#include "lib/jobs/evidence/referenced.hpp"

#include "lib/node/client/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs::evidence {

namespace qb = clients::qbittorrent;

plan::PlacementView placement_view(const std::string& node, const qb::TorrentInfo& info, const std::vector<qb::TorrentFile>& files) {
    plan::PlacementView v;
    v.node = node;
    v.qb_id = info.id;
    v.save_path = info.save_path;
    v.run_state = qb::to_string(info.run_state);
    v.selected = torrent::Selection::of(qb::selected_files(files));
    v.complete = torrent::Selection::of(qb::complete_files(files));
    v.names.resize(files.size());
    for (const auto& f : files)
        if (f.index < v.names.size()) v.names[f.index] = f.name;
    return v;
}

Result<CommittedFiles> committed_files(const state::StateDir& dir, const std::vector<std::string>& aliases, const std::string& node) {
    state::PlacementStore store(dir);
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_ASSIGN(auto rec, store.get(alias, node));
        if (!rec) continue;
        CommittedFiles c;
        c.generation = rec->generation;
        auto stamps = plan::stamps_from_json(rec->detail.value("stamps", nlohmann::json()));
        // An unreadable stamp list proves nothing; the files then count only by a piece check.
        if (stamps.ok()) c.stamps = std::move(stamps.value());
        return c;
    }
    return CommittedFiles{};
}

Result<std::vector<plan::DiskFile>> stat_files(NodeHandle& node, const std::string& base, const std::vector<plan::CoverageFile>& files,
                                               std::size_t file_count) {
    std::vector<plan::DiskFile> out(file_count);
    if (files.empty()) return out;
    // The columns form with the stamp's fields only: at 100,000 files the entries form (an object
    // a file, its path echoed) held ~200 MB on its way through the transport.
    node::TreeColumnsRequest request{.tree = {.base = strip_trailing_slashes(base), .paths = {}},
                                     .columns = {"size", "dev", "ino", "mtime_ns", "ctime_ns", "btime_ns"}};
    request.tree.paths.reserve(files.size());
    for (const auto& f : files) request.tree.paths.push_back(f.path);
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, node.ops());
    ARCHCTL_TRY_ASSIGN(auto tree, node::Ops(*transport).tree_columns(request));
    request = {};
    const auto& entries = tree.entries;
    for (std::size_t k = 0; k < files.size(); ++k) {
        if (files[k].index >= out.size()) continue;
        plan::DiskFile& d = out[files[k].index];
        if (entries[k].type == node::EntryType::absent) d.on_disk = plan::OnDisk::absent;
        if (entries[k].type != node::EntryType::file) {
            if (entries[k].type != node::EntryType::absent) {
                d.on_disk = plan::OnDisk::other;
                d.other = std::string(node::to_string(entries[k].type));
            }
            continue;
        }
        d.on_disk = plan::OnDisk::file;
        node::EntryStat st = entries[k].stat.value_or(node::EntryStat{});
        d.stamp = {st.dev, st.ino, st.size, st.mtime_ns, st.btime_ns, st.ctime_ns};
    }
    return out;
}

Result<std::vector<std::string>> torrents_sharing(NodeHandle& node, const std::string& self, const std::vector<std::string>& paths,
                                                 const std::vector<qb::TorrentInfo>& torrents) {
    std::vector<std::string> out;
    std::set<std::string> mine(paths.begin(), paths.end());
    if (mine.empty()) return out;
    // Does `root` hold one of the paths (is one of them `root` or below it)? The first path not
    // before `root` in order answers it.
    auto holds = [&mine](const std::string& root) {
        if (root.empty()) return false;
        auto it = mine.lower_bound(root);
        return it != mine.end() && (*it == root || (it->size() > root.size() && it->compare(0, root.size(), root) == 0 && (*it)[root.size()] == '/'));
    };
    for (const auto& t : torrents) {
        if (t.id == self) continue;
        std::string base = strip_trailing_slashes(t.save_path);
        // While its content is in qBittorrent's incomplete-downloads folder, its files are there.
        std::string download = strip_trailing_slashes(t.download_path);
        if (!download.empty() && path_at_or_below(strip_trailing_slashes(t.content_path), download)) base = download;
        std::string root = t.content_path.empty() ? base : strip_trailing_slashes(t.content_path);
        if (!holds(root)) continue;
        ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(t.id));
        for (const auto& f : files)
            if (mine.count(base + "/" + f.name)) {
                out.push_back(fmt::format("'{}' ({})", t.name, t.id.substr(0, 12)));
                break;
            }
    }
    return out;
}

Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const qb::TorrentInfo& info, const std::vector<qb::TorrentFile>& qb_files,
                                               const std::vector<plan::CoverageFile>& files, const CommittedFiles& committed,
                                               const EvidenceOptions& options) {
    plan::ArchiveEvidence a;
    a.view = placement_view(node.name(), info, qb_files);
    a.state = info.state;
    a.generation = committed.generation;
    a.committed = committed.stamps;
    a.verify = options.verify;
    a.count_shared = options.count_shared;
    // The node's preferences (the global limits and the action) are read only for a torrent some
    // limit may apply to: a torrent archctl added has its own limits of none.
    qb::GlobalShareLimits global;
    if (qb::may_be_limited(info)) {
        ARCHCTL_TRY_ASSIGN(global, node.share_limits());
    }
    qb::EffectiveShareLimits limits = qb::effective_share_limits(info, global);
    if (limits.removes())
        a.will_not_stay = fmt::format("{} on '{}': the copy will not stay (give the torrent its own share limits of none in "
                                      "qBittorrent)",
                                      limits.text(), node.name());
    std::vector<std::string> paths(files.size());
    for (const auto& f : files)
        if (f.index < paths.size()) paths[f.index] = f.path;
    torrent::PlacementLayout layout = torrent::infer_layout(paths, a.view.names);
    a.expected = layout.expected;
    std::vector<plan::CoverageFile> held;
    for (std::uint32_t i : a.view.complete.indices())
        if (i < files.size() && files[i].size > 0 && !files[i].path.empty())
            held.push_back({files[i].index, layout.disk_path(files[i].index), files[i].size});
    ARCHCTL_TRY_ASSIGN(a.disk, stat_files(node, a.view.save_path, held, files.size()));
    if (!held.empty()) {
        std::vector<std::string> held_paths;
        const std::string base = strip_trailing_slashes(a.view.save_path);
        for (const auto& f : held) held_paths.push_back(base + "/" + f.path);
        std::vector<qb::TorrentInfo> fresh;
        if (!options.torrents) {
            ARCHCTL_TRY_ASSIGN(fresh, node.qb().all_torrents());
        }
        ARCHCTL_TRY_ASSIGN(a.shared_with, torrents_sharing(node, info.id, held_paths, options.torrents ? *options.torrents : fresh));
    }
    return a;
}

Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const qb::TorrentInfo& info, const std::vector<plan::CoverageFile>& files,
                                               const CommittedFiles& committed, const EvidenceOptions& options) {
    ARCHCTL_TRY_ASSIGN(auto qb_files, node.qb().files(info.id));
    return archive_evidence(node, info, qb_files, files, committed, options);
}

std::map<std::uint32_t, plan::FileStamp> stamps_of(const std::vector<plan::DiskFile>& stats) {
    std::map<std::uint32_t, plan::FileStamp> out;
    for (std::size_t i = 0; i < stats.size(); ++i)
        if (stats[i].on_disk == plan::OnDisk::file) out[static_cast<std::uint32_t>(i)] = stats[i].stamp;
    return out;
}

}  // namespace archctl::jobs::evidence
