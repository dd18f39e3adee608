#pragma once
// Helpers of the message codecs (lib/node/wire/ops_*.cpp): optional keys and lists that may be
// absent. Not part of the wire's interface.

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace archctl::node::json_fields {

// Writes `key` only when `v` holds a value.
template <class T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
    if (v) j[key] = *v;
}

// Reads `key` into `v` when present and not null; leaves `v` as it was otherwise.
template <class T>
void get_optional(const nlohmann::json& j, const char* key, std::optional<T>& v) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) v = it->template get<T>();
}

// The list under `key`; empty when absent or null.
template <class T>
std::vector<T> get_list(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    return it->template get<std::vector<T>>();
}

}  // namespace archctl::node::json_fields
