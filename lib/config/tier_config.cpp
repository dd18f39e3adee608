// The [tier.NAME] tables of the config: each policy's cache and archive nodes, its goal
// (keep_free or max_used), what it archives (archive_when, exclude), its order and evict mode,
// checked against the configured nodes with one-line errors that name the key, its value and
// the layer it came from.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lib/config/criteria.hpp"
#include "lib/config/values.hpp"

namespace archctl::config {
namespace {

Error tier_error(std::string message, std::string hint) {
    return Error(ErrorCode::CONFIG_INVALID, "invalid config: " + std::move(message), std::move(hint));
}

// "tier.X.key 'value' ... (origin)": a bad value, named with where it came from.
Error tier_value_error(const Values& values, const std::string& key, const std::string& what, std::string hint) {
    const Value& v = values.at(key);
    std::string shown = v.type == ValueType::string_array ? display_value(key, v, Config{})
                        : v.type == ValueType::number     ? "'" + format_number(v.number) + "'"
                                                          : "'" + v.text + "'";
    return tier_error(fmt::format("{} {} {} ({})", key, shown, what, v.origin), std::move(hint));
}

std::string node_names(const Config& config, Role role) {
    std::string out;
    for (const auto& [name, node] : config.nodes)
        if (node.role == role) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? "none configured" : out;
}

Status check_node(const Values& values, const Config& config, const std::string& key, const std::string& name, Role role) {
    std::string wanted = to_string(role);
    std::string hint = fmt::format("set {} to {} node's name ({} nodes: {})", key, role == Role::cache ? "a cache" : "an archive",
                                   wanted, node_names(config, role));
    const NodeConfig* node = config.node(name);
    if (!node) return tier_value_error(values, key, fmt::format("names '{}', which is not a configured node", name), hint);
    if (node->role != role)
        return tier_value_error(values, key, fmt::format("names '{}', which is {} {} node, not {} {} node", name,
                                                         node->role == Role::cache ? "a" : "an", to_string(node->role),
                                                         role == Role::cache ? "a" : "an", wanted),
                                hint);
    return {};
}

// "80%" -> 0.8; nullopt unless 0 < N < 100.
std::optional<double> parse_percent(const std::string& text) {
    if (text.size() < 2 || text.back() != '%') return std::nullopt;
    std::string digits = text.substr(0, text.size() - 1);
    char* end = nullptr;
    double n = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || !(n > 0 && n < 100)) return std::nullopt;
    return n / 100.0;
}

template <typename Enum>
Result<Enum> tier_word(const Values& values, const std::string& key, Enum fallback,
                       std::initializer_list<std::pair<const char*, Enum>> words) {
    auto it = values.find(key);
    if (it == values.end()) return fallback;
    std::string list;
    for (const auto& [word, value] : words) {
        if (it->second.text == word) return value;
        list += (list.empty() ? "" : ", ") + std::string(word);
    }
    return tier_value_error(values, key, fmt::format("is not one of {}", list), fmt::format("set {} to one of {}", key, list));
}

Result<Criteria> build_archive_when(const Values& values, const std::string& name) {
    std::string p = "tier." + name + ".archive_when.";
    Criteria c;
    c.categories = items(values, p + "categories");
    c.tags = items(values, p + "tags");
    c.names = items(values, p + "names");
    if (auto it = values.find(p + "completed_before"); it != values.end()) {
        auto bound = parse_time_bound(it->second.text);
        if (!bound.ok())
            return tier_value_error(values, p + "completed_before", "is not an age or a date",
                                    fmt::format("set {} to an age such as \"14d\" or a UTC date such as \"2026-01-31\"",
                                                p + "completed_before"));
        c.completed_before = bound.value();
    }
    if (auto it = values.find(p + "inactive_for"); it != values.end()) c.inactive_for_s = it->second.integer;
    if (auto it = values.find(p + "min_seeding_time"); it != values.end()) c.min_seeding_time_s = it->second.integer;
    if (auto it = values.find(p + "min_ratio"); it != values.end()) {
        if (!std::isfinite(it->second.number) || it->second.number < 0)
            return tier_value_error(values, p + "min_ratio", "is not a ratio of 0 or more", fmt::format("set {} to a ratio such as 2.0", p + "min_ratio"));
        c.min_ratio = it->second.number;
    }
    if (auto it = values.find(p + "larger_than"); it != values.end()) c.larger_than = static_cast<std::uint64_t>(it->second.integer);
    c.any = flag(values, p + "any");
    std::string x = "tier." + name + ".exclude.";
    c.exclude_categories = items(values, x + "categories");
    c.exclude_tags = items(values, x + "tags");
    c.exclude_names = items(values, x + "names");
    if (c.empty())
        return tier_error(fmt::format("tier.{}.archive_when selects nothing; set e.g. completed_before = \"14d\"", name),
                          fmt::format("add archive_when = {{ completed_before = \"14d\" }} to [tier.{}]", name));
    return c;
}

}  // namespace

