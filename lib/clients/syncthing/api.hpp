#pragma once
// syncthing::Api: what archctl's routes, job steps and status ask of one Syncthing — the narrow
// interface syncthing::Client implements over the REST API, and test doubles implement in
// memory. The semantics (404 as nullopt, synchronous scans, long polls) are Client's; see
// client.hpp.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/result.hpp"
#include "lib/clients/syncthing/types.hpp"

namespace archctl::clients::syncthing {

struct EventQuery {
    std::int64_t since = 0;
    std::vector<std::string> types;  // empty: Syncthing's default set
    std::chrono::seconds timeout{60};  // long-poll timeout (0: return at once)
    int limit = 0;                     // 0: no limit; N keeps the newest N
};

class Api {
public:
    virtual ~Api() = default;

    [[nodiscard]] virtual Result<SystemStatus> status() = 0;
    [[nodiscard]] virtual Result<VersionInfo> version() = 0;
    [[nodiscard]] virtual Result<std::vector<Connection>> connections() = 0;

    [[nodiscard]] virtual Result<std::vector<Device>> devices() = 0;
    [[nodiscard]] virtual Result<std::optional<Device>> device(const std::string& device_id) = 0;
    [[nodiscard]] virtual Status put_device(const Device& device) = 0;
    [[nodiscard]] virtual Status delete_device(const std::string& device_id) = 0;

    [[nodiscard]] virtual Result<std::vector<Folder>> folders() = 0;
    [[nodiscard]] virtual Result<std::optional<Folder>> folder(const std::string& folder_id) = 0;
    [[nodiscard]] virtual Status put_folder(const Folder& folder) = 0;
    [[nodiscard]] virtual Status delete_folder(const std::string& folder_id) = 0;
    // PATCH /rest/config/folders/{id}: merge top-level keys; Syncthing restarts the folder.
    [[nodiscard]] virtual Status patch_folder(const std::string& folder_id, const nlohmann::json& changes) = 0;

    [[nodiscard]] virtual Result<nlohmann::json> options() = 0;

    [[nodiscard]] virtual Result<FolderStatus> db_status(const std::string& folder_id) = 0;
    // db/completion of `device_id` for `folder_id`, as this Syncthing knows it (a hint, never proof).
    [[nodiscard]] virtual Result<Completion> completion(const std::string& folder_id, const std::string& device_id) = 0;
    // folder/errors: the per-file errors of the folder's last pull (empty when there are none).
    [[nodiscard]] virtual Result<std::vector<FolderError>> folder_errors(const std::string& folder_id) = 0;
    // db/ignores: the folder's .stignore lines on this device (local, never synced).
    [[nodiscard]] virtual Result<Ignores> ignores(const std::string& folder_id) = 0;
    // Replace the folder's .stignore lines; Syncthing rescans the folder with them.
    [[nodiscard]] virtual Status set_ignores(const std::string& folder_id, const std::vector<std::string>& lines) = 0;
    [[nodiscard]] virtual Result<std::optional<FileRecord>> file(const std::string& folder_id, const std::string& path) = 0;
    // db/browse: every name of the folder's global index below `prefix` (a directory, relative to
    // the folder), with its size, in one request.
    [[nodiscard]] virtual Result<std::vector<GlobalEntry>> browse(const std::string& folder_id, const std::string& prefix) = 0;
    // db/need: everything this device still needs of the folder, whole (never a partial page).
    [[nodiscard]] virtual Result<NeedList> need(const std::string& folder_id) = 0;
    [[nodiscard]] virtual Status scan(const std::string& folder_id, const std::vector<std::string>& subs = {}) = 0;

    // One long poll of the event stream.
    [[nodiscard]] virtual Result<std::vector<Event>> events(const EventQuery& query) = 0;

    // Requests sent so far (HTTP requests for Client).
    [[nodiscard]] virtual std::uint64_t request_count() const = 0;
};

}  // namespace archctl::clients::syncthing
