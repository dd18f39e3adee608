// NodeSession::space and the reading of an `info` answer it rests on.

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

// A directory that does not exist yet is measured at its nearest existing ancestor below the
// node's root (or the root): that filesystem is the one it will be created on. One `info` call
// per level walked; the paths asked about are a root or a directory or two below one.
Result<Space> NodeSession::space(const std::string& path) {
    ARCHCTL_TRY_ASSIGN(node::Transport * transport, ops());
    node::Ops node_ops(*transport);
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
        if (!info.error().is(ErrorCode::NOT_FOUND) || !below_a_root(roots, dir)) {
            Error cause = info.take_error();
            return Error(cause.code, fmt::format("node '{}' cannot measure the free space of '{}': {}", name(), path, cause.message),
                         cause.hint);
        }
        dir = parent_dir(dir);
    }
}

}  // namespace archctl::session
