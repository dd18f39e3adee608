// NodeSession::space: the node's `space` operation, or the reading of an `info` answer on a node
// that does not have it.

#include "lib/session/space.hpp"

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/node/client/ops.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::session {
namespace {

// True when `root` is `path` or one of its parent directories (both without trailing slashes).
bool holds(const std::string& root, const std::string& path) {
    if (root.empty() || path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || root == "/" || path[root.size()] == '/';
}

std::optional<Space> measured(const node::DirectoryInfo& d) {
    if (!d.free_bytes) return std::nullopt;
    return Space{*d.free_bytes, d.total_bytes};
}

}  // namespace

std::optional<Space> space_in(const node::InfoResult& info, const std::string& dir) {
    const std::string wanted = strip_trailing_slashes(dir);
    for (const auto& probe : info.probes)
        if (strip_trailing_slashes(probe.root.path) == wanted) return measured(probe);
    const node::DirectoryInfo* best = nullptr;
    std::size_t best_length = 0;
    for (const auto& root : info.roots) {
        const std::string path = strip_trailing_slashes(root.root.path);
        if (holds(path, wanted) && (!best || path.size() > best_length)) {
            best = &root;
            best_length = path.size();
        }
    }
    if (!best) return std::nullopt;
    return measured(*best);
}

bool below_a_root(const std::vector<std::string>& roots, const std::string& path) {
    const std::string p = strip_trailing_slashes(path);
    for (const auto& root : roots) {
        const std::string r = strip_trailing_slashes(root);
        if (r != p && holds(r, p)) return true;
    }
    return false;
}

namespace {

// `cause` as an error about measuring `path` on node `node`.
Error cannot_measure(const std::string& node, const std::string& path, Error cause) {
    return Error(cause.code, fmt::format("node '{}' cannot measure the free space of '{}': {}", node, path, cause.message), cause.hint);
}

}  // namespace

// The node's `space` operation answers for the directory or its nearest existing ancestor in one
// statvfs and writes nothing. A node of an older archctl answers UNKNOWN_OPERATION: from then on
// this session asks it through `info` (space_through_info), which probes the directory.
Result<Space> NodeSession::space(const std::string& path) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, ops());
    node::Ops node_ops(*transport);
    if (!m_space_through_info) {
        auto answer = node_ops.space({.path = strip_trailing_slashes(path)});
        if (answer.ok()) return Space{answer->free_bytes, answer->total_bytes};
        if (!answer.error().is(ErrorCode::UNKNOWN_OPERATION)) return cannot_measure(name(), path, answer.take_error());
        m_space_through_info = true;
    }
    return space_through_info(node_ops, path);
}

// A directory that does not exist yet is measured at its nearest existing ancestor below the
// node's root (or the root): that filesystem is the one it will be created on. One `info` call
// per level walked; the paths asked about are a root or a directory or two below one.
Result<Space> NodeSession::space_through_info(node::Ops& node_ops, const std::string& path) {
    const std::vector<std::string> roots = node_roots(m_config);
    std::string dir = strip_trailing_slashes(path);
    for (;;) {
        auto info = node_ops.info({.probe_dirs = {dir}});
        if (info.ok()) {
            if (auto space = space_in(info.value(), dir)) return *space;
            return Error(ErrorCode::IO,
                         fmt::format("node '{}' cannot measure the free space of '{}': it reported no free space for '{}'", name(),
                                     path, dir),
                         fmt::format("check the filesystem of '{}' on '{}' ('archctl node check {}')", dir, name(), name()));
        }
        if (!info.error().is(ErrorCode::NOT_FOUND) || !below_a_root(roots, dir)) return cannot_measure(name(), path, info.take_error());
        dir = parent_dir(dir);
    }
}

}  // namespace archctl::session
