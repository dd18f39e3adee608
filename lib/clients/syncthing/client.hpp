#pragma once
// syncthing::Client: archctl's adapter for one Syncthing REST API (1.19 → 2.x).
//
// Every request carries `X-API-Key` (the key is registered with the redactor). Config writes
// follow Syncthing's semantics: PUT of a folder/device replaces the whole object (built from
// defaults), so put_folder()/put_device() send the full object from to_json(); PATCH merges
// top-level keys. db/scan is synchronous and uses a long timeout; events() is a long poll whose
// HTTP timeout is the poll timeout plus a margin. EventStream keeps one cursor per event mask.
//
// Client implements Api (api.hpp), the interface the rest of archctl calls.
//
// Not thread-safe: one Client per thread (use a separate Client for a blocking event poll).

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/http/http_client.hpp"
#include "lib/clients/syncthing/api.hpp"
#include "lib/clients/syncthing/event_cursor.hpp"
#include "lib/clients/syncthing/types.hpp"

namespace archctl::clients::syncthing {

struct Settings {
    http::ClientSettings http;  // base_url = GUI address; service defaults to "Syncthing"
    std::string api_key;
    std::chrono::milliseconds scan_timeout{30 * 60 * 1000};  // db/scan waits for the scan
};

class Client final : public Api {
public:
    explicit Client(Settings settings);

    // GET /rest/system/ping: liveness and API key check.
    [[nodiscard]] Status ping();
    [[nodiscard]] Result<SystemStatus> status() override;
    [[nodiscard]] Result<VersionInfo> version() override;
    [[nodiscard]] Result<std::vector<Connection>> connections() override;

    [[nodiscard]] Result<std::vector<Device>> devices() override;
    // nullopt when the device is not configured.
    [[nodiscard]] Result<std::optional<Device>> device(const std::string& device_id) override;
    // PUT /rest/config/devices/{id}: create or replace (body carries the ID).
    [[nodiscard]] Status put_device(const Device& device) override;
    [[nodiscard]] Status patch_device(const std::string& device_id, const nlohmann::json& changes);
    [[nodiscard]] Status delete_device(const std::string& device_id) override;

    [[nodiscard]] Result<std::vector<Folder>> folders() override;
    [[nodiscard]] Result<std::optional<Folder>> folder(const std::string& folder_id) override;
    // PUT /rest/config/folders/{id}: create or replace. Fails with ST_INVALID when the folder
    // has no path (Syncthing would fall back to its template path).
    [[nodiscard]] Status put_folder(const Folder& folder) override;
    [[nodiscard]] Status patch_folder(const std::string& folder_id, const nlohmann::json& changes) override;
    // Removes the folder from config only; no files are touched.
    [[nodiscard]] Status delete_folder(const std::string& folder_id) override;

    [[nodiscard]] Result<nlohmann::json> options() override;
    [[nodiscard]] Status patch_options(const nlohmann::json& changes);

    [[nodiscard]] Result<FolderStatus> db_status(const std::string& folder_id) override;
    // db/completion of `device_id` for `folder_id` (as this Syncthing knows it).
    [[nodiscard]] Result<Completion> completion(const std::string& folder_id, const std::string& device_id) override;
    // db/file; nullopt when the file is not in the index.
    [[nodiscard]] Result<std::optional<FileRecord>> file(const std::string& folder_id, const std::string& path) override;
    // POST db/scan (optionally only `subs`, relative paths); returns when the scan is done.
    [[nodiscard]] Status scan(const std::string& folder_id, const std::vector<std::string>& subs = {}) override;
    // GET db/browse?prefix=: the global index below `prefix`, flattened; an unknown folder is
    // ST_NOT_FOUND.
    [[nodiscard]] Result<std::vector<GlobalEntry>> browse(const std::string& folder_id, const std::string& prefix) override;
    // GET db/need, one page large enough for the whole list (each request is one consistent read
    // of the index; pages fetched one after another are not).
    [[nodiscard]] Result<NeedList> need(const std::string& folder_id) override;
    [[nodiscard]] Result<std::vector<FolderError>> folder_errors(const std::string& folder_id) override;
    // GET db/ignores; POST db/ignores writes .stignore and schedules a rescan (an invalid
    // pattern is ST_INVALID with Syncthing's text).
    [[nodiscard]] Result<Ignores> ignores(const std::string& folder_id) override;
    [[nodiscard]] Status set_ignores(const std::string& folder_id, const std::vector<std::string>& lines) override;
    [[nodiscard]] Result<std::vector<PendingDevice>> pending_devices();
    [[nodiscard]] Result<std::vector<PendingFolder>> pending_folders();

    // One long poll of /rest/events.
    [[nodiscard]] Result<std::vector<Event>> events(const EventQuery& query) override;

    [[nodiscard]] std::uint64_t request_count() const override { return m_http.request_count(); }
    [[nodiscard]] http::HttpClient& http() { return m_http; }

private:
    http::Request request(http::Method method, const std::string& path, http::Params query = {}) const;
    http::Request json_request(http::Method method, const std::string& path, const nlohmann::json& body) const;
    Result<http::Response> call_ok(const http::Request& request, const std::string& subject = {});
    Error error_for(const http::Request& request, const http::Response& response, const std::string& subject) const;
    Result<nlohmann::json> call_json(const http::Request& request, const std::string& subject = {});
    // GET that yields nullopt on 404.
    Result<std::optional<nlohmann::json>> get_optional(const http::Request& request);

    Settings m_settings;
    http::HttpClient m_http;
};

// A typed event stream over one Syncthing (Api): one EventCursor per event mask, restart detection by
// ids going backwards and by system startTime after an empty (timed-out) poll.
class EventStream {
public:
    explicit EventStream(Api& client) : m_client(client) {}

    // Wait up to `timeout` for events of `types` newer than this mask's cursor.
    [[nodiscard]] Result<EventBatch> next(const std::vector<std::string>& types, std::chrono::seconds timeout);

private:
    Api& m_client;
    std::map<std::string, EventCursor> m_cursors;
};

}  // namespace archctl::clients::syncthing
