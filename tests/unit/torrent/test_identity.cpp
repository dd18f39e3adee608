#include <doctest/doctest.h>

#include "lib/torrent/identity.hpp"

using namespace archctl::torrent;

namespace {
const std::string k_v1 = "1a44193f2bc3900372505c3704e196cd3429d504";
const std::string k_v1b = "0c9573f63fcbd0d37fb58224c25cc44e43b735af";
const std::string k_v2 = "3afaf5c0178dfcfa9a0210fbf9bccb28e590407c14bf2f53bbeedcdfdcf643a9";
const std::string k_v2b = "570e8f6ae06cfe047945486e53f388248f716f11663e006a576ee09145341aea";
}  // namespace

TEST_CASE("identity: hashes of the info bytes and the qB id rule") {
    std::string info = "d4:name1:xe";
    auto v1 = Identity::of_info_bytes(info, Identity::Hashes::v1_only);
    auto v2 = Identity::of_info_bytes(info, Identity::Hashes::v2_only);
    auto hy = Identity::of_info_bytes(info, Identity::Hashes::both);
    CHECK(v1.kind() == Kind::v1);
    CHECK(v2.kind() == Kind::v2);
    CHECK(hy.kind() == Kind::hybrid);
    CHECK(v1.v1_hex() == to_hex(sha1(info)));
    CHECK(v2.v2_hex() == to_hex(sha256(info)));
    CHECK(v1.qb_id() == v1.v1_hex());
    CHECK(v2.qb_id() == v2.v2_hex().substr(0, 40));
    CHECK(hy.qb_id() == hy.v2_hex().substr(0, 40));  // a hybrid's id is the truncated v2, not v1
    CHECK(hy.short_id().size() == 12);
    CHECK(hy.matches_qb_id(hy.v2_hex().substr(0, 40)));
    CHECK(hy.matches_qb_id([&] { std::string s = hy.qb_id(); for (auto& c : s) c = static_cast<char>(std::toupper(c)); return s; }()));
    CHECK_FALSE(hy.matches_qb_id(hy.v1_hex()));
}

TEST_CASE("identity: from qBittorrent's infohash_v1 / infohash_v2") {
    auto v1 = Identity::from_qb(k_v1, "");
    REQUIRE(v1.ok());
    CHECK(v1->kind() == Kind::v1);
    CHECK(v1->qb_id() == k_v1);
    auto v2 = Identity::from_qb("", k_v2);
    REQUIRE(v2.ok());
    CHECK(v2->qb_id() == k_v2.substr(0, 40));
    auto hy = Identity::from_qb("0C9573F63FCBD0D37FB58224C25CC44E43B735AF", k_v2);
    REQUIRE(hy.ok());
    CHECK(hy->v1_hex() == k_v1b);
    CHECK(hy->qb_id() == "3afaf5c0178dfcfa9a0210fbf9bccb28e590407c");
    CHECK(Identity::from_qb("", "").error().code == "TORRENT_IDENTITY_INVALID");
    CHECK_FALSE(Identity::from_qb("abc", "").ok());
    CHECK_FALSE(Identity::from_qb(k_v1, k_v1).ok());
    CHECK_FALSE(Identity::from_qb(std::string(40, 'g'), "").ok());
    auto j = hy->to_json();
    CHECK(j["v1"] == k_v1b);
    CHECK(j["qb_id"] == "3afaf5c0178dfcfa9a0210fbf9bccb28e590407c");
    CHECK(*Identity::from_json(j) == *hy);
    CHECK(Identity::from_json(v1->to_json())->kind() == Kind::v1);
}

TEST_CASE("identity: alias joining") {
    auto v1_only = *Identity::from_qb(k_v1b, "");
    auto hybrid = *Identity::from_qb(k_v1b, k_v2);
    auto joined = v1_only.join(hybrid);
    REQUIRE(joined.ok());
    CHECK(*joined == hybrid);
    CHECK(*hybrid.join(v1_only) == hybrid);
    CHECK(v1_only.same_resource(hybrid));

    auto v2_only = *Identity::from_qb("", k_v2);
    CHECK(*v2_only.join(hybrid) == hybrid);

    // v1 matches but the v2 hashes conflict: an error naming both.
    auto other = *Identity::from_qb(k_v1b, k_v2b);
    auto conflict = hybrid.join(other);
    REQUIRE_FALSE(conflict.ok());
    CHECK(conflict.error().code == "TORRENT_IDENTITY_CONFLICT");
    CHECK(conflict.error().message.find(k_v2) != std::string::npos);
    CHECK(conflict.error().message.find(k_v2b) != std::string::npos);

    auto v1_conflict = v1_only.join(*Identity::from_qb(k_v1, ""));
    REQUIRE_FALSE(v1_conflict.ok());
    CHECK(v1_conflict.error().code == "TORRENT_IDENTITY_CONFLICT");
    CHECK(v1_conflict.error().message.find(k_v1) != std::string::npos);

    // Nothing to compare: v1-only vs v2-only.
    auto none = v1_only.join(v2_only);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == "TORRENT_IDENTITY_MISMATCH");
    CHECK_FALSE(v1_only.same_resource(v2_only));
}
