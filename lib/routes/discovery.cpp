#include "lib/routes/discovery.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/routes/naming.hpp"

namespace archctl::routes {
namespace {

bool clean_absolute(const std::string& path) {
    if (path.empty() || path.front() != '/') return false;
    std::size_t start = 1;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        std::string_view part(path.data() + start, end - start);
        if (part == "." || part == "..") return false;
        start = end + 1;
    }
    return true;
}

struct Side {
    std::string id, node, peer, path, peer_device;
    std::vector<ValveProblem> valve;
};

// Why folder `f` on `self` is no route side, or "" when it is one (then `peer` names the node).
std::string classify_folder(const clients::syncthing::Folder& f, const NodeSnapshot& self,
                            const std::map<std::string, const NodeSnapshot*>& by_device,
                            const std::map<std::string, std::string>& known_devices, std::string& peer) {
    if (!clean_absolute(f.path) || !path_below(f.path, self.sync_root))
        return fmt::format("outside the sync root {}", self.sync_root);
    if (f.type != "sendreceive") return fmt::format("type {} (a route is sendreceive)", f.type.empty() ? "unknown" : f.type);
    std::set<std::string> others;
    for (const auto& d : f.devices)
        if (d != self.device_id) others.insert(d);
    if (others.empty()) return "not shared with any other device";
    if (others.size() > 1) return fmt::format("shared with {} devices (a route has exactly two)", others.size() + 1);
    const std::string& other = *others.begin();
    std::string role;
    if (auto it = by_device.find(other); it != by_device.end()) {
        peer = it->second->node;
        role = config::to_string(it->second->role);
        if (it->second->role == self.role) return fmt::format("shared between two {} nodes ({})", role, peer);
        return "";
    }
    for (const auto& [node, device] : known_devices) {
        if (device == other) {
            peer = node;
            return "";
        }
    }
    return fmt::format("shared with device {}, which is no configured node", other.substr(0, 7));
}

}  // namespace

std::vector<DiscoveredRoute> Discovery::between(const std::string& cache, const std::string& archive) const {
    std::vector<DiscoveredRoute> out;
    for (const auto& r : routes)
        if (r.cache == cache && r.archive == archive) out.push_back(r);
    return out;
}

const DiscoveredRoute* Discovery::find(const std::string& id) const {
    for (const auto& r : routes)
        if (r.id == id) return &r;
    return nullptr;
}

std::string valve_text(const std::vector<NodeValve>& valve) {
    std::string out;
    for (const auto& v : valve) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", v.node, valve_summary(v.problems));
    return out;
}

std::string unreachable_text(const Discovery& d, const std::string& cache, const std::string& archive) {
    for (const std::string* node : {&cache, &archive}) {
        if (d.answered.contains(*node)) continue;
        auto it = d.unreachable.find(*node);
        return fmt::format("Syncthing of '{}' does not answer ({})", *node, it == d.unreachable.end() ? "not read" : it->second);
    }
    return "";
}

PairStatus look_up_pair(const Discovery& d, const std::string& cache, const std::string& archive) {
    PairStatus out;
    out.routes = d.between(cache, archive);
    if (!out.routes.empty()) {
        out.look = PairLook::found;
        return out;
    }
    for (const std::string* node : {&cache, &archive}) {
        if (d.answered.contains(*node)) continue;
        out.look = PairLook::unreachable;
        out.down = *node;
        auto it = d.unreachable.find(*node);
        out.why = it == d.unreachable.end() ? "not read" : it->second;
        return out;
    }
    out.look = PairLook::absent;
    return out;
}

Discovery classify(const std::vector<NodeSnapshot>& snapshots, const std::map<std::string, std::string>& known_devices) {
    Discovery out;
    std::map<std::string, const NodeSnapshot*> by_device, by_name;
    for (const auto& s : snapshots) {
        by_name[s.node] = &s;
        if (s.reachable && !s.device_id.empty()) by_device[s.device_id] = &s;
        if (s.reachable) out.answered.insert(s.node);
        else out.unreachable[s.node] = s.error.empty() ? std::string("not read") : s.error;
    }
    std::map<std::pair<std::string, std::string>, Side> sides;  // (node, folder id) → side
    for (const auto& s : snapshots) {
        if (!s.reachable) continue;
        for (const auto& f : s.folders) {
            std::string peer;
            std::string reason = classify_folder(f, s, by_device, known_devices, peer);
            if (!reason.empty()) {
                out.ignored.push_back({s.node, f.id, f.path, f.type, reason});
                continue;
            }
            sides[{s.node, f.id}] = Side{f.id, s.node, peer, f.path, {}, valve_problems(f)};
        }
    }
    std::set<std::string> paired;
    for (const auto& [key, side] : sides) {
        const NodeSnapshot* self = by_name.at(side.node);
        auto peer_it = by_name.find(side.peer);
        const NodeSnapshot* peer = peer_it == by_name.end() ? nullptr : peer_it->second;
        if (!peer || !peer->reachable) {
            out.half.push_back({side.id, side.node, side.peer, side.path,
                                fmt::format("Syncthing of '{}' could not be read", side.peer)});
            continue;
        }
        auto other = sides.find({side.peer, side.id});
        if (other == sides.end() || other->second.peer != side.node) {
            out.half.push_back({side.id, side.node, side.peer, side.path,
                                fmt::format("'{}' has no matching folder '{}'", side.peer, side.id)});
            continue;
        }
        if (self->role != config::Role::cache) continue;  // each pair once, from its cache side
        DiscoveredRoute r{side.id, side.node, side.peer, side.path, other->second.path, self->device_id, peer->device_id, {}};
        if (!side.valve.empty()) r.valve.push_back({side.node, side.valve});
        if (!other->second.valve.empty()) r.valve.push_back({side.peer, other->second.valve});
        out.routes.push_back(std::move(r));
    }
    std::sort(out.routes.begin(), out.routes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
}

NodeSnapshot read_snapshot(clients::syncthing::Api& client, const config::NodeConfig& node) {
    NodeSnapshot s;
    s.node = node.name;
    s.role = node.role;
    s.sync_root = strip_trailing_slashes(node.sync_root);
    auto status = client.status();
    if (!status.ok()) {
        s.error = status.error().message;
        s.error_code = status.error().code;
        return s;
    }
    s.device_id = status->my_id;
    auto folders = client.folders();
    auto devices = client.devices();
    auto options = client.options();
    if (!folders.ok() || !devices.ok() || !options.ok()) {
        const Error& e = !folders.ok() ? folders.error() : !devices.ok() ? devices.error() : options.error();
        s.error = e.message;
        s.error_code = e.code;
        return s;
    }
    s.folders = std::move(folders).value();
    s.devices = std::move(devices).value();
    if (auto it = options->find("listenAddresses"); it != options->end() && it->is_array())
        for (const auto& a : *it)
            if (a.is_string()) s.listen_addresses.push_back(a.get<std::string>());
    s.reachable = true;
    return s;
}

}  // namespace archctl::routes
