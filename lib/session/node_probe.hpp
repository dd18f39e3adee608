#pragma once
// Node probing for `archctl status`: is each node's qBittorrent and Syncthing reachable, which
// versions run there, which Syncthing device it is and how many torrents qBittorrent holds.
//
// Every node (and each of its two services) is probed concurrently, so a node that is down costs
// one connect timeout, not one per node. A failure is part of the result, never an abort. The
// probe uses the node's session, so what status reads afterwards reuses its logins; status builds
// those sessions with probe_tuning().

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/node_clients.hpp"
#include "lib/config/config.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::session {

struct ServiceProbe {
    std::string url;  // shown without credentials or query
    bool reachable = false;
    std::optional<Error> error;  // why not (already redacted)
    std::string version;         // "4.5.2" / "v1.19.2-ds1"
    std::string api_version;     // qBittorrent WebAPI version
};

struct NodeProbe {
    std::string name;
    std::string role;
    ServiceProbe qbittorrent;
    std::optional<std::size_t> torrent_count;
    ServiceProbe syncthing;
    std::string device_id;
    std::uint64_t requests = 0;  // HTTP requests this probe sent

    [[nodiscard]] bool reachable() const { return qbittorrent.reachable && syncthing.reachable; }
};

// Short timeouts and few retries: a node that is down costs one connect timeout.
[[nodiscard]] clients::Tuning probe_tuning();

[[nodiscard]] NodeProbe probe_node(NodeSession& node);
// Every session (all configured nodes, in name order), probed concurrently.
[[nodiscard]] std::vector<NodeProbe> probe_nodes(NodeSessions& nodes);

[[nodiscard]] nlohmann::json to_json(const NodeProbe& probe);
// Why a service is unreachable, short: "connection refused (http://127.0.0.1:8080)" for
// transport failures, the full message otherwise (login failures, bad replies).
[[nodiscard]] std::string unreachable_reason(const ServiceProbe& service);

}  // namespace archctl::session
