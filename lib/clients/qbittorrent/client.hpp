#pragma once
// qbittorrent::Client: archctl's adapter for one qBittorrent WebUI API (v2, qBittorrent 4.5–5.x).
//
// First contact logs in (cookie session through libcurl's cookie engine) and reads
// app/version + app/webapiVersion; Capabilities then picks endpoint and parameter names. Any
// call answered 403 (session expired, qBittorrent restarted) logs in again once and repeats.
// Login failures are explicit errors: QB_AUTH (wrong credentials, body "Fails." on ≤5.1, 401 on
// 5.2+) and QB_BANNED (too many failed logins). The password is registered with the HTTP
// client's redactor and never appears in any message.
//
// Client implements Api (api.hpp), the interface the rest of archctl calls.
//
// Not thread-safe: one Client per thread (sync/maindata state also belongs to one login).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/http/http_client.hpp"
#include "lib/clients/qbittorrent/api.hpp"
#include "lib/clients/qbittorrent/capabilities.hpp"
#include "lib/clients/qbittorrent/maindata.hpp"
#include "lib/clients/qbittorrent/types.hpp"

namespace archctl::clients::qbittorrent {

// How long one torrents/export may take unless the node's config says otherwise.
inline constexpr std::chrono::seconds k_default_export_timeout{600};

// Where refused logins are remembered across commands (the state directory's logins/, kept as a
// salted digest): qBittorrent bans an address after a few failed logins, so credentials it
// refused once are not sent again until they change or the user asks (`archctl node check`).
class LoginRecords {
public:
    virtual ~LoginRecords() = default;
    // Whether `node`'s qBittorrent refused exactly these credentials before.
    [[nodiscard]] virtual bool refused(const std::string& node, const std::string& username, const std::string& password) const = 0;
    // It refused them now (best effort: a record that cannot be written is the caller's warning).
    virtual void remember(const std::string& node, const std::string& username, const std::string& password) const = 0;
    // It accepted a login: whatever was recorded for the node no longer holds.
    virtual void forget(const std::string& node) const = 0;
};

struct Settings {
    http::ClientSettings http;  // base_url = the WebUI URL; service defaults to "qBittorrent"
    // torrents/export's own limit (nodes.<name>.qbittorrent.export_timeout): qBittorrent builds
    // a v2/hybrid export on its main thread, which takes minutes for a large torrent.
    std::chrono::milliseconds export_timeout{k_default_export_timeout};
    std::string username = "admin";
    std::string password;
    std::string password_file;  // where the password came from (for messages); empty if inline
    // Refused logins remembered across commands; null: only this client remembers (it never
    // sends credentials that were refused a second time either way).
    std::shared_ptr<const LoginRecords> logins;
};

class Client final : public Api {
public:
    explicit Client(Settings settings);

    // Log in now (normally done lazily by the first call). Errors: QB_AUTH, QB_BANNED,
    // QB_FORBIDDEN, HTTP_* transport errors.
    [[nodiscard]] Status login();

    // Versions and the capability table, read once per client (logs in first if needed).
    [[nodiscard]] Result<Capabilities> capabilities() override;

    // torrents/info for the given qB ids, batched (hashes=a|b|…). Ids that qBittorrent does not
    // know are simply absent from the result. An empty list asks nothing and returns nothing.
    [[nodiscard]] Result<std::vector<TorrentInfo>> torrents(const std::vector<std::string>& ids) override;
    // torrents/info without filter: every torrent.
    [[nodiscard]] Result<std::vector<TorrentInfo>> all_torrents() override;
    // torrents/properties; QB_NOT_FOUND for an unknown id.
    [[nodiscard]] Result<TorrentProperties> properties(const std::string& id);
    // torrents/files (qB indices, pad files excluded); [] while metadata is missing.
    [[nodiscard]] Result<std::vector<TorrentFile>> files(const std::string& id) override;
    // torrents/export: the bencoded .torrent bytes. QB_UNSUPPORTED before WebAPI 2.8.11. Asked
    // once, with Settings::export_timeout as its limit and no retry once the request may have
    // reached qBittorrent (each repeat would queue one more export behind the one still running);
    // a timeout is QB_TIMEOUT naming the torrent and the setting to raise.
    [[nodiscard]] Result<std::string> export_torrent(const std::string& id) override;
    [[nodiscard]] Result<Announce> announce(const std::string& id) override;

