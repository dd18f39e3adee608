#include "lib/session/node_probe.hpp"

#include <future>

#include <fmt/format.h>

#include "lib/clients/http/http_client.hpp"

namespace archctl::session {
namespace {

struct QbResult {
    ServiceProbe probe;
    std::optional<std::size_t> torrents;
    std::uint64_t requests = 0;
};

struct StResult {
    ServiceProbe probe;
    std::string device_id;
    std::uint64_t requests = 0;
};

QbResult probe_qbittorrent(NodeSession& session) {
    const config::NodeConfig& node = session.config();
    QbResult out;
    out.probe.url = clients::http::display_url(node.qbittorrent.url);
    if (node.qbittorrent.url.empty()) {
        out.probe.error = Error(ErrorCode::CONFIG_MISSING, fmt::format("no qBittorrent URL configured for node '{}'", node.name));
        return out;
    }
    clients::qbittorrent::Api& client = session.qb();
    const std::uint64_t sent_before = client.request_count();
    auto caps = client.capabilities();
    if (caps) {
        out.probe.version = caps->app().numeric();
        out.probe.api_version = caps->webapi().text;
        auto torrents = client.all_torrents();
        if (torrents) {
            out.torrents = torrents->size();
            out.probe.reachable = true;
        } else {
            out.probe.error = torrents.take_error();
        }
    } else {
        out.probe.error = caps.take_error();
    }
    out.requests = client.request_count() - sent_before;
    return out;
}

StResult probe_syncthing(NodeSession& session) {
    const config::NodeConfig& node = session.config();
    StResult out;
    out.probe.url = clients::http::display_url(node.syncthing.url);
    if (node.syncthing.url.empty()) {
        out.probe.error = Error(ErrorCode::CONFIG_MISSING, fmt::format("no Syncthing URL configured for node '{}'", node.name));
        return out;
    }
    clients::syncthing::Api& client = session.st();
    const std::uint64_t sent_before = client.request_count();
    auto version = client.version();
    if (version) {
        out.probe.version = version->version;
        auto status = client.status();
        if (status) {
            out.device_id = status->my_id;
            out.probe.reachable = true;
        } else {
            out.probe.error = status.take_error();
        }
    } else {
        out.probe.error = version.take_error();
    }
    out.requests = client.request_count() - sent_before;
    return out;
}

nlohmann::json service_json(const ServiceProbe& s) {
    nlohmann::json j = {{"url", s.url}, {"reachable", s.reachable}, {"version", s.version}};
    if (s.error) j["error"] = {{"code", s.error->code}, {"message", s.error->message}};
    return j;
}

}  // namespace

clients::Tuning probe_tuning() {
    clients::Tuning t;
    t.connect_timeout = std::chrono::milliseconds(3000);
    t.total_timeout = std::chrono::milliseconds(15000);
    t.retry.attempts = 2;
    t.retry.base_delay = std::chrono::milliseconds(250);
    return t;
}

NodeProbe probe_node(NodeSession& node) {
    // The two services concurrently: a session's qb() and st() are independent of each other.
    auto qb = std::async(std::launch::async, [&] { return probe_qbittorrent(node); });
    StResult st = probe_syncthing(node);
    QbResult qbr = qb.get();
    NodeProbe probe;
    probe.name = node.name();
    probe.role = config::to_string(node.config().role);
    probe.qbittorrent = std::move(qbr.probe);
    probe.torrent_count = qbr.torrents;
    probe.syncthing = std::move(st.probe);
    probe.device_id = std::move(st.device_id);
    probe.requests = qbr.requests + st.requests;
    return probe;
}

std::vector<NodeProbe> probe_nodes(NodeSessions& nodes) {
    std::vector<std::future<NodeProbe>> pending;
    for (NodeSession* node : nodes.all())
        pending.push_back(std::async(std::launch::async, [node] { return probe_node(*node); }));
    std::vector<NodeProbe> out;
    out.reserve(pending.size());
    for (auto& f : pending) out.push_back(f.get());
    return out;
}

nlohmann::json to_json(const NodeProbe& p) {
    nlohmann::json qb = service_json(p.qbittorrent);
    qb["webapi_version"] = p.qbittorrent.api_version;
    qb["torrent_count"] = p.torrent_count ? nlohmann::json(*p.torrent_count) : nlohmann::json(nullptr);
    nlohmann::json st = service_json(p.syncthing);
    st["device_id"] = p.device_id;
    return {{"name", p.name}, {"role", p.role}, {"reachable", p.reachable()}, {"qbittorrent", std::move(qb)},
            {"syncthing", std::move(st)}};
}

std::string unreachable_reason(const ServiceProbe& s) {
    if (!s.error) return "unknown error";
    const auto& message = s.error->message;
    if (s.error->code.rfind("HTTP_", 0) == 0) {
        const auto pos = message.rfind("): ");
        if (pos != std::string::npos) return fmt::format("{} ({})", message.substr(pos + 3), s.url);
    }
    return message;
}

}  // namespace archctl::session
