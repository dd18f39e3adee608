#pragma once
// Identity of a resource (docs/design.md "Words"): its v1 and/or v2 info hash.
//
// v1 = SHA-1 of the exact bencoded `info` bytes, v2 = SHA-256 of the same bytes (present when
// `meta version` is 2); a hybrid has both. The qB id is qBittorrent's own key for a torrent
// (libtorrent's info_hash_t::get_best()): the first 20 bytes of the v2 hash whenever one exists,
// else the v1 hash — an adapter detail, never the identity itself.
//
// Two observations of the same resource may know different hashes (qBittorrent reports a v1
// torrent with an empty infohash_v2; a .torrent file of the hybrid knows both). join() merges
// them when they share a hash and nothing conflicts.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/torrent/sha.hpp"

namespace archctl::torrent {

enum class Kind { v1, v2, hybrid };

// "v1", "v2", "hybrid".
[[nodiscard]] std::string_view kind_name(Kind kind);

class Identity {
public:
    Identity() = default;
    Identity(std::optional<Sha1Digest> v1, std::optional<Sha256Digest> v2) : m_v1(v1), m_v2(v2) {}

    // Hashes of the exact info bytes of a torrent (v2 only when `has_v2`).
    enum class Hashes { v1_only, v2_only, both };
    [[nodiscard]] static Identity of_info_bytes(std::string_view info_bytes, Hashes hashes);

    // From qBittorrent's `infohash_v1` / `infohash_v2` fields (40 / 64 hex, either case; either
    // may be empty, not both). Error code TORRENT_IDENTITY_INVALID.
    [[nodiscard]] static Result<Identity> from_qb(std::string_view infohash_v1, std::string_view infohash_v2);

    // From a JSON object {"v1": "<40 hex>"|null, "v2": "<64 hex>"|null} as written by to_json().
    [[nodiscard]] static Result<Identity> from_json(const nlohmann::json& j);

    bool has_v1() const { return m_v1.has_value(); }
    bool has_v2() const { return m_v2.has_value(); }
    bool empty() const { return !m_v1 && !m_v2; }
    const std::optional<Sha1Digest>& v1() const { return m_v1; }
    const std::optional<Sha256Digest>& v2() const { return m_v2; }
    // Which hashes are known. Precondition: !empty().
    Kind kind() const;

    // Lowercase hex; empty string when the hash is unknown.
    std::string v1_hex() const;
    std::string v2_hex() const;
    // qBittorrent's id: 40 lowercase hex of the truncated v2 when known, else of v1.
    std::string qb_id() const;
    // First 12 hex of the qB id, for human output.
    std::string short_id() const { return qb_id().substr(0, 12); }
    // True when `id` (40 hex, any case) is this resource's qB id.
    bool matches_qb_id(std::string_view id) const;

    // {"v1": hex|null, "v2": hex|null, "qb_id": hex}.
    nlohmann::json to_json() const;

    // True when both know a hash in common that is equal and no hash known to both differs.
    bool same_resource(const Identity& other) const;

    // Merges two observations of one resource: the union of their hashes. Errors:
    // TORRENT_IDENTITY_CONFLICT when a hash known to both differs (the message names both),
    // TORRENT_IDENTITY_MISMATCH when they share no hash kind to compare.
    [[nodiscard]] Result<Identity> join(const Identity& other) const;

    friend bool operator==(const Identity& a, const Identity& b) { return a.m_v1 == b.m_v1 && a.m_v2 == b.m_v2; }

private:
    std::optional<Sha1Digest> m_v1;
    std::optional<Sha256Digest> m_v2;
};

}  // namespace archctl::torrent