Result<TierPolicy> build_tier(const Values& values, const Config& config, const std::string& name) {
    std::string p = "tier." + name + ".";
    TierPolicy t;
    t.name = name;
    t.cache = str(values, p + "cache");
    if (t.cache.empty())
        return tier_error(fmt::format("tier '{}' has no 'cache'", name),
                          fmt::format("set {}cache to a cache node's name (cache nodes: {})", p, node_names(config, Role::cache)));
    ARCHCTL_TRY_STATUS(check_node(values, config, p + "cache", t.cache, Role::cache));
    t.archive = items(values, p + "archive");
    if (t.archive.empty())
        return tier_error(fmt::format("tier '{}' has no 'archive'", name),
                          fmt::format("set {}archive = [\"NODE\"] to archive nodes (archive nodes: {})", p,
                                      node_names(config, Role::archive)));
    for (const std::string& node : t.archive) ARCHCTL_TRY_STATUS(check_node(values, config, p + "archive", node, Role::archive));
    bool keep_free = values.count(p + "keep_free") > 0, max_used = values.count(p + "max_used") > 0;
    std::string goal_hint = fmt::format("set exactly one of {0}keep_free = \"200G\" or {0}max_used = \"80%\"", p);
    if (keep_free == max_used)
        return tier_error(keep_free ? fmt::format("tier '{}' sets both keep_free and max_used", name)
                                    : fmt::format("tier '{}' has no goal", name), goal_hint);
    if (keep_free) t.keep_free = static_cast<std::uint64_t>(values.at(p + "keep_free").integer);
    if (max_used) {
        t.max_used = parse_percent(values.at(p + "max_used").text);
        if (!t.max_used)
            return tier_value_error(values, p + "max_used", "is not a percentage between 0% and 100%",
                                    fmt::format("set {}max_used to a percentage such as \"80%\"", p));
    }
    ARCHCTL_TRY_ASSIGN(t.archive_when, build_archive_when(values, name));
    ARCHCTL_TRY_ASSIGN(t.order, tier_word<TierOrder>(values, p + "order", TierOrder::oldest,
                                                     {{"oldest", TierOrder::oldest}, {"largest", TierOrder::largest},
                                                      {"least_active", TierOrder::least_active}}));
    ARCHCTL_TRY_ASSIGN(t.evict, tier_word<TierEvict>(values, p + "evict", TierEvict::to_goal,
                                                     {{"to_goal", TierEvict::to_goal}, {"always", TierEvict::always},
                                                      {"never", TierEvict::never}}));
    return t;
}

// The names of [tier.NAME] tables present in any layer.
std::vector<std::string> tier_names(const Values& values) {
    std::vector<std::string> names;
    for (const auto& [key, v] : values) {
        if (key.rfind("tier.", 0) != 0) continue;
        std::string name = key.substr(5, key.find('.', 5) - 5);
        if (names.empty() || names.back() != name) names.push_back(name);
    }
    return names;
}

}  // namespace archctl::config