    // torrents/add from .torrent bytes (multipart, unique part filename): stopped or started,
    // automatic management off, explicit save path, content layout, no download path, hash check
    // unless `skip_checking`, and the given tags from the first moment the torrent exists.
    // Adding is asynchronous: poll torrents() for the id afterwards.
    // QB_ADD_REFUSED when qBittorrent added nothing (e.g. already present), QB_INVALID_TORRENT (415).
    [[nodiscard]] Status add(const AddTorrent& torrent) override;

    // torrents/filePrio for `indices` (qB indices). QB_CONFLICT (409) for a bad index or missing
    // metadata, QB_NOT_FOUND for an unknown id.
    [[nodiscard]] Status set_file_priority(const std::string& id, const std::vector<std::uint32_t>& indices,
                                           FilePriority priority) override;
    [[nodiscard]] Status recheck(const std::vector<std::string>& ids) override;
    // torrents/stop|start on 5.x, torrents/pause|resume on 4.x (from the capability table).
    [[nodiscard]] Status stop(const std::vector<std::string>& ids) override;
    [[nodiscard]] Status start(const std::vector<std::string>& ids) override;
    // torrents/delete; data stays on disk unless DeleteData::yes_for_tests.
    [[nodiscard]] Status remove(const std::vector<std::string>& ids, DeleteData data) override;
    // torrents/addTags and torrents/removeTags (tags are created when missing; removing a tag a
    // torrent does not have is not an error).
    [[nodiscard]] Status add_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) override;
    [[nodiscard]] Status remove_tags(const std::vector<std::string>& ids, const std::vector<std::string>& tags) override;
    // torrents/deleteTags: removes the tags from every torrent and from qBittorrent's tag list
    // (deleting a tag that does not exist is not an error).
    [[nodiscard]] Status delete_tags(const std::vector<std::string>& tags) override;
    [[nodiscard]] Status clear_share_limits(const std::vector<std::string>& ids) override;
    [[nodiscard]] Result<Categories> categories() override;
    // QB_CONFLICT (409) when the category exists already.
    [[nodiscard]] Status create_category(const std::string& name, const std::string& save_path) override;
    // torrents/addPeers ("host:port" each); returns qBittorrent's per-torrent counts.
    [[nodiscard]] Result<nlohmann::json> add_peers(const std::vector<std::string>& ids,
                                                   const std::vector<std::string>& peers);

    // One sync/maindata round: sends data.rid(), merges the reply into `data`.
    [[nodiscard]] Status sync(MainData& data) override;

    [[nodiscard]] Result<nlohmann::json> preferences() override;
    // app/setPreferences with any subset of keys (unknown keys are ignored by qBittorrent).
    [[nodiscard]] Status set_preferences(const nlohmann::json& changes);
    [[nodiscard]] Result<BuildInfo> build_info();

    [[nodiscard]] std::uint64_t request_count() const override { return m_http.request_count(); }
    [[nodiscard]] http::HttpClient& http() { return m_http; }

private:
    // Send with the session: logs in first if needed, logs in again once on 403.
    Result<http::Response> call(const http::Request& request);
    // call() and require a 2xx status.
    Result<http::Response> call_ok(const http::Request& request, const std::string& subject = {});
    Result<nlohmann::json> call_json(const http::Request& request, const std::string& subject = {});
    Status action(const std::string& endpoint, http::Params form, const std::string& subject = {});
    Error login_error(const http::Response& response) const;
    Error export_timeout_error(const std::string& id) const;

    Settings m_settings;
    http::HttpClient m_http;
    bool m_logged_in = false;
    std::optional<Error> m_refused;  // this client's login was refused for its credentials
    std::optional<Capabilities> m_capabilities;
    std::uint64_t m_uploads = 0;
};

// Join ids with '|' as qBittorrent's `hashes` parameter wants.
[[nodiscard]] std::string join_ids(const std::vector<std::string>& ids);

}  // namespace archctl::clients::qbittorrent
