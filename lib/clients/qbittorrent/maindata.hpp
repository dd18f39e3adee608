#pragma once
// MainData: a local mirror of qBittorrent's sync/maindata, kept current from deltas.
//
// Call order: start with rid 0 (full snapshot), then pass the `rid` of the last reply. apply()
// merges a reply field-wise: changed torrent fields overwrite, `*_removed` lists drop entries,
// and `full_update: true` discards everything first (qBittorrent sends it whenever it cannot
// continue from our rid: restart, new session). The sync state lives in qBittorrent's login
// session, so one MainData belongs to one client login.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/clients/qbittorrent/types.hpp"

namespace archctl::clients::qbittorrent {

class MainData {
public:
    // The rid to send next (0 before the first reply).
    [[nodiscard]] std::int64_t rid() const { return m_rid; }

    // Merge one sync/maindata reply. Non-object replies are ignored.
    void apply(const nlohmann::json& reply);

    // Forget everything and start again from rid 0.
    void reset();

    // Torrents by qB id, each object with every field seen so far (no `hash` field: the key is it).
    [[nodiscard]] const std::map<std::string, nlohmann::json>& torrent_objects() const { return m_torrents; }
    [[nodiscard]] const std::map<std::string, nlohmann::json>& categories() const { return m_categories; }
    [[nodiscard]] const std::set<std::string>& tags() const { return m_tags; }
    [[nodiscard]] const nlohmann::json& server_state() const { return m_server_state; }
    // How many replies carried full_update (1 after the first call, more after resets).
    [[nodiscard]] int full_updates() const { return m_full_updates; }

    // The torrents mapped to TorrentInfo (id filled from the key), ordered by id.
    [[nodiscard]] std::vector<TorrentInfo> torrents() const;

private:
    std::int64_t m_rid = 0;
    int m_full_updates = 0;
    std::map<std::string, nlohmann::json> m_torrents;
    std::map<std::string, nlohmann::json> m_categories;
    std::set<std::string> m_tags;
    std::map<std::string, nlohmann::json> m_trackers;
    nlohmann::json m_server_state = nlohmann::json::object();
};

}  // namespace archctl::clients::qbittorrent
