// qBittorrent's share limits as archctl judges them: which limit applies to a torrent (its own,
// or the node's global one), what the action does, and when the preferences need not be read.

#include <doctest/doctest.h>

#include "lib/clients/qbittorrent/share_limits.hpp"

using namespace archctl::clients::qbittorrent;

namespace {

TorrentInfo torrent(double ratio, std::int64_t seeding, std::int64_t inactive = -1) {
    TorrentInfo t;
    t.ratio_limit = ratio;
    t.seeding_time_limit = seeding;
    t.inactive_seeding_time_limit = inactive;
    return t;
}

}  // namespace

TEST_CASE("share limits: the global setting from app/preferences") {
    auto g = GlobalShareLimits::from_preferences(
        {{"max_ratio_enabled", true}, {"max_ratio", 0}, {"max_seeding_time_enabled", false}, {"max_seeding_time", 10}, {"max_ratio_act", 3}});
    CHECK(g.ratio == 0);
    CHECK(g.seeding_minutes == -1);
    CHECK(g.action == ShareAction::remove_with_files);
    CHECK(g.any());
    CHECK(g.text() == "ratio 0 → remove the torrent and its files");
    CHECK_FALSE(GlobalShareLimits::from_preferences(nlohmann::json::object()).any());
    CHECK(GlobalShareLimits::from_preferences(nlohmann::json::object()).text() == "none");
}

TEST_CASE("share limits: a torrent that follows the global limit gets it, its own limits win") {
    GlobalShareLimits g;
    g.ratio = 0;
    g.action = ShareAction::remove_with_files;
    auto follows = effective_share_limits(torrent(-2, -2), g);
    CHECK(follows.removes());
    CHECK(follows.global);
    CHECK(follows.text() == "a global share limit (ratio 0) would remove the torrent and its files");
    auto none = effective_share_limits(torrent(-1, -1, -1), g);
    CHECK_FALSE(none.limited());
    CHECK(none.text().empty());
    auto own = effective_share_limits(torrent(2.5, -1), g);
    CHECK(own.removes());
    CHECK_FALSE(own.global);
    g.action = ShareAction::stop;
    CHECK(effective_share_limits(torrent(-2, -2), g).stops());
    g.action = ShareAction::remove;
    CHECK(effective_share_limits(torrent(-2, -2), g).removes());
    g.action = ShareAction::super_seeding;
    auto super = effective_share_limits(torrent(-2, -2), g);
    CHECK_FALSE(super.removes());
    CHECK_FALSE(super.stops());
}

TEST_CASE("share limits: a 5.2 torrent's own action wins over the global one") {
    GlobalShareLimits g;
    g.seeding_minutes = 60;
    g.action = ShareAction::stop;
    TorrentInfo t = torrent(-2, -2);
    t.share_limit_action = "RemoveWithContent";
    CHECK(effective_share_limits(t, g).removes());
    t.share_limit_action = "Default";
    CHECK(effective_share_limits(t, g).stops());
}

TEST_CASE("share limits: the preferences are needed only when a limit may apply") {
    CHECK_FALSE(may_be_limited(torrent(-1, -1, -1)));
    CHECK(may_be_limited(torrent(-2, -1)));
    CHECK(may_be_limited(torrent(-1, 30)));
    // qBittorrent's resolved limits, when sent, decide alone.
    TorrentInfo follows_none = torrent(-2, -2);
    follows_none.max_ratio = -1;
    follows_none.max_seeding_time = -1;
    CHECK_FALSE(may_be_limited(follows_none));
    follows_none.max_ratio = 0;
    CHECK(may_be_limited(follows_none));
}

TEST_CASE("share limits: a torrent added now follows the global limits") {
    GlobalShareLimits g;
    CHECK_FALSE(new_torrent_limits(g).limited());
    g.inactive_minutes = 5;
    g.action = ShareAction::remove;
    CHECK(new_torrent_limits(g).removes());
}
