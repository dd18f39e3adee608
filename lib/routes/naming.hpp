#pragma once
// Route IDs, folder paths and config fingerprints: the pure rules provisioning and rollback use.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace archctl::routes {

// A node name reduced to what a Syncthing folder ID and a file name tolerate everywhere:
// lowercase letters, digits and '-' (other characters become '-', runs collapse, at most 24).
[[nodiscard]] std::string id_component(std::string_view node_name);

// "archctl-<cache>-<archive>-<suffix>" with both names through id_component(). `suffix` is a
// short random lowercase hex string chosen once per attempt.
[[nodiscard]] std::string make_route_id(std::string_view cache, std::string_view archive, std::string_view suffix);

// The folder path of a route on a node: "<sync_root>/<route id>" (sync_root without trailing '/').
[[nodiscard]] std::string route_folder_path(std::string_view sync_root, std::string_view route_id);

// True when `path` lies strictly below `root` (lexically; both absolute, no "." or "..").
[[nodiscard]] bool path_below(std::string_view path, std::string_view root);

// Addresses a peer can dial for a Syncthing whose options.listenAddresses are `listen` and
// whose GUI/REST URL is `rest_url`: explicit tcp:// and quic:// addresses are kept, a wildcard or
// empty host is replaced by the REST URL's host, "default" becomes tcp://<host>:22000 (plus
// "dynamic"), "dynamic" and relay addresses are kept. Never empty (falls back to "dynamic").
[[nodiscard]] std::vector<std::string> dialable_addresses(const std::vector<std::string>& listen,
                                                          std::string_view rest_url);

// "xxh3:<32 hex>" of a config object as Syncthing returned it (keys sorted, compact dump). Two
// reads of an unchanged object give the same fingerprint; any change to any key changes it.
[[nodiscard]] std::string config_fingerprint(const nlohmann::json& object);

}  // namespace archctl::routes
