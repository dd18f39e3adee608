#include "lib/session/node_probe.hpp"

#include <future>

#include <fmt/format.h>

#include "lib/base/version.hpp"
#include "lib/clients/http/http_client.hpp"
#include "lib/node/client/ops.hpp"

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
        const auto& torrents = session.torrent_list();  // kept: status finds placements in it
        if (torrents.ok()) {
            out.torrents = torrents->size();
            out.probe.reachable = true;
        } else {
            out.probe.error = torrents.error();
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

// An exec node: one connection through the session (spawn, hello, open_roots). A local node is
// not opened here; its roots are read by the operations that need them.
TransportProbe probe_transport(NodeSession& session) {
    TransportProbe out;
    out.kind = session.config().local() ? "local" : "exec";
    if (session.config().local()) return out;
    out.checked = true;
    auto transport = session.ops();
    if (!transport.ok()) {
        out.ok = false;
        out.error = transport.take_error();
        return out;
    }
    out.archctl_version = transport.value()->hello().archctl_version;
    out.protocol = transport.value()->hello().protocol;
    return out;
}

nlohmann::json error_json(const Error& e) {
    nlohmann::json j = {{"code", e.code}, {"message", e.message}};
    if (!e.hint.empty()) j["hint"] = e.hint;
    return j;
}

nlohmann::json transport_json(const TransportProbe& t) {
    nlohmann::json j = {{"kind", t.kind}, {"checked", t.checked}, {"ok", t.ok}};
    if (!t.archctl_version.empty()) j["archctl_version"] = t.archctl_version;
    if (t.protocol != 0) j["protocol"] = t.protocol;
    if (t.error) j["error"] = error_json(*t.error);
    return j;
}

CheckResult passed(std::string check, std::string detail) {
    CheckResult r;
    r.check = std::move(check);
    r.ok = true;
    r.detail = std::move(detail);
    return r;
}

CheckResult failed(std::string check, Error error) {
    CheckResult r;
    r.check = std::move(check);
    r.error = std::move(error);
    return r;
}

nlohmann::json service_json(const ServiceProbe& s) {
    nlohmann::json j = {{"url", s.url}, {"reachable", s.reachable}, {"version", s.version}};
    if (s.error) j["error"] = {{"code", s.error->code}, {"message", s.error->message}};
    return j;
}

// qbittorrent.bt_backup: the node serves the directory, and qBittorrent keeps its torrents there
// (the copy of the first torrent it lists is read, as archive would read it).
CheckResult check_bt_backup(NodeSession& node, node::Transport* transport, const QbResult& q) {
    const std::string& dir = node.config().qbittorrent.bt_backup;
    const std::string check = "bt_backup " + dir;
    if (!transport) return failed(check, Error(ErrorCode::NODE_UNREACHABLE, "not checked: the transport failed"));
    std::string id = "0000000000000000000000000000000000000000";
    bool listed = false;
    if (q.probe.reachable) {
        const auto& torrents = node.torrent_list();
        if (torrents.ok() && !torrents->empty()) {
            id = torrents->front().id;
            listed = true;
        }
    }
    auto read = node::Ops(*transport).metainfo_read({.path = dir + "/" + id + ".torrent", .max_bytes = node::k_metainfo_read_line_bytes});
    if (!read.ok()) return failed(check, read.take_error());
    if (!listed) return passed(check, "served (no torrent listed to read yet)");
    if (read->found) return passed(check, fmt::format("readable ({}.torrent found)", id.substr(0, 12)));
    return failed(check, Error(ErrorCode::NOT_FOUND,
                               fmt::format("'{}' holds no copy of torrent {} that qBittorrent lists: archctl will export torrents instead",
                                           dir, id.substr(0, 12)),
                               "set bt_backup to qBittorrent's BT_backup directory (~/.local/share/qBittorrent/BT_backup, or "
                               "PROFILE/qBittorrent/data/BT_backup), or unset it when qBittorrent keeps its torrents in SQLite"));
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
    // The two services and the transport concurrently: a session's qb(), st() and ops() are
    // independent of each other.
    auto qb = std::async(std::launch::async, [&] { return probe_qbittorrent(node); });
    auto transport = std::async(std::launch::async, [&] { return probe_transport(node); });
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
    probe.transport = transport.get();
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
            {"syncthing", std::move(st)}, {"transport", transport_json(p.transport)}};
}

std::string TransportProbe::cause() const { return error ? one_line_cause(*error) : ""; }

