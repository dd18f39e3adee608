#pragma once
// Node probing for `archctl status`: is each node's qBittorrent and Syncthing reachable, which
// versions run there, which Syncthing device it is and how many torrents qBittorrent holds.
//
// Every node (and each of its two services) is probed concurrently, so a node that is down costs
// one connect timeout, not one per node. A failure is part of the result, never an abort. The
// probe uses the node's session, so what status reads afterwards reuses its logins; status builds
// those sessions with probe_tuning().
//
// An exec node's transport is probed too (one spawn and hello, through the session, so status's
// later node operations reuse it): a wrong port, a missing remote binary or a refused key makes
// the node not reachable, with the transport's error as the cause. check_node() is the long
// form for `archctl node check`: every check of one node, each ok or failed with its cause.

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

struct TransportProbe {
    std::string kind;             // "local" or "exec"
    bool checked = false;         // a connection was attempted (exec nodes only)
    bool ok = true;
    std::optional<Error> error;   // why the connection failed (stderr tail in its hint)
    std::string archctl_version;  // the far end's, from its hello
    int protocol = 0;

    // One line for a table: the error's message and the last line the far end said, e.g.
    // "node 'nas' closed the connection during 'hello': exit status 255 (ssh: connect to host
    // nas port 22: Connection refused)".
    [[nodiscard]] std::string cause() const;
};

struct NodeProbe {
    std::string name;
    std::string role;
    ServiceProbe qbittorrent;
    std::optional<std::size_t> torrent_count;
    ServiceProbe syncthing;
    std::string device_id;
    TransportProbe transport;
    std::uint64_t requests = 0;  // HTTP requests this probe sent

    [[nodiscard]] bool reachable() const { return qbittorrent.reachable && syncthing.reachable && transport.ok; }
};

// One line of `archctl node check`.
struct CheckResult {
    std::string check;   // "transport", "version", "root /srv/a", "qbittorrent", "syncthing"
    bool ok = false;
    std::string detail;  // what was proven, when ok
    std::optional<Error> error;
};

struct NodeCheck {
    std::string name;
    std::vector<CheckResult> checks;
    [[nodiscard]] bool ok() const;
};

// Short timeouts and few retries: a node that is down costs one connect timeout.
[[nodiscard]] clients::Tuning probe_tuning();

[[nodiscard]] NodeProbe probe_node(NodeSession& node);
// Every session (all configured nodes, in name order), probed concurrently.
[[nodiscard]] std::vector<NodeProbe> probe_nodes(NodeSessions& nodes);

// Transport (spawn or in-process open, hello), the far end's version and protocol, each root
// writable (a temp file created and removed by the node), qBittorrent login and version,
// Syncthing ping and version.
[[nodiscard]] NodeCheck check_node(NodeSession& node);

[[nodiscard]] nlohmann::json to_json(const NodeProbe& probe);
[[nodiscard]] nlohmann::json to_json(const NodeCheck& check);
// Why a service is unreachable, short: "connection refused (http://127.0.0.1:8080)" for
// transport failures, the full message otherwise (login failures, bad replies).
[[nodiscard]] std::string unreachable_reason(const ServiceProbe& service);
// An exec transport's error on one line: its message and the last line the far end said.
[[nodiscard]] std::string one_line_cause(const Error& error);

}  // namespace archctl::session
