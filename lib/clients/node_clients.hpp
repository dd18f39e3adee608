#pragma once
// Building the qBittorrent and Syncthing clients of a configured node.
//
// Tuning holds what is not per node (timeouts, retries, log sinks); the node's config supplies
// URL, credentials and TLS settings. Secrets go straight into the client settings, where the
// clients register them with their redactors.

#include <chrono>
#include <memory>

#include "lib/clients/http/http_client.hpp"
#include "lib/clients/qbittorrent/client.hpp"
#include "lib/clients/syncthing/client.hpp"
#include "lib/config/config.hpp"

namespace archctl::clients {

struct Tuning {
    std::chrono::milliseconds connect_timeout{3000};
    std::chrono::milliseconds total_timeout{30000};
    http::RetryPolicy retry;
    http::LogSink log;
    http::LogSink warn;
    http::Sleeper sleep;  // empty: real sleeping
    // Where qBittorrent's refused logins are remembered across commands (null: not kept).
    std::shared_ptr<const qbittorrent::LoginRecords> logins;
};

[[nodiscard]] qbittorrent::Settings qbittorrent_settings(const config::NodeConfig& node, const Tuning& tuning);
[[nodiscard]] syncthing::Settings syncthing_settings(const config::NodeConfig& node, const Tuning& tuning);

}  // namespace archctl::clients
