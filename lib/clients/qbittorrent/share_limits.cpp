#include "lib/clients/qbittorrent/share_limits.hpp"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace archctl::clients::qbittorrent {
namespace {

bool flag(const nlohmann::json& prefs, const char* key) {
    auto it = prefs.find(key);
    return it != prefs.end() && it->is_boolean() && it->get<bool>();
}

double number(const nlohmann::json& prefs, const char* key) {
    auto it = prefs.find(key);
    return it != prefs.end() && it->is_number() ? it->get<double>() : -1;
}

// qBittorrent's action numbers: 0 stop (pause on 4.x), 1 remove, 2 super seeding, 3 remove with
// the files.
ShareAction action_of(int n) {
    switch (n) {
        case 1: return ShareAction::remove;
        case 2: return ShareAction::super_seeding;
        case 3: return ShareAction::remove_with_files;
        default: return ShareAction::stop;
    }
}

std::string format_ratio(double r) { return fmt::format("{:g}", r); }

std::vector<std::string> limit_texts(double ratio, std::int64_t seeding, std::int64_t inactive) {
    std::vector<std::string> out;
    if (ratio >= 0) out.push_back(fmt::format("ratio {}", format_ratio(ratio)));
    if (seeding >= 0) out.push_back(fmt::format("seeding time {} min", seeding));
    if (inactive >= 0) out.push_back(fmt::format("inactive seeding time {} min", inactive));
    return out;
}

}  // namespace

std::string describe(ShareAction action) {
    switch (action) {
        case ShareAction::stop: return "stop it";
        case ShareAction::remove: return "remove the torrent";
        case ShareAction::remove_with_files: return "remove the torrent and its files";
        case ShareAction::super_seeding: return "turn on super seeding";
    }
    return "stop it";
}

GlobalShareLimits GlobalShareLimits::from_preferences(const nlohmann::json& prefs) {
    GlobalShareLimits g;
    if (!prefs.is_object()) return g;
    if (flag(prefs, "max_ratio_enabled")) g.ratio = number(prefs, "max_ratio");
    if (flag(prefs, "max_seeding_time_enabled")) g.seeding_minutes = static_cast<std::int64_t>(number(prefs, "max_seeding_time"));
    if (flag(prefs, "max_inactive_seeding_time_enabled"))
        g.inactive_minutes = static_cast<std::int64_t>(number(prefs, "max_inactive_seeding_time"));
    g.action = action_of(static_cast<int>(number(prefs, "max_ratio_act")));
    return g;
}

std::string GlobalShareLimits::text() const {
    auto limits = limit_texts(ratio, seeding_minutes, inactive_minutes);
    if (limits.empty()) return "none";
    return fmt::format("{} → {}", fmt::join(limits, ", "), describe(action));
}

std::string EffectiveShareLimits::text() const {
    auto limits = limit_texts(ratio, seeding_minutes, inactive_minutes);
    if (limits.empty()) return "";
    return fmt::format("a {}share limit ({}) would {}", global ? "global " : "", fmt::join(limits, ", "), describe(action));
}

EffectiveShareLimits effective_share_limits(const TorrentInfo& t, const GlobalShareLimits& g) {
    EffectiveShareLimits e;
    // -2 follows the global limit, -1 (or any other negative value) is none.
    auto pick = [&e](double own, double global) {
        if (own == -2) {
            if (global >= 0) e.global = true;
            return global;
        }
        return own >= 0 ? own : -1.0;
    };
    e.ratio = pick(t.ratio_limit, g.ratio);
    e.seeding_minutes = static_cast<std::int64_t>(pick(static_cast<double>(t.seeding_time_limit), static_cast<double>(g.seeding_minutes)));
    e.inactive_minutes =
        static_cast<std::int64_t>(pick(static_cast<double>(t.inactive_seeding_time_limit), static_cast<double>(g.inactive_minutes)));
    e.action = g.action;
    const std::string& own = t.share_limit_action;
    if (own == "Stop") e.action = ShareAction::stop;
    else if (own == "Remove") e.action = ShareAction::remove;
    else if (own == "RemoveWithContent") e.action = ShareAction::remove_with_files;
    else if (own == "EnableSuperSeeding") e.action = ShareAction::super_seeding;
    return e;
}

bool may_be_limited(const TorrentInfo& t) {
    if (t.max_ratio && t.max_seeding_time)
        return *t.max_ratio >= 0 || *t.max_seeding_time >= 0 || (t.max_inactive_seeding_time && *t.max_inactive_seeding_time >= 0);
    auto may = [](double own) { return own == -2 || own >= 0; };
    return may(t.ratio_limit) || may(static_cast<double>(t.seeding_time_limit)) || may(static_cast<double>(t.inactive_seeding_time_limit));
}

EffectiveShareLimits new_torrent_limits(const GlobalShareLimits& g) {
    TorrentInfo t;
    t.ratio_limit = -2;
    t.seeding_time_limit = -2;
    t.inactive_seeding_time_limit = -2;
    return effective_share_limits(t, g);
}

}  // namespace archctl::clients::qbittorrent
