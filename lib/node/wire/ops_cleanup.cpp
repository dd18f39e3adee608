#include "lib/node/wire/ops_cleanup.hpp"

#include <fmt/format.h>

#include "lib/node/wire/json_fields.hpp"

namespace archctl::node {

using nlohmann::json;
using namespace json_fields;

// ---- chmod_readable, cleanup, unlink_owned -------------------------------------------------

void to_json(json& j, const ChmodReadableRequest& v) { j = {{"base", v.base}, {"paths", v.paths}}; }
void from_json(const json& j, ChmodReadableRequest& v) {
    v.base = j.at("base").get<std::string>();
    v.paths = j.at("paths").get<std::vector<std::string>>();
}

void to_json(json& j, const ChmodReadableResult& v) {
    j = {{"files_changed", v.files_changed}, {"dirs_changed", v.dirs_changed}, {"missing", v.missing}};
}
void from_json(const json& j, ChmodReadableResult& v) {
    v.files_changed = j.value("files_changed", std::uint64_t{0});
    v.dirs_changed = j.value("dirs_changed", std::uint64_t{0});
    v.missing = get_list<std::string>(j, "missing");
}

void to_json(json& j, const CleanupRequest& v) {
    j = {{"job_dir", v.job_dir}, {"referenced", v.referenced}};
    put_optional(j, "save_path", v.save_path);
    put_optional(j, "source_base", v.source_base);
    if (!v.files.empty()) j["files"] = v.files;
    if (!v.aux.empty()) j["aux"] = v.aux;
}
void from_json(const json& j, CleanupRequest& v) {
    v.job_dir = j.at("job_dir").get<std::string>();
    v.referenced = get_list<std::string>(j, "referenced");
    v.save_path.reset();
    get_optional(j, "save_path", v.save_path);
    v.source_base.reset();
    get_optional(j, "source_base", v.source_base);
    v.files = get_list<std::uint32_t>(j, "files");
    v.aux = get_list<std::string>(j, "aux");
}

void to_json(json& j, const RestoredStamp& v) {
    j = {{"index", v.index},           {"path", v.path},
         {"mtime_found", v.mtime_found}, {"mtime_restored", v.mtime_restored},
         {"mode_found", fmt::format("{:04o}", v.mode_found)}, {"mode_restored", fmt::format("{:04o}", v.mode_restored)}};
}
void from_json(const json& j, RestoredStamp& v) {
    v.index = j.value("index", std::uint32_t{0});
    v.path = j.value("path", "");
    v.mtime_found = j.value("mtime_found", std::int64_t{0});
    v.mtime_restored = j.value("mtime_restored", std::int64_t{0});
    v.mode_found = static_cast<std::uint32_t>(std::stoul(j.value("mode_found", std::string("0")), nullptr, 8));
    v.mode_restored = static_cast<std::uint32_t>(std::stoul(j.value("mode_restored", std::string("0")), nullptr, 8));
}

namespace {
constexpr JobDirEnd k_job_dir_ends[] = {JobDirEnd::absent, JobDirEnd::removed, JobDirEnd::kept};
}  // namespace

std::string_view to_string(JobDirEnd end) {
    switch (end) {
        case JobDirEnd::absent: return "absent";
        case JobDirEnd::removed: return "removed";
        case JobDirEnd::kept: return "kept";
    }
    return "absent";
}

void to_json(json& j, JobDirEnd v) { j = to_string(v); }
void from_json(const json& j, JobDirEnd& v) { v = enum_from_json(j, k_job_dir_ends, "job directory end"); }

void to_json(json& j, const CleanupResult& v) {
    j = {{"job_dir", v.job_dir}, {"removed", v.removed}, {"kept", v.kept}};
    if (!v.restored.empty()) j["restored"] = v.restored;
    if (!v.replaced.empty()) j["replaced"] = v.replaced;
}
void from_json(const json& j, CleanupResult& v) {
    v.job_dir = j.value("job_dir", JobDirEnd::absent);
    v.removed = get_list<std::string>(j, "removed");
    v.kept = get_list<KeptEntry>(j, "kept");
    v.restored = get_list<RestoredStamp>(j, "restored");
    v.replaced = get_list<std::string>(j, "replaced");
}

void to_json(json& j, const OwnedFile& v) {
    if (!v.size && !v.ino) {
        j = v.path;
        return;
    }
    j = {{"path", v.path}};
    put_optional(j, "size", v.size);
    put_optional(j, "ino", v.ino);
}
void from_json(const json& j, OwnedFile& v) {
    v.size.reset();
    v.ino.reset();
    if (j.is_string()) {
        v.path = j.get<std::string>();
        return;
    }
    v.path = j.at("path").get<std::string>();
    get_optional(j, "size", v.size);
    get_optional(j, "ino", v.ino);
}

void to_json(json& j, const UnlinkOwnedRequest& v) {
    j = {{"paths", v.paths}, {"stop_at", v.stop_at}};
    if (!v.referenced.empty()) j["referenced"] = v.referenced;
}
void from_json(const json& j, UnlinkOwnedRequest& v) {
    v.paths = j.at("paths").get<std::vector<OwnedFile>>();
    v.referenced = get_list<std::string>(j, "referenced");
    v.stop_at = j.at("stop_at").get<std::string>();
}

void to_json(json& j, const UnlinkOwnedResult& v) { j = {{"removed", v.removed}, {"kept", v.kept}}; }
void from_json(const json& j, UnlinkOwnedResult& v) {
    v.removed = get_list<std::string>(j, "removed");
    v.kept = get_list<KeptEntry>(j, "kept");
}

}  // namespace archctl::node
