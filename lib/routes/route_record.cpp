#include "lib/routes/route_record.hpp"

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"

namespace archctl::routes {
namespace {

using nlohmann::json;

constexpr int k_schema = 1;

template <class E, std::size_t N>
std::optional<E> parse_enum(std::string_view text, const std::array<std::pair<E, const char*>, N>& names) {
    for (const auto& [value, name] : names)
        if (text == name) return value;
    return std::nullopt;
}

template <class E, std::size_t N>
std::string enum_name(E value, const std::array<std::pair<E, const char*>, N>& names) {
    for (const auto& [v, name] : names)
        if (v == value) return name;
    return "unknown";
}

constexpr std::array<std::pair<RouteState, const char*>, 5> k_states = {{
    {RouteState::provisioning, "provisioning"},
    {RouteState::timed_out, "timed_out"},
    {RouteState::failed, "failed"},
    {RouteState::rolled_back, "rolled_back"},
    {RouteState::ready, "ready"},
}};

constexpr std::array<std::pair<ObjectKind, const char*>, 2> k_kinds = {{
    {ObjectKind::device, "device"},
    {ObjectKind::folder, "folder"},
}};

constexpr std::array<std::pair<ObjectStatus, const char*>, 5> k_statuses = {{
    {ObjectStatus::intended, "intended"},
    {ObjectStatus::created, "created"},
    {ObjectStatus::removed, "removed"},
    {ObjectStatus::absent, "absent"},
    {ObjectStatus::kept, "kept"},
}};

std::string text(const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json object_json(const CreatedObject& c) {
    json o = {{"node", c.node}, {"kind", to_string(c.kind)}, {"id", c.id}, {"status", to_string(c.status)}};
    if (!c.fingerprint.empty()) o["fingerprint"] = c.fingerprint;
    if (!c.at.empty()) o["at"] = c.at;
    if (!c.note.empty()) o["note"] = c.note;
    return o;
}

Result<CreatedObject> object_from_json(const json& o, const std::string& source) {
    CreatedObject c;
    auto kind = parse_enum(text(o, "kind"), k_kinds);
    auto status = parse_enum(text(o, "status"), k_statuses);
    c.node = text(o, "node");
    c.id = text(o, "id");
    if (!kind || !status || c.node.empty() || c.id.empty())
        return Error(ErrorCode::CORRUPT, fmt::format("corrupt route record '{}': bad entry in 'created'", source));
    c.kind = *kind;
    c.status = *status;
    c.fingerprint = text(o, "fingerprint");
    c.at = text(o, "at");
    c.note = text(o, "note");
    return c;
}

}  // namespace

std::string to_string(RouteState state) { return enum_name(state, k_states); }
std::optional<RouteState> parse_route_state(std::string_view t) { return parse_enum(t, k_states); }
std::string to_string(ObjectKind kind) { return enum_name(kind, k_kinds); }
std::string to_string(ObjectStatus status) { return enum_name(status, k_statuses); }

CreatedObject* RouteRecord::find_created(const std::string& node, ObjectKind kind, const std::string& object_id) {
    for (auto& c : created)
        if (c.node == node && c.kind == kind && c.id == object_id) return &c;
    return nullptr;
}

const CreatedObject* RouteRecord::find_created(const std::string& node, ObjectKind kind, const std::string& object_id) const {
    return const_cast<RouteRecord*>(this)->find_created(node, kind, object_id);
}

json to_json(const RouteRecord& r) {
    json created = json::array();
    for (const auto& c : r.created) created.push_back(object_json(c));
    json o = {
        {"schema", k_schema},
        {"id", r.id},
        {"cache", {{"node", r.cache}, {"path", r.cache_path}, {"device", r.cache_device}}},
        {"archive", {{"node", r.archive}, {"path", r.archive_path}, {"device", r.archive_device}}},
        {"state", to_string(r.state)},
        {"origin", r.origin},
        {"created_at", r.created_at},
        {"updated_at", r.updated_at},
        {"attempt", {{"step", r.step}, {"step_started_at", r.step_started_at}, {"seen", r.seen}, {"error", r.error},
                     {"created", created}}},
        {"check", {{"verified_at", r.verified_at}, {"last_at", r.last_check_at}, {"last", r.last_check},
                   {"seconds", r.last_check_seconds}}},
    };
    return o;
}

Result<RouteRecord> record_from_json(const json& o, const std::string& source) {
    auto corrupt = [&](const std::string& why) {
        return Error(ErrorCode::CORRUPT, fmt::format("corrupt route record '{}': {}", source, why));
    };
    if (!o.is_object()) return corrupt("not a JSON object");
    if (o.value("schema", 0) != k_schema) return corrupt("unknown schema");
    RouteRecord r;
    r.id = text(o, "id");
    if (!valid_route_id(r.id)) return corrupt("missing or invalid id");
    const json cache = o.value("cache", json::object());
    const json archive = o.value("archive", json::object());
    r.cache = text(cache, "node");
    r.cache_path = text(cache, "path");
    r.cache_device = text(cache, "device");
    r.archive = text(archive, "node");
    r.archive_path = text(archive, "path");
    r.archive_device = text(archive, "device");
    if (r.cache.empty() || r.archive.empty()) return corrupt("missing node names");
    auto state = parse_route_state(text(o, "state"));
    if (!state) return corrupt("unknown state");
    r.state = *state;
    r.origin = text(o, "origin");
    r.created_at = text(o, "created_at");
    r.updated_at = text(o, "updated_at");
    const json attempt = o.value("attempt", json::object());
    r.step = text(attempt, "step");
    r.step_started_at = text(attempt, "step_started_at");
    r.seen = text(attempt, "seen");
    r.error = text(attempt, "error");
    for (const auto& c : attempt.value("created", json::array())) {
        ARCHCTL_TRY_ASSIGN(CreatedObject object, object_from_json(c, source));
        r.created.push_back(std::move(object));
    }
    const json check = o.value("check", json::object());
    r.verified_at = text(check, "verified_at");
    r.last_check_at = text(check, "last_at");
    r.last_check = text(check, "last");
    if (auto it = check.find("seconds"); it != check.end() && it->is_number()) r.last_check_seconds = it->get<double>();
    return r;
}

bool valid_route_id(std::string_view id) {
    if (id.empty() || id.size() > 200 || id.front() == '.') return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '.';
    });
}

