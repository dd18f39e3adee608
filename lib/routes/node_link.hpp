#pragma once
// NodeLink: what lib/routes talks to on one node — its Syncthing REST client, and the node
// operation transport (local in-process or exec), connected on first use.

#include <memory>
#include <optional>
#include <string>

#include "lib/base/result.hpp"
#include "lib/clients/node_clients.hpp"
#include "lib/config/config.hpp"
#include "lib/node/transport.hpp"

namespace archctl::routes {

class NodeLink {
public:
    NodeLink(const config::NodeConfig& node, const clients::Tuning& tuning);

    [[nodiscard]] const config::NodeConfig& config() const { return m_node; }
    [[nodiscard]] const std::string& name() const { return m_node.name; }
    [[nodiscard]] clients::syncthing::Client& syncthing() { return m_syncthing; }
    // The node's transport: `local` over its qb_root and sync_root, or `exec` of its argv.
    // A failed connection is retried on the next call.
    [[nodiscard]] Result<node::Transport*> transport();

private:
    const config::NodeConfig& m_node;
    clients::syncthing::Client m_syncthing;
    std::unique_ptr<node::Transport> m_transport;
};

}  // namespace archctl::routes
