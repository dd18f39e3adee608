#pragma once
// Nodes: the configured nodes of one run, each with its qBittorrent client, Syncthing client and
// node-operations transport, created on first use and reused for the whole run (connections
// and the exec transport's child process live as long as the run).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/clients/node_clients.hpp"
#include "lib/clients/qbittorrent/client.hpp"
#include "lib/clients/syncthing/client.hpp"
#include "lib/config/config.hpp"
#include "lib/node/transport.hpp"

namespace archctl::jobs {

class NodeHandle {
public:
    NodeHandle(const config::NodeConfig& config, const clients::Tuning& tuning) : m_config(config), m_tuning(tuning) {}

    const config::NodeConfig& config() const { return m_config; }
    const std::string& name() const { return m_config.name; }

    clients::qbittorrent::Client& qb();
    clients::syncthing::Client& st();
    // The node-operations transport (local in-process, or the configured exec argv).
    Result<node::Transport*> ops();

private:
    const config::NodeConfig& m_config;
    clients::Tuning m_tuning;
    std::unique_ptr<clients::qbittorrent::Client> m_qb;
    std::unique_ptr<clients::syncthing::Client> m_st;
    std::unique_ptr<node::Transport> m_ops;
};

class Nodes {
public:
    Nodes(const config::Config& config, clients::Tuning tuning);

    // NODE_UNKNOWN naming the configured nodes when `name` is not one of them.
    Result<NodeHandle*> get(const std::string& name);
    std::vector<NodeHandle*> all();
    std::vector<NodeHandle*> with_role(config::Role role);

private:
    const config::Config& m_config;
    std::map<std::string, std::unique_ptr<NodeHandle>> m_nodes;
};

}  // namespace archctl::jobs
