#include "lib/clients/qbittorrent/maindata.hpp"

namespace archctl::clients::qbittorrent {
namespace {

// Merge the object entries of `delta[key]` into `into`, field-wise for object values.
void merge_map(std::map<std::string, nlohmann::json>& into, const nlohmann::json& reply, const char* key) {
    auto it = reply.find(key);
    if (it == reply.end() || !it->is_object()) return;
    for (const auto& [id, fields] : it->items()) {
        auto& entry = into[id];
        if (fields.is_object() && (entry.is_object() || entry.is_null())) {
            if (entry.is_null()) entry = nlohmann::json::object();
            for (const auto& [field, value] : fields.items()) entry[field] = value;
        } else {
            entry = fields;
        }
    }
}

void remove_keys(std::map<std::string, nlohmann::json>& from, const nlohmann::json& reply, const char* key) {
    auto it = reply.find(key);
    if (it == reply.end() || !it->is_array()) return;
    for (const auto& id : *it) if (id.is_string()) from.erase(id.get<std::string>());
}

}  // namespace

void MainData::reset() {
    m_rid = 0;
    m_torrents.clear();
    m_categories.clear();
    m_tags.clear();
    m_trackers.clear();
    m_server_state = nlohmann::json::object();
}

void MainData::apply(const nlohmann::json& reply) {
    if (!reply.is_object()) return;
    auto full = reply.find("full_update");
    if (full != reply.end() && full->is_boolean() && full->get<bool>()) {
        const auto keep_count = m_full_updates;
        reset();
        m_full_updates = keep_count + 1;
    }
    merge_map(m_torrents, reply, "torrents");
    remove_keys(m_torrents, reply, "torrents_removed");
    merge_map(m_categories, reply, "categories");
    remove_keys(m_categories, reply, "categories_removed");
    merge_map(m_trackers, reply, "trackers");
    remove_keys(m_trackers, reply, "trackers_removed");
    if (auto tags = reply.find("tags"); tags != reply.end() && tags->is_array()) {
        for (const auto& t : *tags) if (t.is_string()) m_tags.insert(t.get<std::string>());
    }
    if (auto tags = reply.find("tags_removed"); tags != reply.end() && tags->is_array()) {
        for (const auto& t : *tags) if (t.is_string()) m_tags.erase(t.get<std::string>());
    }
    if (auto state = reply.find("server_state"); state != reply.end() && state->is_object()) {
        for (const auto& [field, value] : state->items()) m_server_state[field] = value;
    }
    if (auto rid = reply.find("rid"); rid != reply.end() && rid->is_number_integer()) m_rid = rid->get<std::int64_t>();
}

std::vector<TorrentInfo> MainData::torrents() const {
    std::vector<TorrentInfo> out;
    out.reserve(m_torrents.size());
    for (const auto& [id, object] : m_torrents) out.push_back(parse_torrent_info(object, id));
    return out;
}

}  // namespace archctl::clients::qbittorrent