std::string RouteStore::path_of(const std::string& id) const { return m_dir + "/" + id + ".json"; }

std::vector<RouteRecord> RouteStore::load_all(std::vector<std::string>& problems) const {
    std::vector<RouteRecord> out;
    auto listed = list_dir(m_dir);
    if (!listed.ok()) return out;
    for (const auto& name : listed.value()) {
        if (name.size() <= 5 || name.front() == '.' || !name.ends_with(".json")) continue;
        auto record = load(name.substr(0, name.size() - 5));
        if (!record.ok()) {
            problems.push_back(record.error().message);
            continue;
        }
        if (record.value()) out.push_back(std::move(*record.value()));
    }
    return out;
}

Result<std::optional<RouteRecord>> RouteStore::load(const std::string& id) const {
    if (!valid_route_id(id)) return std::optional<RouteRecord>();
    const std::string path = path_of(id);
    auto bytes = read_file(path);
    if (!bytes.ok()) {
        if (bytes.error().is(ErrorCode::NOT_FOUND)) return std::optional<RouteRecord>();
        return bytes.take_error();
    }
    auto j = json::parse(bytes.value(), nullptr, false);
    if (j.is_discarded()) return Error(ErrorCode::CORRUPT, fmt::format("corrupt route record '{}': not JSON", path));
    ARCHCTL_TRY_ASSIGN(RouteRecord record, record_from_json(j, path));
    if (record.id != id) return Error(ErrorCode::CORRUPT, fmt::format("corrupt route record '{}': names route '{}'", path, record.id));
    return std::optional<RouteRecord>(std::move(record));
}

Status RouteStore::save(RouteRecord& record, std::string_view crash_name) const {
    if (!valid_route_id(record.id)) return Error(ErrorCode::INVALID, fmt::format("cannot save route record '{}': invalid id", record.id));
    record.updated_at = format_rfc3339(system_now());
    if (record.created_at.empty()) record.created_at = record.updated_at;
    ARCHCTL_TRY_STATUS(make_dirs(m_dir));
    ARCHCTL_TRY_STATUS(write_file_atomic(path_of(record.id), to_json(record).dump(2) + "\n"));
    crash_point(fmt::format("route.{}", crash_name));
    return ok_status();
}

Status RouteStore::remove(const std::string& id) const {
    if (!valid_route_id(id)) return Error(ErrorCode::INVALID, fmt::format("cannot remove route record '{}': invalid id", id));
    const std::string path = path_of(id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("cannot remove", path, errno);
    ARCHCTL_TRY_STATUS(fsync_dir(m_dir));
    crash_point("route.rm.record");
    return ok_status();
}

}  // namespace archctl::routes
