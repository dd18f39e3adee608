#pragma once
// Helpers of the message codecs (lib/node/wire/ops_*.cpp): optional keys and lists that may be
// absent. Not part of the wire's interface.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
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

// The enumerator of `all` whose wire name (its to_string) is `text`; nullopt for any other text.
template <class E, std::size_t N>
std::optional<E> parse_enum(std::string_view text, const E (&all)[N]) {
    for (E e : all)
        if (to_string(e) == text) return e;
    return std::nullopt;
}

// The enumerator of `all` named by the string `j`; another name throws (so the message holding
// it is invalid), saying "unknown <what> '<text>'".
template <class E, std::size_t N>
E enum_from_json(const nlohmann::json& j, const E (&all)[N], const char* what) {
    const auto text = j.get<std::string>();
    if (auto e = parse_enum(text, all)) return *e;
    throw nlohmann::json::other_error::create(501, std::string("unknown ") + what + " '" + text + "'", &j);
}

}  // namespace archctl::node::json_fields