std::string one_line_cause(const Error& e) {
    const std::optional<Error> error = e;
    // The hint opens with the far end's stderr tail: "node 'x' said: LINE" or "node 'x' said:"
    // followed by indented lines.
    std::string said;
    std::size_t start = 0;
    bool first = true, block = false;
    while (start <= error->hint.size()) {
        std::size_t nl = error->hint.find('\n', start);
        std::string line = error->hint.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (first) {
            if (line.rfind("node '", 0) != 0) break;
            auto at = line.find(" said:");
            if (at == std::string::npos) break;
            said = line.substr(at + 6);
            block = said.empty();
            if (!said.empty()) said.erase(0, 1);
            first = false;
        } else if (block && line.rfind("  ", 0) == 0) {
            said = line.substr(2);
        } else {
            break;
        }
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
    if (auto semi = said.find("; check that"); semi != std::string::npos) said.erase(semi);
    return said.empty() ? error->message : fmt::format("{} ({})", error->message, said);
}

bool NodeCheck::ok() const {
    for (const auto& c : checks)
        if (!c.ok) return false;
    return !checks.empty();
}

NodeCheck check_node(NodeSession& node) {
    NodeCheck out;
    out.name = node.name();
    const config::NodeConfig& cfg = node.config();
    auto qb = std::async(std::launch::async, [&] { return probe_qbittorrent(node); });
    auto st = std::async(std::launch::async, [&] { return probe_syncthing(node); });

    auto transport = node.ops();
    const std::vector<std::string> roots = node_roots(cfg);
    if (!transport.ok()) {
        Error e = transport.take_error();
        out.checks.push_back(failed("transport", e));
        out.checks.push_back(failed("version", Error(ErrorCode::NODE_UNREACHABLE, "not checked: the transport failed")));
        for (const auto& root : roots)
            out.checks.push_back(failed("root " + root, Error(ErrorCode::NODE_UNREACHABLE, "not checked: the transport failed")));
    } else {
        node::Transport& t = *transport.value();
        const node::Hello& hello = t.hello();
        std::string how = cfg.local() ? "local (in process)" : fmt::format("exec, far end pid {}", hello.pid);
        out.checks.push_back(passed("transport", how));
        std::string version = fmt::format("archctl {}, node protocol {}", hello.archctl_version, hello.protocol);
        if (hello.archctl_version != k_version) version += fmt::format(" (this archctl is {})", k_version);
        out.checks.push_back(passed("version", version));
        for (const auto& root : roots) {
            auto written = node::Ops(t).write_check({.path = root});
            if (written.ok()) {
                out.checks.push_back(passed("root " + root, "exists, writable"));
            } else {
                out.checks.push_back(failed("root " + root, written.take_error()));
            }
        }
        if (roots.empty())
            out.checks.push_back(failed("roots", Error(ErrorCode::CONFIG_MISSING, fmt::format("node '{}' has no qb_root or sync_root configured", cfg.name))));
    }

    QbResult q = qb.get();
    if (q.probe.reachable) {
        out.checks.push_back(passed("qbittorrent", fmt::format("logged in, qBittorrent {} (WebAPI {}), {} torrent{} ({})", q.probe.version,
                                                               q.probe.api_version, q.torrents.value_or(0),
                                                               q.torrents.value_or(0) == 1 ? "" : "s", q.probe.url)));
    } else {
        Error e = q.probe.error.value_or(Error(ErrorCode::NODE_UNREACHABLE, "unknown error"));
        e.message = unreachable_reason(q.probe);
        out.checks.push_back(failed("qbittorrent", e));
    }
    if (!cfg.qbittorrent.bt_backup.empty()) out.checks.push_back(check_bt_backup(node, transport.ok() ? transport.value() : nullptr, q));

    StResult s = st.get();
    if (s.probe.reachable) {
        out.checks.push_back(passed("syncthing", fmt::format("Syncthing {}, device {} ({})", s.probe.version, s.device_id.substr(0, 7), s.probe.url)));
    } else {
        Error e = s.probe.error.value_or(Error(ErrorCode::NODE_UNREACHABLE, "unknown error"));
        e.message = unreachable_reason(s.probe);
        out.checks.push_back(failed("syncthing", e));
    }
    return out;
}

nlohmann::json to_json(const NodeCheck& c) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& r : c.checks) {
        nlohmann::json j = {{"check", r.check}, {"ok", r.ok}};
        if (r.ok) j["detail"] = r.detail;
        if (r.error) j["error"] = error_json(*r.error);
        checks.push_back(std::move(j));
    }
    return {{"node", c.name}, {"ok", c.ok()}, {"checks", std::move(checks)}};
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
