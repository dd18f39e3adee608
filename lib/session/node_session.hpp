#pragma once
// NodeSession: everything one run holds open to one configured node — its qBittorrent client,
// its Syncthing client and its node-operations transport (local in-process, or one exec child) —
// each created on first use and reused until the run ends. NodeSessions: the configured nodes of
// one run, one session each. Jobs, eviction, routes and status all reach a node through it, so a
// run logs in once per service and starts at most one exec child per node.
//
// Usage:
//   session::NodeSessions nodes(config, tuning);
//   ARCHCTL_TRY_ASSIGN(session::NodeSession * nas, nodes.get("nas"));
//   ARCHCTL_TRY_ASSIGN(auto infos, nas->qb().torrents({id}));
//   ARCHCTL_TRY_ASSIGN(node::Transport * ops, nas->ops());
//   ARCHCTL_TRY_ASSIGN(session::Space space, nas->space(nas->config().qb_root));
//
// qb() and st() return the narrow interfaces (clients/*/api.hpp); tests construct a session with
// in-memory implementations instead (Injected). A session is used by one thread at a time, except
// that qb() and st() may be used from two threads at once (status probes both concurrently).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/node_clients.hpp"
#include "lib/clients/qbittorrent/api.hpp"
#include "lib/clients/qbittorrent/share_limits.hpp"
#include "lib/clients/syncthing/api.hpp"
#include "lib/config/config.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/session/space.hpp"

namespace archctl::node {
class Ops;
}  // namespace archctl::node

namespace archctl::session {

// The roots a local node serves: its qb_root, then its sync_root; empty ones and repeats (also
// when they differ only by trailing slashes) are left out.
[[nodiscard]] std::vector<std::string> node_roots(const config::NodeConfig& node);
// The roots a node's transport opens: node_roots() and, when configured, qBittorrent's BT_backup
// directory (read only: archctl reads <id>.torrent files there and writes nothing below it).
[[nodiscard]] std::vector<std::string> served_roots(const config::NodeConfig& node);

class NodeSession {
public:
    // Implementations to use instead of the real ones (not owned; they must outlive the
    // session). What is left null is built from the node's config on first use.
    struct Injected {
        clients::qbittorrent::Api* qb = nullptr;
        clients::syncthing::Api* st = nullptr;
        node::Transport* ops = nullptr;
    };

    NodeSession(const config::NodeConfig& config, const clients::Tuning& tuning) : m_config(config), m_tuning(tuning) {}
    NodeSession(const config::NodeConfig& config, const clients::Tuning& tuning, Injected injected);
    ~NodeSession();
    NodeSession(const NodeSession&) = delete;
    NodeSession& operator=(const NodeSession&) = delete;

    [[nodiscard]] const config::NodeConfig& config() const { return m_config; }
    [[nodiscard]] const std::string& name() const { return m_config.name; }

    [[nodiscard]] clients::qbittorrent::Api& qb();
    [[nodiscard]] clients::syncthing::Api& st();
    // The node-operations transport: `local` over node_roots(), or `exec` of the configured
    // argv with the node's timeout, node_roots() opened on the far end (`node serve` needs no
    // --root). A failed connection is retried on the next call, and so is
    // one that broke (its child died or went silent): the next call spawns a fresh child.
    [[nodiscard]] Result<node::Transport*> ops();

    // The free space at directory `path` on this node, measured by the node (space.hpp): the
    // directory itself, or — while it does not exist yet — its nearest existing ancestor below the
    // node's root, up to the root. One `space` request, which writes nothing on the node (a node
    // of an older archctl is asked through `info` instead). An error naming the node and `path`
    // when the node cannot measure it (never 0 free); an error connecting to the node is returned
    // as ops() gives it.
    [[nodiscard]] Result<Space> space(const std::string& path);

    // The node's torrent list (one torrents/info), read on the first call and then the same for
    // the session's life, error included: one consistent snapshot for a report — status counts
    // it in the probe and finds placements in it without asking again. Whatever acts on
    // torrents asks qb() for a fresh list instead.
    using TorrentList = std::vector<clients::qbittorrent::TorrentInfo>;
    [[nodiscard]] const Result<TorrentList>& torrent_list();
    // The node's global share limits (app/preferences), read once per session: what plans and
    // proofs judge a copy's future by. Errors are not kept: the next call asks again.
    [[nodiscard]] Result<clients::qbittorrent::GlobalShareLimits> share_limits();

private:
    // space() on a node that has no `space` operation: its `info`, level by level.
    [[nodiscard]] Result<Space> space_through_info(node::Ops& node_ops, const std::string& path);

    const config::NodeConfig& m_config;
    clients::Tuning m_tuning;
    Injected m_injected;
    std::unique_ptr<clients::qbittorrent::Api> m_qb;
    std::unique_ptr<clients::syncthing::Api> m_st;
    std::unique_ptr<node::Transport> m_ops;
    std::vector<std::unique_ptr<node::Transport>> m_retired;  // broken ones, see ops()
    std::optional<Result<TorrentList>> m_torrents;            // see torrent_list()
    std::optional<clients::qbittorrent::GlobalShareLimits> m_share_limits;  // see share_limits()
    bool m_space_through_info = false;  // the node answered `space` with UNKNOWN_OPERATION
};

class NodeSessions {
public:
    // One session per configured node, none connected yet.
    NodeSessions(const config::Config& config, const clients::Tuning& tuning);
    // Empty; sessions are then added with add() (tests).
    NodeSessions() = default;

    // Adds (or replaces) the session of its node.
    NodeSession& add(std::unique_ptr<NodeSession> session);

    // NODE_UNKNOWN naming the configured nodes when `name` is not one of them.
    [[nodiscard]] Result<NodeSession*> get(const std::string& name);
    // In name order.
    [[nodiscard]] std::vector<NodeSession*> all();
    [[nodiscard]] std::vector<NodeSession*> with_role(config::Role role);

private:
    std::map<std::string, std::unique_ptr<NodeSession>> m_nodes;
};

}  // namespace archctl::session
