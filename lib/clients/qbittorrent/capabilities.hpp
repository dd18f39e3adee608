#pragma once
// Version negotiation: one table of WebAPI features drives every 4.x/5.x difference.
//
// At first contact the client reads app/version, and app/webapiVersion unless the release is one
// of known_webapi()'s (saving a request per run and node); Capabilities answers
// "does this server have feature X" from the table below (minimum WebAPI version per feature),
// and names the endpoint or parameter that feature decides. Versions compare numerically per
// component ("2.10" > "2.9").

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace archctl::clients::qbittorrent {

// A dotted version, compared per component; missing components count as 0.
struct Version {
    std::vector<int> parts;
    std::string text;  // as the server sent it, trimmed (e.g. "v4.5.2", "2.8.19")

    // Lenient parse: an optional leading 'v', digits and dots, anything after ignored
    // ("v5.0.0beta1" → 5.0.0). nullopt when no leading number.
    static std::optional<Version> parse(std::string_view text);
    // The numeric part only: "4.5.2".
    [[nodiscard]] std::string numeric() const;
    friend int compare(const Version& a, const Version& b);
    friend bool operator<(const Version& a, const Version& b) { return compare(a, b) < 0; }
    friend bool operator>=(const Version& a, const Version& b) { return compare(a, b) >= 0; }
};

enum class Feature {
    export_torrent,      // torrents/export (2.8.11, qBittorrent 4.5.0)
    stop_start,          // torrents/stop|start replace pause|resume; stoppedUP/DL states (2.11.0)
    no_content_replies,  // 204 for replies without body (2.11.8)
    login_status_codes,  // auth/login answers 204 / 401 instead of 200 Ok./Fails. (2.14.0)
    add_returns_json,    // torrents/add answers JSON counts, 409 when nothing added (2.14.0)
    seed_mode,           // torrents/add skip_checking renamed seedMode (2.16.0)
};

struct FeatureRow {
    Feature feature;
    std::string_view min_webapi;
    std::string_view summary;
};

// The WebAPI version a qBittorrent release ships with, for the plain releases whose version
// map is checked (the version map of the qBittorrent WebAPI reference: 4.5.1–4.5.5, 4.6.1–4.6.7, 5.0.x,
// 5.1.x); nullopt for anything else (4.5.0, 4.6.0, 5.2+, betas, suffixed or unknown builds),
// where the client asks app/webapiVersion.
[[nodiscard]] std::optional<Version> known_webapi(const Version& app);

// The table itself (for documentation, -v output and tests).
[[nodiscard]] const std::vector<FeatureRow>& feature_table();

class Capabilities {
public:
    Capabilities() = default;
    Capabilities(Version app, Version webapi) : m_app(std::move(app)), m_webapi(std::move(webapi)) {}

    [[nodiscard]] bool has(Feature feature) const;
    [[nodiscard]] const Version& app() const { return m_app; }
    [[nodiscard]] const Version& webapi() const { return m_webapi; }

    // Endpoint names decided by the table.
    [[nodiscard]] std::string stop_endpoint() const { return has(Feature::stop_start) ? "torrents/stop" : "torrents/pause"; }
    [[nodiscard]] std::string start_endpoint() const { return has(Feature::stop_start) ? "torrents/start" : "torrents/resume"; }
    // The add parameter that skips the hash check.
    [[nodiscard]] std::string skip_check_param() const { return has(Feature::seed_mode) ? "seedMode" : "skip_checking"; }

private:
    Version m_app;
    Version m_webapi;
};

}  // namespace archctl::clients::qbittorrent
