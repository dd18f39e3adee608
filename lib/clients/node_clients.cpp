#include "lib/clients/node_clients.hpp"

namespace archctl::clients {
namespace {

http::ClientSettings http_settings(const config::NodeConfig& node, const std::string& service, const std::string& url,
                                   const std::string& ca_file, bool insecure, const Tuning& tuning) {
    http::ClientSettings s;
    s.node = node.name;
    s.service = service;
    s.base_url = url;
    s.ca_file = ca_file;
    s.tls = insecure ? http::TlsVerification::insecure : http::TlsVerification::verify;
    s.connect_timeout = tuning.connect_timeout;
    s.total_timeout = tuning.total_timeout;
    s.retry = tuning.retry;
    s.log = tuning.log;
    s.warn = tuning.warn;
    s.sleep = tuning.sleep;
    return s;
}

}  // namespace

qbittorrent::Settings qbittorrent_settings(const config::NodeConfig& node, const Tuning& tuning) {
    const auto& qb = node.qbittorrent;
    qbittorrent::Settings s;
    s.http = http_settings(node, "qBittorrent", qb.url, qb.ca_file, qb.insecure_tls, tuning);
    s.username = qb.username;
    s.password = qb.password.value;
    s.password_file = qb.password.file;
    s.export_timeout = qb.export_timeout;
    s.logins = tuning.logins;
    return s;
}

syncthing::Settings syncthing_settings(const config::NodeConfig& node, const Tuning& tuning) {
    const auto& st = node.syncthing;
    syncthing::Settings s;
    s.http = http_settings(node, "Syncthing", st.url, st.ca_file, st.insecure_tls, tuning);
    s.api_key = st.api_key.value;
    return s;
}

}  // namespace archctl::clients
