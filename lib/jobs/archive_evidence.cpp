#include "lib/jobs/archive_evidence.hpp"

#include <fmt/format.h>

#include "lib/base/fs.hpp"

#include "lib/node/ops.hpp"
#include "lib/state/placements.hpp"

namespace archctl::jobs {

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
    node::TreeRequest request{.base = strip_trailing_slashes(base), .paths = {}};
    for (const auto& f : files) request.paths.push_back(f.path);
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, node.ops());
    ARCHCTL_TRY_ASSIGN(auto tree, node::Ops(*transport).tree(request));
    const auto& entries = tree.entries;
    if (entries.size() != files.size())
        return Error(ErrorCode::BAD_RESPONSE, fmt::format("node '{}' answered {} entries for {} paths", node.name(), entries.size(), files.size()));
    for (std::size_t k = 0; k < files.size(); ++k) {
        if (files[k].index >= out.size()) continue;
        plan::DiskFile& d = out[files[k].index];
        d.type = entries[k].type;
        if (d.type != "file") continue;
        node::EntryStat st = entries[k].stat.value_or(node::EntryStat{});
        d.stamp = {st.dev, st.ino, st.size, st.mtime_ns, st.btime_ns};
    }
    return out;
}

Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const qb::TorrentInfo& info, const std::vector<qb::TorrentFile>& qb_files,
                                               const std::vector<plan::CoverageFile>& files, const CommittedFiles& committed,
                                               plan::VerifyArchive verify) {
    plan::ArchiveEvidence a;
    a.view = placement_view(node.name(), info, qb_files);
    a.state = info.state;
    a.generation = committed.generation;
    a.committed = committed.stamps;
    a.verify = verify;
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
    return a;
}

Result<plan::ArchiveEvidence> archive_evidence(NodeHandle& node, const qb::TorrentInfo& info, const std::vector<plan::CoverageFile>& files,
                                               const CommittedFiles& committed, plan::VerifyArchive verify) {
    ARCHCTL_TRY_ASSIGN(auto qb_files, node.qb().files(info.id));
    return archive_evidence(node, info, qb_files, files, committed, verify);
}

std::map<std::uint32_t, plan::FileStamp> stamps_of(const std::vector<plan::DiskFile>& stats) {
    std::map<std::uint32_t, plan::FileStamp> out;
    for (std::size_t i = 0; i < stats.size(); ++i)
        if (stats[i].type == "file") out[static_cast<std::uint32_t>(i)] = stats[i].stamp;
    return out;
}

}  // namespace archctl::jobs
