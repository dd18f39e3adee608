#pragma once
// A document's list read in place. `j.value("files", json::array())` returns a copy of the member:
// at 100,000 files a job definition's file list is ~90 MB of JSON, copied to be counted.
//
//   for (const auto& f : member_or_empty(report, "files")) ...
//   std::size_t n = member_or_empty(definition, "files").size();

#include <string_view>

#include <nlohmann/json.hpp>

namespace archctl {

// The member `key` of the object `j`, in place; an empty array when `j` is not an object or has
// no such member.
[[nodiscard]] inline const nlohmann::json& member_or_empty(const nlohmann::json& j, std::string_view key) {
    static const nlohmann::json k_empty = nlohmann::json::array();
    if (!j.is_object()) return k_empty;
    auto it = j.find(key);
    return it == j.end() ? k_empty : *it;
}

}  // namespace archctl
