#include "lib/routes/node_link.hpp"

#include <vector>

namespace archctl::routes {

NodeLink::NodeLink(const config::NodeConfig& node, const clients::Tuning& tuning)
    : m_node(node), m_syncthing(clients::syncthing_settings(node, tuning)) {}

Result<node::Transport*> NodeLink::transport() {
    if (m_transport) return m_transport.get();
    Result<std::unique_ptr<node::Transport>> connected = [&]() -> Result<std::unique_ptr<node::Transport>> {
        if (m_node.local()) {
            std::vector<std::string> roots;
            if (!m_node.qb_root.empty()) roots.push_back(m_node.qb_root);
            if (!m_node.sync_root.empty() && m_node.sync_root != m_node.qb_root) roots.push_back(m_node.sync_root);
            return node::connect_local(m_node.name, roots);
        }
        node::ExecOptions options;
        options.node_name = m_node.name;
        options.argv = m_node.exec;
        return node::connect_exec(options);
    }();
    if (!connected.ok()) return connected.take_error();
    m_transport = std::move(connected).value();
    return m_transport.get();
}

}  // namespace archctl::routes
