// clients_probe: archctl's client library as a command-line tool, for integration tests.
//
//   clients_probe CONFIG NODE COMMAND [ARGS...]
//
// Loads the archctl config CONFIG, builds the node's clients and runs one command, printing one
// JSON object on stdout: {"ok":true,"requests":N,...} or {"ok":false,"error":{code,message,hint}}.
// Exit status 0 on success, 1 on a client error, 2 on usage errors.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/clients/node_clients.hpp"
#include "lib/config/config.hpp"

using namespace archctl;
using namespace archctl::clients;
using nlohmann::json;
using Args = std::vector<std::string>;

namespace {

struct Probe {
    std::unique_ptr<qbittorrent::Client> qb;
    std::unique_ptr<syncthing::Client> st;
};

json error_json(const Error& e) { return {{"code", e.code}, {"message", e.message}, {"hint", e.hint}}; }

json info_json(const qbittorrent::TorrentInfo& t) {
    return {{"id", t.id}, {"infohash_v1", t.infohash_v1}, {"infohash_v2", t.infohash_v2}, {"name", t.name},
            {"save_path", t.save_path}, {"content_path", t.content_path}, {"state", t.state},
            {"run_state", qbittorrent::to_string(t.run_state)}, {"progress", t.progress},
            {"amount_left", t.amount_left}, {"size", t.size}, {"total_size", t.total_size}};
}

json files_json(const std::vector<qbittorrent::TorrentFile>& files) {
    json list = json::array();
    for (const auto& f : files) {
        list.push_back({{"index", f.index}, {"name", f.name}, {"size", f.size}, {"progress", f.progress}, {"priority", f.priority}});
    }
    return {{"files", list}, {"selected", qbittorrent::selected_files(files)}, {"complete", qbittorrent::complete_files(files)}};
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

template <class T>
json value_or_error(Result<T> r, const std::function<json(const T&)>& render) {
    if (!r.ok()) return {{"ok", false}, {"error", error_json(r.error())}};
    json out = render(r.value());
    out["ok"] = true;
    return out;
}

json status_json(const Status& s) {
    if (!s.ok()) return {{"ok", false}, {"error", error_json(s.error())}};
    return {{"ok", true}};
}

std::vector<std::uint32_t> indices(const Args& a, std::size_t from) {
    std::vector<std::uint32_t> out;
    for (std::size_t i = from; i < a.size(); ++i) out.push_back(static_cast<std::uint32_t>(std::stoul(a[i])));
    return out;
}

Args tail(const Args& a, std::size_t from) { return Args(a.begin() + static_cast<std::ptrdiff_t>(from), a.end()); }

using Command = std::function<json(Probe&, const Args&)>;

std::map<std::string, std::pair<std::size_t, Command>> qb_commands() {
    using qbittorrent::TorrentInfo;
    return {
        {"qb-login", {0, [](Probe& p, const Args&) { return status_json(p.qb->login()); }}},
        {"qb-version", {0, [](Probe& p, const Args&) {
             return value_or_error<qbittorrent::Capabilities>(p.qb->capabilities(), [](const auto& c) {
                 return json{{"app", c.app().text}, {"webapi", c.webapi().text}, {"stop", c.stop_endpoint()},
                             {"start", c.start_endpoint()}, {"export", c.has(qbittorrent::Feature::export_torrent)}};
             });
         }}},
        {"qb-info", {0, [](Probe& p, const Args& a) {
             auto r = a.empty() ? p.qb->all_torrents() : p.qb->torrents(a);
             return value_or_error<std::vector<TorrentInfo>>(std::move(r), [](const auto& list) {
                 json out = json::array();
                 for (const auto& t : list) out.push_back(info_json(t));
                 return json{{"torrents", out}};
             });
         }}},
        {"qb-files", {1, [](Probe& p, const Args& a) {
             return value_or_error<std::vector<qbittorrent::TorrentFile>>(p.qb->files(a[0]), files_json);
         }}},
        {"qb-properties", {1, [](Probe& p, const Args& a) {
             return value_or_error<qbittorrent::TorrentProperties>(p.qb->properties(a[0]), [](const auto& pr) {
                 return json{{"save_path", pr.save_path}, {"piece_size", pr.piece_size}, {"pieces_num", pr.pieces_num},
                             {"infohash_v1", pr.infohash_v1}, {"infohash_v2", pr.infohash_v2}};
             });
         }}},
        {"qb-export", {2, [](Probe& p, const Args& a) {
             auto r = p.qb->export_torrent(a[0]);
             if (r.ok()) std::ofstream(a[1], std::ios::binary) << r.value();
             return value_or_error<std::string>(std::move(r), [](const auto& bytes) { return json{{"bytes", bytes.size()}}; });
         }}},
        {"qb-add", {2, [](Probe& p, const Args& a) {
             qbittorrent::AddTorrent add;
             add.metainfo = read_file(a[0]);
             add.save_path = a[1];
             add.start = a.size() > 2 && a[2] == "started" ? qbittorrent::AddStart::started : qbittorrent::AddStart::stopped;
             return status_json(p.qb->add(add));
         }}},
        {"qb-recheck", {1, [](Probe& p, const Args& a) { return status_json(p.qb->recheck(a)); }}},
        {"qb-stop", {1, [](Probe& p, const Args& a) { return status_json(p.qb->stop(a)); }}},
        {"qb-start", {1, [](Probe& p, const Args& a) { return status_json(p.qb->start(a)); }}},
        {"qb-prio", {3, [](Probe& p, const Args& a) {
             const auto prio = a[1] == "skip" ? qbittorrent::FilePriority::skip : qbittorrent::FilePriority::normal;
             return status_json(p.qb->set_file_priority(a[0], indices(a, 2), prio));
         }}},
        {"qb-delete", {1, [](Probe& p, const Args& a) { return status_json(p.qb->remove(a, qbittorrent::DeleteData::no)); }}},
        {"qb-maindata", {0, [](Probe& p, const Args&) {
             qbittorrent::MainData data;
             auto first = p.qb->sync(data);
             if (!first.ok()) return status_json(first);
             const auto rid1 = data.rid();
             auto second = p.qb->sync(data);
             if (!second.ok()) return status_json(second);
             json list = json::array();
             for (const auto& t : data.torrents()) list.push_back(info_json(t));
             return json{{"ok", true}, {"rid_first", rid1}, {"rid", data.rid()}, {"full_updates", data.full_updates()},
                         {"torrents", list}, {"free_space_on_disk", data.server_state().value("free_space_on_disk", json())}};
         }}},
        {"qb-build-info", {0, [](Probe& p, const Args&) {
             return value_or_error<qbittorrent::BuildInfo>(p.qb->build_info(), [](const auto& b) {
                 return json{{"libtorrent", b.libtorrent}, {"qt", b.qt}, {"bitness", b.bitness}};
             });
         }}},
        {"qb-preferences", {0, [](Probe& p, const Args&) {
             return value_or_error<json>(p.qb->preferences(), [](const auto& prefs) {
                 return json{{"refresh_interval", prefs.value("refresh_interval", json())}, {"keys", prefs.size()}};
             });
         }}},
    };
}

json folder_json(const syncthing::Folder& f) {
    return {{"id", f.id}, {"label", f.label}, {"path", f.path}, {"type", f.type}, {"devices", f.devices},
            {"paused", f.paused}, {"ignorePerms", f.ignore_perms}, {"fsWatcherEnabled", f.fs_watcher_enabled},
            {"fsWatcherDelayS", f.fs_watcher_delay_s}, {"rescanIntervalS", f.rescan_interval_s},
            {"versioning", f.versioning_type}, {"raw_keys", f.raw.size()}};
}

json event_json(const syncthing::Event& e) { return {{"id", e.id}, {"globalID", e.global_id}, {"type", e.type}, {"data", e.data}}; }

// Follow events of `types` for up to `seconds` until one of type `until` (with data.folder ==
// `folder` when given) arrives.
json watch(syncthing::Client& st, const Args& a) {
    std::vector<std::string> types;
    std::stringstream list(a[0]);
    for (std::string t; std::getline(list, t, ',');) types.push_back(t);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(a[1]));
    const std::string until = a[2];
    const std::string folder = a.size() > 3 ? a[3] : "";
    syncthing::EventStream stream(st);
    json seen = json::array();
    while (std::chrono::steady_clock::now() < deadline) {
        auto batch = stream.next(types, std::chrono::seconds(2));
        if (!batch.ok()) return {{"ok", false}, {"error", error_json(batch.error())}, {"events", seen}};
        for (const auto& e : batch->events) {
            seen.push_back(event_json(e));
            const bool folder_ok = folder.empty() || (e.data.is_object() && e.data.value("folder", "") == folder);
            if (e.type == until && folder_ok) return {{"ok", true}, {"found", true}, {"events", seen}};
        }
    }
    return {{"ok", true}, {"found", false}, {"events", seen}};
}

std::map<std::string, std::pair<std::size_t, Command>> st_commands() {
    return {
        {"st-ping", {0, [](Probe& p, const Args&) { return status_json(p.st->ping()); }}},
        {"st-status", {0, [](Probe& p, const Args&) {
             return value_or_error<syncthing::SystemStatus>(p.st->status(), [](const auto& s) {
                 return json{{"myID", s.my_id}, {"startTime", s.start_time}};
             });
         }}},
        {"st-version", {0, [](Probe& p, const Args&) {
             return value_or_error<syncthing::VersionInfo>(p.st->version(), [](const auto& v) { return json{{"version", v.version}}; });
         }}},
        {"st-connections", {0, [](Probe& p, const Args&) {
             return value_or_error<std::vector<syncthing::Connection>>(p.st->connections(), [](const auto& list) {
                 json out = json::object();
                 for (const auto& c : list) out[c.device_id] = {{"connected", c.connected}, {"address", c.address}};
                 return json{{"connections", out}};
             });
         }}},
        {"st-put-device", {3, [](Probe& p, const Args& a) {
             syncthing::Device d;
             d.device_id = a[0];
             d.name = a[1];
             d.addresses = {a[2]};
             return status_json(p.st->put_device(d));
         }}},
        {"st-devices", {0, [](Probe& p, const Args&) {
             return value_or_error<std::vector<syncthing::Device>>(p.st->devices(), [](const auto& list) {
                 json out = json::array();
                 for (const auto& d : list) out.push_back({{"deviceID", d.device_id}, {"name", d.name}, {"addresses", d.addresses}});
                 return json{{"devices", out}};
             });
         }}},
        {"st-delete-device", {1, [](Probe& p, const Args& a) { return status_json(p.st->delete_device(a[0])); }}},
        {"st-put-folder", {3, [](Probe& p, const Args& a) {
             syncthing::Folder f;
             f.id = a[0];
             f.label = a[0];
             f.path = a[1];
             f.devices = tail(a, 2);
             f.ignore_perms = true;
             f.fs_watcher_delay_s = 1;
             return status_json(p.st->put_folder(f));
         }}},
        {"st-folder", {1, [](Probe& p, const Args& a) {
             return value_or_error<std::optional<syncthing::Folder>>(p.st->folder(a[0]), [](const auto& f) {
                 return f ? json{{"folder", folder_json(*f)}} : json{{"folder", nullptr}};
             });
         }}},
        {"st-rmw-folder", {2, [](Probe& p, const Args& a) {  // read-modify-write: set fsWatcherDelayS
             auto f = p.st->folder(a[0]);
             if (!f.ok()) return status_json(Status(f.take_error()));
             if (!f.value()) return json{{"ok", false}, {"error", {{"code", "ST_NOT_FOUND"}}}};
             auto folder = **f;
             folder.fs_watcher_delay_s = std::stoll(a[1]);
             return status_json(p.st->put_folder(folder));
         }}},
        {"st-patch-folder", {2, [](Probe& p, const Args& a) { return status_json(p.st->patch_folder(a[0], json::parse(a[1]))); }}},
        {"st-delete-folder", {1, [](Probe& p, const Args& a) { return status_json(p.st->delete_folder(a[0])); }}},
        {"st-patch-options", {1, [](Probe& p, const Args& a) { return status_json(p.st->patch_options(json::parse(a[0]))); }}},
        {"st-scan", {1, [](Probe& p, const Args& a) { return status_json(p.st->scan(a[0], tail(a, 1))); }}},
        {"st-db-status", {1, [](Probe& p, const Args& a) {
             return value_or_error<syncthing::FolderStatus>(p.st->db_status(a[0]), [](const auto& s) {
                 return json{{"state", s.state}, {"needFiles", s.need_files}, {"needBytes", s.need_bytes},
                             {"localFiles", s.local_files}, {"globalFiles", s.global_files}, {"errors", s.errors}};
             });
         }}},
        {"st-completion", {2, [](Probe& p, const Args& a) {
             return value_or_error<syncthing::Completion>(p.st->completion(a[0], a[1]), [](const auto& c) {
                 return json{{"completion", c.completion}, {"needBytes", c.need_bytes}, {"globalBytes", c.global_bytes},
                             {"sequence", c.sequence}};
             });
         }}},
        {"st-file", {2, [](Probe& p, const Args& a) {
             return value_or_error<std::optional<syncthing::FileRecord>>(p.st->file(a[0], a[1]), [](const auto& r) {
                 if (!r) return json{{"present", false}};
                 return json{{"present", true}, {"local_is_current", r->local_is_current()}, {"global_deleted", r->global.deleted},
                             {"local_deleted", r->local.deleted}, {"size", r->global.size}};
             });
         }}},
        {"st-need", {1, [](Probe& p, const Args& a) {
             return value_or_error<syncthing::NeedList>(p.st->need(a[0]), [](const auto& n) { return json{{"total", n.total()}}; });
         }}},
        {"st-errors", {1, [](Probe& p, const Args& a) {
             return value_or_error<std::vector<syncthing::FolderError>>(p.st->folder_errors(a[0]), [](const auto& list) {
                 json out = json::array();
                 for (const auto& e : list) out.push_back({{"path", e.path}, {"error", e.error}});
                 return json{{"errors", out}};
             });
         }}},
        {"st-pending", {0, [](Probe& p, const Args&) {
             auto devices = p.st->pending_devices();
             auto folders = p.st->pending_folders();
             if (!devices.ok()) return status_json(Status(devices.take_error()));
             if (!folders.ok()) return status_json(Status(folders.take_error()));
             json d = json::array(), f = json::array();
             for (const auto& x : *devices) d.push_back(x.device_id);
             for (const auto& x : *folders) f.push_back(x.folder_id);
             return json{{"ok", true}, {"devices", d}, {"folders", f}};
         }}},
        {"st-watch", {3, [](Probe& p, const Args& a) { return watch(*p.st, a); }}},
    };
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: clients_probe CONFIG NODE COMMAND [ARGS...]\n");
        return 2;
    }
    const std::string command = argv[3];
    const Args args(argv + 4, argv + argc);
    config::LoadOptions options;
    options.config_file = argv[1];
    std::vector<std::string> warnings;
    auto cfg = config::load(options, warnings);
    for (const auto& w : warnings) std::fprintf(stderr, "clients_probe: warning: %s\n", w.c_str());
    if (!cfg.ok()) {
        std::cout << json{{"ok", false}, {"error", error_json(cfg.error())}}.dump() << "\n";
        return 1;
    }
    const config::NodeConfig* node = cfg->node(argv[2]);
    if (node == nullptr) {
        std::fprintf(stderr, "clients_probe: no node '%s' in %s\n", argv[2], argv[1]);
        return 2;
    }
    Tuning tuning;
    tuning.retry.attempts = 2;
    tuning.retry.base_delay = std::chrono::milliseconds(100);
    tuning.warn = [](const std::string& w) { std::fprintf(stderr, "clients_probe: warning: %s\n", w.c_str()); };
    if (std::getenv("CLIENTS_PROBE_LOG") != nullptr) {
        tuning.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    }
    Probe probe;
    auto table = command.rfind("qb-", 0) == 0 ? qb_commands() : st_commands();
    auto it = table.find(command);
    if (it == table.end() || args.size() < it->second.first) {
        std::fprintf(stderr, "clients_probe: unknown command or missing arguments: %s\n", command.c_str());
        return 2;
    }
    if (command.rfind("qb-", 0) == 0) probe.qb = std::make_unique<qbittorrent::Client>(qbittorrent_settings(*node, tuning));
    else probe.st = std::make_unique<syncthing::Client>(syncthing_settings(*node, tuning));
    json out = it->second.second(probe, args);
    out["requests"] = probe.qb ? probe.qb->request_count() : probe.st->request_count();
    std::cout << out.dump() << "\n";
    return out.value("ok", false) ? 0 : 1;
}
