#include "lib/routes/health.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/text.hpp"
#include "lib/node/client/ops.hpp"

namespace archctl::routes {
namespace {

void side_problems(const SideFacts& s, const std::string& peer, std::vector<std::string>& out) {
    auto add = [&](const std::string& what) { out.push_back(fmt::format("{}: {}", s.node, what)); };
    if (!s.reachable) {
        add("Syncthing unreachable: " + s.error);
        return;
    }
    if (!s.folder_present) {
        add("folder not configured");
        return;
    }
    if (!s.shares_peer) add(fmt::format("folder not shared with {}", peer));
    if (s.paused) add("folder paused");
    if (!s.paused && s.state.empty()) add("folder not running");
    if (s.state == "error" || !s.folder_error.empty())
        add("folder error: " + (s.folder_error.empty() ? std::string("state error") : s.folder_error));
    if (s.file_errors > 0) add(fmt::format("{} file error{}", s.file_errors, s.file_errors == 1 ? "" : "s"));
    if (!s.peer_connected) add(fmt::format("peer {} not connected", peer));
    if (s.folder_refused) add("folder path refused: " + s.folder_refused->message);
    else if (!s.marker_present.has_value()) add("folder marker unknown: " + s.marker_error);
    else if (!*s.marker_present) add("folder marker .stfolder missing");
}

}  // namespace

std::string Health::summary() const {
    if (problems.empty()) return "healthy";
    std::string out;
    for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
    return out;
}

// The node refused the folder's path: waiting cannot change that, the person must.
Error blocker_of(const SideFacts& s) {
    const Error& e = *s.folder_refused;
    if (e.is(ErrorCode::PATH_SYMLINK))
        return Error(ErrorCode::PATH_SYMLINK,
                     fmt::format("route folder '{}' on '{}' is reached through a symlink; archctl never follows symlinks below a node root",
                                 s.folder_path, s.node),
                     fmt::format("make '{}' a real directory below sync_root (or point the Syncthing folder at one), then rerun", s.folder_path));
    return Error(e.code, fmt::format("route folder '{}' on '{}' cannot be used: {}", s.folder_path, s.node, e.message),
                 e.hint.empty() ? "point the Syncthing folder at a directory below the node's sync_root, then rerun" : e.hint);
}

Health judge_health(const SideFacts& cache, const SideFacts& archive) {
    Health h;
    for (const SideFacts* s : {&cache, &archive})
        if (s->reachable && s->folder_present && s->folder_refused && !h.blocker) h.blocker = blocker_of(*s);
    side_problems(cache, archive.node, h.problems);
    side_problems(archive, cache.node, h.problems);
    h.healthy = h.problems.empty();
    return h;
}

SideFacts probe_side(clients::syncthing::Api& client, node::Transport* transport, const std::string& node_name,
                     const std::string& folder_id, const std::string& folder_path, const std::string& peer_device) {
    SideFacts s;
    s.node = node_name;
    s.folder_path = folder_path;
    auto folder = client.folder(folder_id);
    if (!folder.ok()) {
        s.error = folder.error().message;
        return s;
    }
    s.reachable = true;
    if (!folder.value()) return s;
    const auto& f = *folder.value();
    s.folder_present = true;
    s.shares_peer = std::find(f.devices.begin(), f.devices.end(), peer_device) != f.devices.end();
    s.paused = f.paused;
    if (auto status = client.db_status(folder_id); status.ok()) {
        s.state = status->state;
        s.folder_error = one_line(status->error);  // Syncthing's text may carry its own line breaks
        s.file_errors = status->errors;
    } else {
        s.folder_error = status.error().message;
    }
    if (auto conns = client.connections(); conns.ok()) {
        for (const auto& c : conns.value())
            if (c.device_id == peer_device) s.peer_connected = c.connected && !c.paused;
    }
    if (!transport) {
        s.marker_error = "node unreachable";
        return s;
    }
    auto tree = node::Ops(*transport).tree({.base = folder_path, .paths = {".stfolder"}});
    if (!tree.ok()) {
        s.marker_error = tree.error().message;
        const Error& e = tree.error();
        if (e.is(ErrorCode::PATH_SYMLINK) || e.is(ErrorCode::PATH_OUTSIDE_ROOT) || e.is(ErrorCode::NOT_A_DIRECTORY) ||
            e.is(ErrorCode::BAD_PATH))
            s.folder_refused = e;
        return s;
    }
    const node::EntryType type = tree->entries.empty() ? node::EntryType::absent : tree->entries[0].type;
    s.marker_present = type != node::EntryType::absent && type != node::EntryType::refused;
    return s;
}

}  // namespace archctl::routes
