#include "lib/clients/qbittorrent/capabilities.hpp"

#include <algorithm>
#include <cctype>

namespace archctl::clients::qbittorrent {

std::optional<Version> Version::parse(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
    Version v;
    v.text = std::string(text);
    if (!text.empty() && (text.front() == 'v' || text.front() == 'V')) text.remove_prefix(1);
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        int value = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
            value = std::min(value * 10 + (text[i] - '0'), 1'000'000);
            ++i;
        }
        v.parts.push_back(value);
        if (i + 1 < text.size() && text[i] == '.' && std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0) {
            ++i;
        } else {
            break;
        }
    }
    if (v.parts.empty()) return std::nullopt;
    return v;
}

std::string Version::numeric() const {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out.push_back('.');
        out += std::to_string(parts[i]);
    }
    return out;
}

int compare(const Version& a, const Version& b) {
    const std::size_t n = std::max(a.parts.size(), b.parts.size());
    for (std::size_t i = 0; i < n; ++i) {
        const int x = i < a.parts.size() ? a.parts[i] : 0;
        const int y = i < b.parts.size() ? b.parts[i] : 0;
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

std::optional<Version> known_webapi(const Version& app) {
    // Only "vX.Y.Z" or "X.Y.Z" exactly: a suffix (beta, rc, a vendor's tag) may be another API.
    std::string_view text = app.text;
    if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
    if (app.parts.size() != 3 || text != app.numeric()) return std::nullopt;
    struct Row {
        int major, minor, first_patch, last_patch;
        std::string_view webapi;
    };
    static constexpr Row k_rows[] = {
        {4, 5, 1, 5, "2.8.19"}, {4, 6, 1, 7, "2.9.3"}, {5, 0, 0, 5, "2.11.2"}, {5, 1, 0, 4, "2.11.4"},
    };
    for (const Row& r : k_rows)
        if (app.parts[0] == r.major && app.parts[1] == r.minor && app.parts[2] >= r.first_patch && app.parts[2] <= r.last_patch)
            return Version::parse(r.webapi);
    return std::nullopt;
}

const std::vector<FeatureRow>& feature_table() {
    static const std::vector<FeatureRow> table = {
        {Feature::export_torrent, "2.8.11", "torrents/export returns the .torrent"},
        {Feature::stop_start, "2.11.0", "torrents/stop|start replace pause|resume; states stoppedUP/stoppedDL"},
        {Feature::no_content_replies, "2.11.8", "replies without a body use 204"},
        {Feature::login_status_codes, "2.14.0", "auth/login answers 204 on success, 401 on wrong credentials"},
        {Feature::add_returns_json, "2.14.0", "torrents/add answers JSON counts; 409 when nothing was added"},
        {Feature::seed_mode, "2.16.0", "torrents/add skip_checking is called seedMode"},
    };
    return table;
}

bool Capabilities::has(Feature feature) const {
    for (const auto& row : feature_table()) {
        if (row.feature != feature) continue;
        auto min = Version::parse(row.min_webapi);
        return min && m_webapi >= *min;
    }
    return false;
}

}  // namespace archctl::clients::qbittorrent
