#include "lib/jobs/route_lookup.hpp"

#include <fmt/format.h>

namespace archctl::jobs {
namespace {

bool below(const std::string& path, const std::string& root) {
    std::string r = root;
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    return path.rfind(r + "/", 0) == 0;
}

}  // namespace

Result<RouteRef> find_route(NodeHandle& source, NodeHandle& target) {
    ARCHCTL_TRY_ASSIGN(auto src_status, source.st().status());
    ARCHCTL_TRY_ASSIGN(auto dst_status, target.st().status());
    ARCHCTL_TRY_ASSIGN(auto src_folders, source.st().folders());
    ARCHCTL_TRY_ASSIGN(auto dst_folders, target.st().folders());
    auto shared_by_pair = [&](const clients::syncthing::Folder& f, const std::string& me, const std::string& peer) {
        if (f.type != "sendreceive" || f.devices.size() != 2) return false;
        bool has_me = false, has_peer = false;
        for (const auto& d : f.devices) {
            has_me = has_me || d == me;
            has_peer = has_peer || d == peer;
        }
        return has_me && has_peer;
    };
    for (const auto& a : src_folders) {
        if (!below(a.path, source.config().sync_root) || !shared_by_pair(a, src_status.my_id, dst_status.my_id)) continue;
        for (const auto& b : dst_folders) {
            if (b.id != a.id || !below(b.path, target.config().sync_root)) continue;
            if (!shared_by_pair(b, dst_status.my_id, src_status.my_id)) continue;
            return RouteRef{a.id, a.path, b.path};
        }
    }
    return Error("NO_ROUTE", fmt::format("no route between '{}' and '{}'", source.name(), target.name()),
                 fmt::format("create one with 'archctl route ensure {} {}'",
                             source.config().role == config::Role::cache ? source.name() : target.name(),
                             source.config().role == config::Role::cache ? target.name() : source.name()));
}

}  // namespace archctl::jobs
