#include "lib/session/node_session.hpp"

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/clients/qbittorrent/client.hpp"
#include "lib/clients/syncthing/client.hpp"

namespace archctl::session {

std::vector<std::string> node_roots(const config::NodeConfig& node) {
    std::vector<std::string> roots;
    for (const std::string* root : {&node.qb_root, &node.sync_root}) {
        if (root->empty()) continue;
        bool repeat = false;
        for (const auto& r : roots) repeat = repeat || strip_trailing_slashes(r) == strip_trailing_slashes(*root);
        if (!repeat) roots.push_back(*root);
    }
    return roots;
}

std::vector<std::string> served_roots(const config::NodeConfig& node) {
    std::vector<std::string> roots = node_roots(node);
    if (!node.qbittorrent.bt_backup.empty()) roots.push_back(node.qbittorrent.bt_backup);
    return roots;
}

NodeSession::NodeSession(const config::NodeConfig& config, const clients::Tuning& tuning, Injected injected)
    : m_config(config), m_tuning(tuning), m_injected(injected) {}

NodeSession::~NodeSession() = default;

clients::qbittorrent::Api& NodeSession::qb() {
    if (m_injected.qb) return *m_injected.qb;
    if (!m_qb) m_qb = std::make_unique<clients::qbittorrent::Client>(clients::qbittorrent_settings(m_config, m_tuning));
    return *m_qb;
}

clients::syncthing::Api& NodeSession::st() {
    if (m_injected.st) return *m_injected.st;
    if (!m_st) m_st = std::make_unique<clients::syncthing::Client>(clients::syncthing_settings(m_config, m_tuning));
    return *m_st;
}

Result<node::Transport*> NodeSession::ops() {
    if (m_injected.ops) return m_injected.ops;
    if (m_ops && !m_ops->broken()) return m_ops.get();
    // A broken transport has already killed and reaped its child. It is kept, not destroyed,
    // so a pointer a caller still holds keeps answering (with its error) instead of dangling.
    if (m_ops) m_retired.push_back(std::move(m_ops));
    Result<std::unique_ptr<node::Transport>> connected = [&]() -> Result<std::unique_ptr<node::Transport>> {
        if (m_config.local()) return node::connect_local(m_config.name, served_roots(m_config));
        node::ExecOptions options;
        options.node_name = m_config.name;
        options.argv = m_config.exec;
        options.timeout = m_config.timeout;
        options.roots = served_roots(m_config);
        return node::connect_exec(options);
    }();
    if (!connected.ok()) {
        Error e = connected.take_error();
        // A BT_backup directory the node cannot open fails the connection like a root: say which setting.
        const std::string& bt_backup = m_config.qbittorrent.bt_backup;
        if (!bt_backup.empty() && e.message.find("'" + bt_backup + "'") != std::string::npos)
            e.hint = fmt::format("nodes.{0}.qbittorrent.bt_backup must name qBittorrent's BT_backup directory on '{0}' (readable by archctl); "
                                 "fix or unset it",
                                 m_config.name);
        return e;
    }
    m_ops = std::move(connected).value();
    return m_ops.get();
}

const Result<NodeSession::TorrentList>& NodeSession::torrent_list() {
    if (!m_torrents) m_torrents.emplace(qb().all_torrents());
    return *m_torrents;
}

Result<clients::qbittorrent::GlobalShareLimits> NodeSession::share_limits() {
    if (m_share_limits) return *m_share_limits;
    ARCHCTL_TRY_ASSIGN(auto prefs, qb().preferences());
    m_share_limits = clients::qbittorrent::GlobalShareLimits::from_preferences(prefs);
    return *m_share_limits;
}

NodeSessions::NodeSessions(const config::Config& config, const clients::Tuning& tuning) {
    for (const auto& [name, node] : config.nodes) m_nodes[name] = std::make_unique<NodeSession>(node, tuning);
}

NodeSession& NodeSessions::add(std::unique_ptr<NodeSession> session) {
    auto& slot = m_nodes[session->name()];
    slot = std::move(session);
    return *slot;
}

Result<NodeSession*> NodeSessions::get(const std::string& name) {
    auto it = m_nodes.find(name);
    if (it != m_nodes.end()) return it->second.get();
    std::string known;
    for (const auto& [n, _] : m_nodes) known += (known.empty() ? "" : ", ") + n;
    return Error(ErrorCode::NODE_UNKNOWN, fmt::format("unknown node '{}'", name),
                 known.empty() ? "no nodes are configured; see 'archctl config'" : fmt::format("configured nodes: {}", known));
}

std::vector<NodeSession*> NodeSessions::all() {
    std::vector<NodeSession*> out;
    for (auto& [_, n] : m_nodes) out.push_back(n.get());
    return out;
}

std::vector<NodeSession*> NodeSessions::with_role(config::Role role) {
    std::vector<NodeSession*> out;
    for (auto& [_, n] : m_nodes)
        if (n->config().role == role) out.push_back(n.get());
    return out;
}

}  // namespace archctl::session
