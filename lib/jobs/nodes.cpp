#include "lib/jobs/nodes.hpp"

#include <fmt/format.h>

namespace archctl::jobs {

clients::qbittorrent::Client& NodeHandle::qb() {
    if (!m_qb) m_qb = std::make_unique<clients::qbittorrent::Client>(clients::qbittorrent_settings(m_config, m_tuning));
    return *m_qb;
}

clients::syncthing::Client& NodeHandle::st() {
    if (!m_st) m_st = std::make_unique<clients::syncthing::Client>(clients::syncthing_settings(m_config, m_tuning));
    return *m_st;
}

Result<node::Transport*> NodeHandle::ops() {
    if (m_ops) return m_ops.get();
    if (m_config.local()) {
        ARCHCTL_TRY_ASSIGN(m_ops, node::connect_local(m_config.name, {m_config.qb_root, m_config.sync_root}));
    } else {
        node::ExecOptions options;
        options.node_name = m_config.name;
        options.argv = m_config.exec;
        ARCHCTL_TRY_ASSIGN(m_ops, node::connect_exec(options));
    }
    return m_ops.get();
}

Nodes::Nodes(const config::Config& config, clients::Tuning tuning) : m_config(config) {
    for (const auto& [name, node] : config.nodes) m_nodes[name] = std::make_unique<NodeHandle>(node, tuning);
}

Result<NodeHandle*> Nodes::get(const std::string& name) {
    auto it = m_nodes.find(name);
    if (it != m_nodes.end()) return it->second.get();
    std::string known;
    for (const auto& [n, _] : m_nodes) known += (known.empty() ? "" : ", ") + n;
    return Error("NODE_UNKNOWN", fmt::format("unknown node '{}'", name),
                 known.empty() ? "no nodes are configured; see 'archctl config'" : fmt::format("configured nodes: {}", known));
}

std::vector<NodeHandle*> Nodes::all() {
    std::vector<NodeHandle*> out;
    for (auto& [_, n] : m_nodes) out.push_back(n.get());
    return out;
}

std::vector<NodeHandle*> Nodes::with_role(config::Role role) {
    std::vector<NodeHandle*> out;
    for (auto& [_, n] : m_nodes)
        if (n->config().role == role) out.push_back(n.get());
    return out;
}

}  // namespace archctl::jobs
