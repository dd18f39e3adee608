#include "lib/state/placements.hpp"

#include <cerrno>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/json_file.hpp"

namespace archctl::state {

std::string PlacementStore::path_of(const std::string& alias, const std::string& node) const {
    return m_dir.placements() + "/" + alias + "/" + node + ".json";
}

Result<std::optional<PlacementRecord>> PlacementStore::get(const std::string& alias, const std::string& node) const {
    std::string path = path_of(alias, node);
    auto text = read_file(path);
    if (!text.ok()) {
        if (text.error().is(ErrorCode::NOT_FOUND)) return std::optional<PlacementRecord>();
        return text.take_error();
    }
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Error(ErrorCode::CORRUPT, fmt::format("corrupt placement record '{}'", path));
    PlacementRecord r;
    r.generation = j.value("generation", std::uint64_t{0});
    r.fingerprint = j.value("fingerprint", "");
    r.job_id = j.value("job_id", "");
    r.committed_at = j.value("committed_at", "");
    if (j.contains("detail")) r.detail = j["detail"];
    return std::optional<PlacementRecord>(r);
}

Result<std::uint64_t> PlacementStore::advance(const std::vector<std::string>& aliases, const std::string& node,
                                              const std::string& fingerprint, const std::string& job_id,
                                              const nlohmann::json& detail) {
    std::uint64_t base = 0;
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_ASSIGN(auto rec, get(alias, node));
        if (rec && rec->job_id == job_id && rec->fingerprint == fingerprint) return rec->generation;  // done before
        if (rec) base = std::max(base, rec->generation);
    }
    std::uint64_t next = base + 1;
    nlohmann::json j = {{"generation", next}, {"fingerprint", fingerprint}, {"job_id", job_id},
                        {"committed_at", format_rfc3339(system_now())}, {"detail", detail}};
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_STATUS(make_dirs(m_dir.placements() + "/" + alias, 0700));
        ARCHCTL_TRY_STATUS(write_json_atomic(path_of(alias, node), j, -1));
        crash_point("placement.advanced");
    }
    return next;
}

Status PlacementStore::update_detail(const std::vector<std::string>& aliases, const std::string& node, std::uint64_t generation,
                                     const nlohmann::json& detail) {
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_ASSIGN(auto rec, get(alias, node));
        if (!rec || rec->generation != generation) continue;
        nlohmann::json j = {{"generation", rec->generation}, {"fingerprint", rec->fingerprint}, {"job_id", rec->job_id},
                            {"committed_at", rec->committed_at}, {"detail", detail}};
        ARCHCTL_TRY_STATUS(write_json_atomic(path_of(alias, node), j, -1));
        crash_point("placement.restamped");
    }
    return {};
}

Status PlacementStore::forget(const std::vector<std::string>& aliases, const std::string& node) {
    for (const auto& alias : aliases) {
        std::string path = path_of(alias, node);
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("cannot remove", path, errno);
    }
    return {};
}

}  // namespace archctl::state
