#pragma once
// Nodes: the configured nodes of one run, each with its qBittorrent client, Syncthing client and
// node-operations transport, created on first use and reused for the whole run — the run's
// session::NodeSessions, under the names lib/jobs uses.

#include "lib/clients/qbittorrent/client.hpp"
#include "lib/clients/syncthing/client.hpp"
#include "lib/session/node_session.hpp"

namespace archctl::jobs {

using NodeHandle = session::NodeSession;
using Nodes = session::NodeSessions;

}  // namespace archctl::jobs
