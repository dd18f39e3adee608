#pragma once
// qbittorrent::Api: what archctl's job steps, eviction and status ask of one qBittorrent — the
// narrow interface qbittorrent::Client implements over the WebUI API, and test doubles implement
// in memory. The semantics (ids, errors, batching) are Client's; see client.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/qbittorrent/capabilities.hpp"
#include "lib/clients/qbittorrent/maindata.hpp"
#include "lib/clients/qbittorrent/types.hpp"

namespace archctl::clients::qbittorrent {

class Api {
public:
    virtual ~Api() = default;

    [[nodiscard]] virtual Result<Capabilities> capabilities() = 0;
    [[nodiscard]] virtual Result<std::vector<TorrentInfo>> torrents(const std::vector<std::string>& ids) = 0;
    [[nodiscard]] virtual Result<std::vector<TorrentInfo>> all_torrents() = 0;
    [[nodiscard]] virtual Result<std::vector<TorrentFile>> files(const std::string& id) = 0;
    [[nodiscard]] virtual Result<std::string> export_torrent(const std::string& id) = 0;
    // torrents/trackers + torrents/webseeds: the trackers (DHT, PeX and LSD left out) and web seeds.
    [[nodiscard]] virtual Result<Announce> announce(const std::string& id) = 0;
    [[nodiscard]] virtual Status add(const AddTorrent& torrent) = 0;
    [[nodiscard]] virtual Status set_file_priority(const std::string& id, const std::vector<std::uint32_t>& indices,
                                                   FilePriority priority) = 0;
    [[nodiscard]] virtual Status recheck(const std::vector<std::string>& ids) = 0;
    [[nodiscard]] virtual Status stop(const std::vector<std::string>& ids) = 0;
    [[nodiscard]] virtual Status start(const std::vector<std::string>& ids) = 0;
    [[nodiscard]] virtual Status remove(const std::vector<std::string>& ids, DeleteData data) = 0;
    [[nodiscard]] virtual Status add_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) = 0;
    [[nodiscard]] virtual Status remove_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) = 0;
    [[nodiscard]] virtual Status delete_tags(const std::vector<std::string>& tags) = 0;
    // torrents/setShareLimits: the torrents' own limits set to none (ratio, seeding time and,
    // on 4.6+, inactive seeding time), so the global limits no longer apply to them.
    [[nodiscard]] virtual Status clear_share_limits(const std::vector<std::string>& ids) = 0;
    [[nodiscard]] virtual Result<Categories> categories() = 0;
    // torrents/createCategory with the given save path ("" for none).
    [[nodiscard]] virtual Status create_category(const std::string& name, const std::string& save_path) = 0;
    [[nodiscard]] virtual Status sync(MainData& data) = 0;
    // app/preferences as qBittorrent sends it (the keys archctl reads: excluded_file_names_enabled,
    // excluded_file_names, incomplete_files_ext).
    [[nodiscard]] virtual Result<nlohmann::json> preferences() = 0;
    // Requests sent so far (HTTP requests for Client).
    [[nodiscard]] virtual std::uint64_t request_count() const = 0;
};

}  // namespace archctl::clients::qbittorrent
