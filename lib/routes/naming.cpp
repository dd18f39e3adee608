#include "lib/routes/naming.hpp"

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"

namespace archctl::routes {

std::string id_component(std::string_view node_name) {
    constexpr std::size_t k_max = 24;
    std::string out;
    for (char c : node_name) {
        char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
        if (keep) {
            out.push_back(lower);
        } else if (!out.empty() && out.back() != '-') {
            out.push_back('-');
        }
        if (out.size() >= k_max) break;
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? std::string("node") : out;
}

std::string make_route_id(std::string_view cache, std::string_view archive, std::string_view suffix) {
    return fmt::format("archctl-{}-{}-{}", id_component(cache), id_component(archive), suffix);
}

std::string route_folder_path(std::string_view sync_root, std::string_view route_id) {
    std::string root = strip_trailing_slashes(std::string(sync_root));
    if (root == "/") return fmt::format("/{}", route_id);
    return fmt::format("{}/{}", root, route_id);
}

bool path_below(std::string_view path, std::string_view root) {
    const std::string p = strip_trailing_slashes(std::string(path));
    const std::string r = strip_trailing_slashes(std::string(root));
    if (r.empty() || p.size() <= r.size()) return false;
    if (r == "/") return p.front() == '/' && p.size() > 1;
    return p.compare(0, r.size(), r) == 0 && p[r.size()] == '/';
}

namespace {

// "http://host:port/…" → "host" ("[::1]" keeps its brackets).
std::string url_host(std::string_view url) {
    if (auto scheme = url.find("://"); scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
    url = url.substr(0, url.find('/'));
    if (auto at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
    if (!url.empty() && url.front() == '[') return std::string(url.substr(0, url.find(']') + 1));
    return std::string(url.substr(0, url.find(':')));
}

}  // namespace

std::vector<std::string> dialable_addresses(const std::vector<std::string>& listen, std::string_view rest_url) {
    std::string host = url_host(rest_url);
    if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
    std::vector<std::string> out;
    auto add = [&](std::string a) {
        for (const auto& e : out)
            if (e == a) return;
        out.push_back(std::move(a));
    };
    for (const auto& a : listen) {
        if (a == "default") {
            add(fmt::format("tcp://{}:22000", host));
            add("dynamic");
            continue;
        }
        auto scheme_end = a.find("://");
        if (scheme_end == std::string::npos) {
            add(a);
            continue;
        }
        std::string scheme = a.substr(0, scheme_end);
        std::string rest = a.substr(scheme_end + 3);
        if (rest.empty() || (scheme.rfind("tcp", 0) != 0 && scheme.rfind("quic", 0) != 0)) {
            add(a);  // relay:// and the like carry their own reachability
            continue;
        }
        std::string addr_host = rest.front() == '[' ? rest.substr(0, rest.find(']') + 1) : rest.substr(0, rest.rfind(':'));
        std::string port = rest.substr(addr_host.size());
        if (addr_host.empty() || addr_host == "0.0.0.0" || addr_host == "[::]") addr_host = host;
        add(fmt::format("{}://{}{}", scheme, addr_host, port));
    }
    if (out.empty()) out.push_back("dynamic");
    return out;
}

std::string config_fingerprint(const nlohmann::json& object) {
    return "xxh3:" + xxh3_128_hex(object.dump());
}

}  // namespace archctl::routes
