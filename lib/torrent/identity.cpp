#include "lib/torrent/identity.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace archctl::torrent {

std::string_view kind_name(Kind kind) {
    switch (kind) {
    case Kind::v1: return "v1";
    case Kind::v2: return "v2";
    case Kind::hybrid: return "hybrid";
    }
    return "v1";
}

Identity Identity::of_info_bytes(std::string_view info_bytes, Hashes hashes) {
    Identity id;
    if (hashes != Hashes::v2_only) id.m_v1 = sha1(info_bytes);
    if (hashes != Hashes::v1_only) id.m_v2 = sha256(info_bytes);
    return id;
}

Result<Identity> Identity::from_qb(std::string_view infohash_v1, std::string_view infohash_v2) {
    Identity id;
    if (!infohash_v1.empty()) {
        id.m_v1 = sha1_from_hex(infohash_v1);
        if (!id.m_v1)
            return Error{"TORRENT_IDENTITY_INVALID",
                         fmt::format("invalid v1 info hash '{}': expected 40 hex digits", infohash_v1.substr(0, 80))};
    }
    if (!infohash_v2.empty()) {
        id.m_v2 = sha256_from_hex(infohash_v2);
        if (!id.m_v2)
            return Error{"TORRENT_IDENTITY_INVALID",
                         fmt::format("invalid v2 info hash '{}': expected 64 hex digits", infohash_v2.substr(0, 80))};
    }
    if (id.empty()) return Error{"TORRENT_IDENTITY_INVALID", "invalid identity '': both info hashes are empty"};
    return id;
}

Result<Identity> Identity::from_json(const nlohmann::json& j) {
    if (!j.is_object()) return Error{"TORRENT_IDENTITY_INVALID", "invalid identity: expected a JSON object"};
    auto field = [&](const char* key) -> std::string {
        auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    return from_qb(field("v1"), field("v2"));
}

Kind Identity::kind() const {
    if (m_v1 && m_v2) return Kind::hybrid;
    return m_v2 ? Kind::v2 : Kind::v1;
}

std::string Identity::v1_hex() const { return m_v1 ? to_hex(*m_v1) : std::string(); }
std::string Identity::v2_hex() const { return m_v2 ? to_hex(*m_v2) : std::string(); }

std::string Identity::qb_id() const {
    if (m_v2) return to_hex(std::span<const std::uint8_t>(m_v2->data(), 20));
    return v1_hex();
}

bool Identity::matches_qb_id(std::string_view id) const {
    std::string lower(id);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 0x20 : c); });
    return !empty() && lower == qb_id();
}

nlohmann::json Identity::to_json() const {
    nlohmann::json j = nlohmann::json::object();
    j["v1"] = m_v1 ? nlohmann::json(v1_hex()) : nlohmann::json(nullptr);
    j["v2"] = m_v2 ? nlohmann::json(v2_hex()) : nlohmann::json(nullptr);
    j["qb_id"] = empty() ? nlohmann::json(nullptr) : nlohmann::json(qb_id());
    return j;
}

bool Identity::same_resource(const Identity& other) const { return join(other).ok(); }

Result<Identity> Identity::join(const Identity& other) const {
    if (m_v1 && other.m_v1 && *m_v1 != *other.m_v1)
        return Error{"TORRENT_IDENTITY_CONFLICT",
                     fmt::format("conflicting identities '{}' and '{}': v1 hashes differ", v1_hex(), other.v1_hex())};
    if (m_v2 && other.m_v2 && *m_v2 != *other.m_v2)
        return Error{"TORRENT_IDENTITY_CONFLICT",
                     fmt::format("conflicting identities '{}' and '{}': v2 hashes differ", v2_hex(), other.v2_hex())};
    bool shared = (m_v1 && other.m_v1) || (m_v2 && other.m_v2);
    if (!shared)
        return Error{"TORRENT_IDENTITY_MISMATCH",
                     fmt::format("cannot join identities '{}' and '{}': no hash kind in common", qb_id(), other.qb_id())};
    return Identity(m_v1 ? m_v1 : other.m_v1, m_v2 ? m_v2 : other.m_v2);
}

}  // namespace archctl::torrent
