#include "lib/state/job_store.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/json_file.hpp"
#include "lib/state/job_index.hpp"

namespace archctl::state {
namespace {

Result<nlohmann::json> read_json(const std::string& path) {
    ARCHCTL_TRY_ASSIGN(std::string text, read_file(path));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return Error(ErrorCode::CORRUPT, fmt::format("corrupt state file '{}': not JSON", path));
    return j;
}

// The top-level lists of a definition that hold an entry a file.
bool per_file_list(const std::string& key) { return key == "files" || key == "union_files"; }

}  // namespace

Result<nlohmann::json> JobStore::definition_outline(const std::string& job_id) const {
    const std::string path = m_dir.job(job_id) + "/definition.json";
    ARCHCTL_TRY_ASSIGN(std::string text, read_file(path));
    // Depth 1 is the definition's own keys, depth 2 a list's elements: each becomes null once read.
    bool in_list = false;
    auto outline = [&in_list](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key) in_list = per_file_list(parsed.get<std::string>());
        if (depth == 2 && in_list &&
            (event == nlohmann::json::parse_event_t::object_end || event == nlohmann::json::parse_event_t::array_end ||
             event == nlohmann::json::parse_event_t::value))
            parsed = nullptr;
        return true;
    };
    auto j = nlohmann::json::parse(text, outline, false);
    if (j.is_discarded()) return Error(ErrorCode::CORRUPT, fmt::format("corrupt state file '{}': not JSON", path));
    return j;
}

Status JobStore::create(const std::string& job_id, const nlohmann::json& definition) {
    std::string dir = m_dir.job(job_id);
    ARCHCTL_TRY_STATUS(JobIndex(m_dir).mark_active(job_id));
    ARCHCTL_TRY_STATUS(make_dirs(dir, 0700));
    ARCHCTL_TRY_STATUS(fsync_dir(m_dir.jobs()));
    crash_point("job.dir_created");
    ARCHCTL_TRY_STATUS(write_json_exclusive(dir + "/definition.json", definition, 2));
    crash_point("job.defined");
    return {};
}

Result<nlohmann::json> JobStore::definition(const std::string& job_id) const {
    return read_json(m_dir.job(job_id) + "/definition.json");
}

Result<nlohmann::json> JobStore::ledger(const std::string& job_id) const {
    return read_json(m_dir.job(job_id) + "/ledger.json");
}

Status JobStore::write_ledger(const std::string& job_id, const nlohmann::json& ledger) {
    return write_json_atomic(m_dir.job(job_id) + "/ledger.json", ledger, 2);
}

Status JobStore::append_event(const std::string& job_id, const std::string& type, nlohmann::json fields) {
    ARCHCTL_TRY_ASSIGN(JournalWriter w, JournalWriter::open(m_dir.job(job_id) + "/events.jsonl", "events", 1));
    nlohmann::json record = {{"at", format_rfc3339(system_now())}, {"type", type}};
    for (auto& [k, v] : fields.items()) record[k] = std::move(v);
    ARCHCTL_TRY_STATUS(w.append(record));
    crash_point("job.event");
    return {};
}

Result<JournalContents> JobStore::events(const std::string& job_id) const {
    return read_journal(m_dir.job(job_id) + "/events.jsonl", "events");
}

Result<std::vector<std::string>> JobStore::list() const {
    std::vector<std::string> ids;
    ARCHCTL_TRY_ASSIGN(auto names, list_dir(m_dir.jobs(), "cannot list jobs in"));
    for (const auto& name : names)
        if (path_exists(m_dir.job(name) + "/definition.json")) ids.push_back(name);
    return ids;
}

Result<std::vector<std::string>> JobStore::damaged() const {
    std::vector<std::string> ids;
    JobIndex index(m_dir);
    std::vector<std::string> names;
    if (index.built()) {
        ARCHCTL_TRY_ASSIGN(names, index.active());
    } else {
        ARCHCTL_TRY_ASSIGN(names, list_dir(m_dir.jobs(), "cannot list jobs in"));
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names)
        if (is_damaged(name)) ids.push_back(name);
    return ids;
}

bool JobStore::is_damaged(const std::string& job_id) const {
    bool worked = path_exists(m_dir.job(job_id) + "/events.jsonl") || path_exists(m_dir.job(job_id) + "/ledger.json");
    return worked && !definition(job_id).ok();
}

Status JobStore::remove(const std::string& job_id, Sync sync) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir.job(job_id), ec);
    if (ec) return Error(ErrorCode::IO, fmt::format("cannot remove job '{}': {}", job_id, ec.message()));
    crash_point("job.store.removed");
    return sync == Sync::now ? sync_removals() : Status{};
}

Status JobStore::sync_removals() { return fsync_dir(m_dir.jobs()); }

std::string JobStore::request_digest(const std::string& job_id) const {
    auto text = read_file(m_dir.job(job_id) + "/definition.json");
    if (!text.ok()) return "";
    // The definition is written with dump(2): `"request_digest": "<hex>"`, one key per line.
    constexpr std::string_view k_key = "\n  \"request_digest\": \"";
    const std::size_t at = text->find(k_key);
    if (at != std::string::npos) {
        const std::size_t from = at + k_key.size(), end = text->find('"', from);
        if (end != std::string::npos && text->find('\\', from) > end) return text->substr(from, end - from);
    }
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (!j.is_object() || !j.contains("request_digest") || !j["request_digest"].is_string()) return "";
    return j["request_digest"].get<std::string>();
}

}  // namespace archctl::state
