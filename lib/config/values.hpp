#pragma once
// Inside lib/config: the settings as the layers supplied them, before load() turns them into a
// Config, and the readers config.cpp and tier_config.cpp share. Not part of the module's
// interface (lib/config/config.hpp is).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/result.hpp"
#include "lib/config/config.hpp"
#include "lib/config/schema.hpp"

namespace archctl::config {

// One setting as a layer supplied it, before it is turned into Config fields.
struct Value {
    ValueType type = ValueType::string;
    std::string text;                   // strings, and sizes/durations as written
    std::int64_t integer = 0;           // integers, sizes/durations in bytes/seconds
    double number = 0;                  // numbers (integer or float in TOML)
    bool boolean = false;
    std::vector<std::string> items;     // string arrays
    std::string origin;                 // "default", "user:<path>", ...
};

using Values = std::map<std::string, Value>;

// The text of `key`, or `fallback` when no layer set it.
[[nodiscard]] std::string str(const Values& values, const std::string& key, const std::string& fallback = {});
// Whether `key` is set and true.
[[nodiscard]] bool flag(const Values& values, const std::string& key);
// The string array under `key`; empty when no layer set it.
[[nodiscard]] std::vector<std::string> items(const Values& values, const std::string& key);
// "2.0", "1.5", "0.25": a number as `config` shows it (always with a decimal point).
[[nodiscard]] std::string format_number(double value);
// A value as `archctl config` shows it: secrets as <set>, sizes and durations in words, a URL's
// credentials masked.
[[nodiscard]] std::string display_value(const std::string& key, const Value& v, const Config& config);

// The [tier.NAME] tables (tier_config.cpp): the names present in any layer, and one policy built
// and checked against the configured nodes.
[[nodiscard]] std::vector<std::string> tier_names(const Values& values);
[[nodiscard]] Result<TierPolicy> build_tier(const Values& values, const Config& config, const std::string& name);

}  // namespace archctl::config
