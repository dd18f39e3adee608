#pragma once
// qBittorrent's share limits: when a torrent has seeded to a ratio, for a seeding time or (4.6+)
// for an inactive seeding time, qBittorrent acts on it — stops (pauses) it, removes it, removes
// it with its files, or turns on super seeding. Each limit is the torrent's own (a value, or
// "none") or follows the node's global setting; the action is the global one (5.2+ also has a
// per-torrent action).
//
// archctl's proofs rely on copies that will stay: an archive copy whose effective action can
// remove it (or its files) is no copy tomorrow, whatever its disk shows now. A torrent archctl
// adds gets its own limits set to none (Client::clear_share_limits, AddTorrent::no_share_limits)
// unless the node's config leaves it to the global limits.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/clients/qbittorrent/types.hpp"

namespace archctl::clients::qbittorrent {

enum class ShareAction { stop, remove, remove_with_files, super_seeding };

// "stop it", "remove the torrent", "remove the torrent and its files", "turn on super seeding".
std::string describe(ShareAction action);

// The node's global limits (app/preferences); -1 where a limit is off.
struct GlobalShareLimits {
    double ratio = -1;
    std::int64_t seeding_minutes = -1;
    std::int64_t inactive_minutes = -1;
    ShareAction action = ShareAction::stop;

    bool any() const { return ratio >= 0 || seeding_minutes >= 0 || inactive_minutes >= 0; }
    // From app/preferences (max_ratio_enabled, max_ratio, max_seeding_time_enabled,
    // max_seeding_time, max_inactive_seeding_time_enabled, max_inactive_seeding_time,
    // max_ratio_act); missing keys are limits that are off.
    static GlobalShareLimits from_preferences(const nlohmann::json& prefs);
    // "ratio 0, seeding time 10 min → remove the torrent and its files", or "none".
    std::string text() const;
};

// The limits that apply to one torrent now, and where each comes from.
struct EffectiveShareLimits {
    double ratio = -1;
    std::int64_t seeding_minutes = -1;
    std::int64_t inactive_minutes = -1;
    bool global = false;  // at least one limit in force comes from the global setting
    ShareAction action = ShareAction::stop;

    bool limited() const { return ratio >= 0 || seeding_minutes >= 0 || inactive_minutes >= 0; }
    // A limit in force whose action takes the torrent out of qBittorrent (with or without its files).
    bool removes() const { return limited() && (action == ShareAction::remove || action == ShareAction::remove_with_files); }
    // A limit in force whose action stops the torrent seeding.
    bool stops() const { return limited() && action == ShareAction::stop; }
    // "a global ratio limit of 0 would remove the torrent and its files", or "" when unlimited.
    std::string text() const;
};

[[nodiscard]] EffectiveShareLimits effective_share_limits(const TorrentInfo& torrent, const GlobalShareLimits& global);

// Whether any share limit may apply to the torrent, from its own fields alone: the limits in
// force as qBittorrent resolved them when it sends them (max_ratio, max_seeding_time, ...), else
// its own limits (one that follows the global setting may apply). False: no limit applies, and
// the node's preferences need not be read.
[[nodiscard]] bool may_be_limited(const TorrentInfo& torrent);

// The limits a torrent added now would get, when it follows the global ones.
[[nodiscard]] EffectiveShareLimits new_torrent_limits(const GlobalShareLimits& global);

}  // namespace archctl::clients::qbittorrent
