#include "lib/config/schema.hpp"

#include <algorithm>

namespace archctl::config {
namespace {

bool match(const std::string& pattern, const std::string& key) {
    size_t p = 0, k = 0;
    while (p < pattern.size() && k < key.size()) {
        if (pattern[p] == '*') {
            size_t dot = key.find('.', k);
            if (dot == k) return false;
            k = dot == std::string::npos ? key.size() : dot;
            ++p;
            continue;
        }
        if (pattern[p] != key[k]) return false;
        ++p;
        ++k;
    }
    return p == pattern.size() && k == key.size();
}

std::string table_of(const std::string& dotted) {
    auto dot = dotted.rfind('.');
    return dot == std::string::npos ? std::string() : dotted.substr(0, dot);
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

}  // namespace

const std::vector<KeySpec>& schema() {
    static const std::vector<KeySpec> keys = {
        {"state_dir", ValueType::string},
        {"transfer.min_free", ValueType::size},
        {"transfer.verify_transit", ValueType::boolean},
        {"transfer.outage_wait", ValueType::duration},
        {"routes.policy", ValueType::string},
        {"routes.provision_timeout", ValueType::duration},
        {"routes.check_max_age", ValueType::duration},
        {"retention.tombstone_days", ValueType::integer},
        {"evict.count_shared_copies", ValueType::boolean},
        {"notify.exec", ValueType::string_array},
        {"notify.url", ValueType::string},
        {"safe.trusted", ValueType::string_array},
        {"nodes.*.role", ValueType::string},
        {"nodes.*.qb_root", ValueType::string},
        {"nodes.*.sync_root", ValueType::string},
        {"nodes.*.transport", ValueType::string},
        {"nodes.*.exec", ValueType::string_array},
        {"nodes.*.timeout", ValueType::duration},
        {"nodes.*.share_limits", ValueType::string},
        {"nodes.*.labels", ValueType::string},
        {"nodes.*.category_map.*", ValueType::string},
        {"nodes.*.qbittorrent.url", ValueType::string},
        {"nodes.*.qbittorrent.username", ValueType::string},
        {"nodes.*.qbittorrent.password", ValueType::string, true},
        {"nodes.*.qbittorrent.password_file", ValueType::string},
        {"nodes.*.qbittorrent.ca_file", ValueType::string},
        {"nodes.*.qbittorrent.insecure_tls", ValueType::boolean},
        {"nodes.*.qbittorrent.export_timeout", ValueType::duration},
        {"nodes.*.qbittorrent.bt_backup", ValueType::string},
        {"nodes.*.syncthing.url", ValueType::string},
        {"nodes.*.syncthing.api_key", ValueType::string, true},
        {"nodes.*.syncthing.api_key_file", ValueType::string},
        {"nodes.*.syncthing.ca_file", ValueType::string},
        {"nodes.*.syncthing.insecure_tls", ValueType::boolean},
        {"nodes.*.syncthing.addresses", ValueType::string_array},
        {"tier.*.cache", ValueType::string},
        {"tier.*.archive", ValueType::string_array},
        {"tier.*.keep_free", ValueType::size},
        {"tier.*.max_used", ValueType::string},
        {"tier.*.order", ValueType::string},
        {"tier.*.evict", ValueType::string},
        {"tier.*.archive_when.completed_before", ValueType::string},
        {"tier.*.archive_when.inactive_for", ValueType::duration},
        {"tier.*.archive_when.min_seeding_time", ValueType::duration},
        {"tier.*.archive_when.min_ratio", ValueType::number},
        {"tier.*.archive_when.larger_than", ValueType::size},
        {"tier.*.archive_when.categories", ValueType::string_array},
        {"tier.*.archive_when.tags", ValueType::string_array},
        {"tier.*.archive_when.names", ValueType::string_array},
        {"tier.*.archive_when.any", ValueType::boolean},
        {"tier.*.exclude.categories", ValueType::string_array},
        {"tier.*.exclude.tags", ValueType::string_array},
        {"tier.*.exclude.names", ValueType::string_array},
    };
    return keys;
}

const KeySpec* find_key(const std::string& dotted) {
    for (const KeySpec& spec : schema())
        if (match(spec.pattern, dotted)) return &spec;
    return nullptr;
}

bool known_table(const std::string& table) {
    if (table.empty()) return true;
    for (const KeySpec& spec : schema()) {
        std::string t = table_of(spec.pattern);
        if (match(t, table)) return true;
    }
    return match("nodes", table) || match("tier", table);
}

std::string closest_key(const std::string& table, const std::string& key) {
    std::string best;
    size_t best_distance = 3;  // suggest only close misspellings
    for (const KeySpec& spec : schema()) {
        std::string pattern = spec.pattern;
        if (!match(table_of(pattern), table)) continue;
        std::string name = pattern.substr(pattern.rfind('.') == std::string::npos ? 0 : pattern.rfind('.') + 1);
        size_t d = edit_distance(name, key);
        if (d < best_distance) {
            best_distance = d;
            best = name;
        }
    }
    return best;
}

}  // namespace archctl::config
