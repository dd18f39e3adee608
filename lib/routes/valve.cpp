#include "lib/routes/valve.hpp"

#include <optional>

#include <fmt/format.h>

namespace archctl::routes {
namespace {

// A boolean key of the raw folder object; nullopt when this Syncthing does not know the key.
std::optional<bool> flag(const nlohmann::json& raw, const char* key) {
    auto it = raw.find(key);
    if (it == raw.end() || !it->is_boolean()) return std::nullopt;
    return it->get<bool>();
}

}  // namespace

std::string ValveProblem::text() const { return fmt::format("{} {} (must be {})", setting, have, want); }

std::vector<ValveProblem> valve_problems(const clients::syncthing::Folder& f) {
    std::vector<ValveProblem> out;
    if (!f.versioning_type.empty() && f.versioning_type != "none")
        out.push_back({"versioning", fmt::format("'{}'", f.versioning_type), "off"});
    if (!f.ignore_perms) out.push_back({"ignorePerms", "false", "true"});
    if (flag(f.raw, "ignoreDelete").value_or(false)) out.push_back({"ignoreDelete", "true", "false"});
    if (flag(f.raw, "syncOwnership").value_or(false)) out.push_back({"syncOwnership", "true", "false"});
    if (flag(f.raw, "syncXattrs").value_or(false)) out.push_back({"syncXattrs", "true", "false"});
    return out;
}

nlohmann::json valve_repair(const clients::syncthing::Folder& f) {
    nlohmann::json patch = nlohmann::json::object();
    for (const auto& p : valve_problems(f)) {
        if (p.setting == "versioning") {
            nlohmann::json v = f.raw.contains("versioning") && f.raw["versioning"].is_object() ? f.raw["versioning"] : nlohmann::json::object();
            v["type"] = "";
            v["params"] = nlohmann::json::object();
            patch["versioning"] = std::move(v);
        } else if (p.setting == "ignorePerms") {
            patch["ignorePerms"] = true;
        } else {
            patch[p.setting] = false;
        }
    }
    return patch;
}

std::string valve_summary(const std::vector<ValveProblem>& problems) {
    std::string out;
    for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p.text();
    return out;
}

Error valve_error(const std::string& route_id, const std::string& node, const std::vector<ValveProblem>& problems) {
    return Error(ErrorCode::ROUTE_VALVE,
                 fmt::format("route folder '{}' on '{}' lets the far side change staged source files: {}", route_id, node,
                             valve_summary(problems)),
                 fmt::format("run 'archctl route ensure --repair {}' (or set those folder options in Syncthing), then rerun", route_id));
}

}  // namespace archctl::routes
