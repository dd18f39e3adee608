#include "lib/jobs/evidence/referenced.hpp"

#include <optional>

#include "lib/base/fs.hpp"

namespace archctl::jobs::evidence {
namespace {

// A directory as the prefix of "<dir>/<name>": without trailing '/', and "" for the root.
std::string without_trailing_slash(std::string path) {
    path = strip_trailing_slashes(std::move(path));
    return path == "/" ? "" : path;
}

// `only_below`: skip a torrent that can reference nothing at or below it.
Result<Referenced> snapshot(NodeHandle& node, const std::optional<std::string>& only_below, const std::string& excluding) {
    ARCHCTL_TRY_ASSIGN(auto all, node.qb().all_torrents());
    Referenced out;
    out.torrents = all.size();
    for (const auto& t : all) {
        if (!excluding.empty() && t.id == excluding) {
            out.excluded_present = true;
            continue;
        }
        std::string base = without_trailing_slash(t.save_path);
        // Its paths are base/<relative name>: at or below `dir` only when one of the two
        // directories contains the other.
        if (only_below && !path_at_or_below(base, *only_below) && !path_at_or_below(*only_below, base)) continue;
        ARCHCTL_TRY_ASSIGN(auto files, node.qb().files(t.id));
        out.qb_ids.push_back(t.id);
        for (const auto& f : files) out.paths.insert(base + "/" + f.name);
    }
    return out;
}

}  // namespace

bool path_at_or_below(const std::string& path, const std::string& dir) {
    if (dir.empty()) return true;
    return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 && (path.size() == dir.size() || path[dir.size()] == '/');
}

Result<Referenced> referenced_paths(NodeHandle& node, const std::string& excluding_qb_id) {
    return snapshot(node, std::nullopt, excluding_qb_id);
}

Result<Referenced> referenced_paths_below(NodeHandle& node, const std::string& dir, const std::string& excluding_qb_id) {
    return snapshot(node, without_trailing_slash(dir), excluding_qb_id);
}

}  // namespace archctl::jobs::evidence
