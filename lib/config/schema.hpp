#pragma once
// The config schema (docs/design.md "Configuration") as data: every known key, its type, and the known tables, so
// validation, unknown-key warnings ("did you mean") and `archctl config` share one list.

#include <string>
#include <vector>

namespace archctl::config {

enum class ValueType { string, boolean, integer, number, size, duration, string_array };  // number: integer or float

struct KeySpec {
    const char* pattern;  // dotted; "*" matches one name: "nodes.*.qbittorrent.url", "tier.*.cache"
    ValueType type;
    bool secret = false;  // value never printed
};

const std::vector<KeySpec>& schema();

// The spec for a dotted key, or nullptr when unknown.
const KeySpec* find_key(const std::string& dotted);

// True when `table` (dotted, with the node name substituted) is a table the schema knows.
bool known_table(const std::string& table);

// The closest known key name inside `table` for a misspelled `key` (empty when none is close).
std::string closest_key(const std::string& table, const std::string& key);

}  // namespace archctl::config
