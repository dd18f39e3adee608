// info and tree: what a node has, without changing anything (apart from the capability probe
// files, created and removed again in the probed directory).

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/version.hpp"
#include "lib/node/file_ops.hpp"
#include "lib/node/operation.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

json directory_json(int fd, const std::string& display) {
    RootInfo info = probe_directory(fd, display);
    json j = to_json(info);
    struct statvfs sv {};
    if (::fstatvfs(fd, &sv) == 0) {
        j["free_bytes"] = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
        j["total_bytes"] = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) j["dev"] = static_cast<std::uint64_t>(st.st_dev);
    return j;
}

json tree_entry(DirCache& cache, const std::string& base, const std::string& rel) {
    json entry = {{"path", rel}};
    auto parts = split_relative(rel);
    if (!parts.ok()) {
        entry["type"] = "refused";
        entry["error"] = {{"code", parts.error().code}, {"message", parts.error().message}};
        return entry;
    }
    const auto& comps = parts.value();
    auto dir = cache.dir(std::span<const std::string>(comps.data(), comps.size() - 1));
    if (!dir.ok()) {
        const Error& e = dir.error();
        if (e.code == "NOT_FOUND") {
            entry["type"] = "absent";
        } else {
            entry["type"] = "refused";
            entry["error"] = {{"code", e.code}, {"message", e.message}};
        }
        return entry;
    }
    struct stat st {};
    if (::fstatat(dir.value(), comps.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            entry["type"] = "absent";
        } else {
            Error e = errno_error("cannot stat", fmt::format("{}/{}", base, rel), errno);
            entry["type"] = "refused";
            entry["error"] = {{"code", e.code}, {"message", e.message}};
        }
        return entry;
    }
    entry.update(stat_json(st));
    return entry;
}

}  // namespace

Result<json> op_info(OpContext& ctx, const json& args) {
    json roots = json::array();
    for (std::size_t i = 0; i < ctx.roots().paths().size(); ++i)
        roots.push_back(directory_json(ctx.roots().root_fd(i), ctx.roots().paths()[i]));
    json probes = json::array();
    for (const auto& dir : args.value("probe_dirs", json::array())) {
        std::string path = dir.get<std::string>();
        ARCHCTL_TRY_ASSIGN(UniqueFd fd, ctx.roots().open_dir(path));
        probes.push_back(directory_json(fd.get(), path));
    }
    return json{{"archctl", k_version}, {"protocol", k_protocol_version}, {"pid", static_cast<long>(::getpid())},
                {"roots", roots}, {"probes", probes}};
}

Result<json> op_tree(OpContext& ctx, const json& args) {
    std::string base = args.at("base").get<std::string>();
    const json& paths = args.at("paths");
    auto base_fd = ctx.roots().open_dir(base);
    json entries = json::array();
    if (!base_fd.ok()) {
        if (base_fd.error().code != "NOT_FOUND") return base_fd.take_error();
        for (const auto& p : paths) entries.push_back({{"path", p.get<std::string>()}, {"type", "absent"}});
        return json{{"base_exists", false}, {"entries", entries}};
    }
    DirCache cache(base_fd.value().get(), base);
    Progress progress;
    progress.files_total = paths.size();
    for (const auto& p : paths) {
        entries.push_back(tree_entry(cache, base, p.get<std::string>()));
        ++progress.files;
        ctx.progress(progress);
    }
    return json{{"base_exists", true}, {"entries", entries}};
}

}  // namespace archctl::node
