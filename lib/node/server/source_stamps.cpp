#include "lib/node/server/source_stamps.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/node/server/file_ops.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

constexpr int k_version = 1;

// The record's parent directory and name.
Result<RootSet::Parent> record_parent(const RootSet& roots, const std::string& source_base, const std::string& job_id, CreateDirs create) {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, roots.locate(source_base));
    std::vector<std::string> created;
    return roots.open_parent(source_stamps_path(roots.paths()[loc.root], job_id), create, &created);
}

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        if (end > start) out.push_back(path.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

}  // namespace

std::string source_stamps_path(const std::string& root, const std::string& job_id) {
    return fmt::format("{}/.archctl/stage-{}.json", root == "/" ? "" : root, job_id);
}

Status write_source_stamps(const RootSet& roots, const std::string& source_base, const std::string& job_id,
                           const std::vector<SourceStamp>& stamps) {
    ARCHCTL_TRY_ASSIGN(RootSet::Parent parent, record_parent(roots, source_base, job_id, CreateDirs::yes));
    const std::string display = fd_path(parent.dir.get(), parent.name);
    ARCHCTL_TRY_ASSIGN(auto existing, stat_in(parent.dir.get(), parent.name, display));
    if (existing) return {};
    // Compact rows: [index, path, inode, mtime_ns, mode] — 100,000 files make a few MB.
    std::string text = fmt::format(R"({{"version":{},"job":{},"base":{},"files":[)", k_version, json(job_id).dump(), json(source_base).dump());
    for (std::size_t i = 0; i < stamps.size(); ++i) {
        const SourceStamp& s = stamps[i];
        text += fmt::format("{}[{},{},{},{},{}]", i ? ",\n" : "\n", s.index, json(s.path).dump(), s.ino, s.mtime_ns, s.mode);
    }
    text += "]}\n";
    ARCHCTL_TRY_STATUS(write_atomic_in(parent.dir.get(), parent.name, text, display, 0600));
    crash_point("stage.stamps");
    return {};
}

Result<RestoreReport> restore_source_stamps(const RootSet& roots, const std::string& source_base, const std::string& job_id) {
    RestoreReport report;
    auto parent = record_parent(roots, source_base, job_id, CreateDirs::no);
    if (!parent.ok()) return parent.error().is(ErrorCode::NOT_FOUND) ? Result<RestoreReport>(report) : parent.take_error();
    const std::string display = fd_path(parent->dir.get(), parent->name);
    auto text = read_small_in(parent->dir.get(), parent->name, display, 256u << 20);
    if (!text.ok()) return text.error().is(ErrorCode::NOT_FOUND) ? Result<RestoreReport>(report) : text.take_error();
    report.record = true;
    auto parsed = json::parse(text.value(), nullptr, false);
    if (parsed.is_discarded() || !parsed.contains("files") || !parsed["files"].is_array())
        return Error(ErrorCode::CORRUPT, fmt::format("invalid stage stamps '{}'", display), "remove it; the job's source stays as it is");
    auto base = roots.open_dir(source_base);
    if (!base.ok()) return base.take_error();
    DirCache dirs(base.value().get(), source_base);
    for (const auto& row : parsed["files"]) {
        if (!row.is_array() || row.size() != 5) continue;
        SourceStamp was{row[0].get<std::uint32_t>(), row[1].get<std::string>(), row[2].get<std::uint64_t>(), row[3].get<std::int64_t>(),
                        row[4].get<std::uint32_t>()};
        std::vector<std::string> comps = split(was.path);
        if (comps.empty()) continue;
        auto dir = dirs.dir(std::span<const std::string>(comps.data(), comps.size() - 1));
        if (!dir.ok()) {
            report.replaced.push_back(was.path);
            continue;
        }
        struct stat st {};
        if (::fstatat(dir.value(), comps.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            static_cast<std::uint64_t>(st.st_ino) != was.ino) {
            report.replaced.push_back(was.path);
            continue;
        }
        const std::uint32_t mode = st.st_mode & 07777;
        const std::int64_t mtime = mtime_ns(st);
        if (mtime == was.mtime_ns && mode == was.mode) continue;
        const std::string shown = fmt::format("{}/{}", source_base, was.path);
        if (mode != was.mode && ::fchmodat(dir.value(), comps.back().c_str(), was.mode, 0) != 0)
            return errno_error("cannot restore the mode of", shown, errno);
        if (mtime != was.mtime_ns) {
            struct timespec times[2] = {{0, UTIME_OMIT}, {was.mtime_ns / 1'000'000'000, was.mtime_ns % 1'000'000'000}};
            if (::utimensat(dir.value(), comps.back().c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
                return errno_error("cannot restore the mtime of", shown, errno);
        }
        report.restored.push_back({was.index, was.path, mtime, was.mtime_ns, mode, was.mode});
    }
    crash_point("cleanup.stamps_restored");
    if (::unlinkat(parent->dir.get(), parent->name.c_str(), 0) != 0 && errno != ENOENT) return errno_error("cannot remove", display, errno);
    ARCHCTL_TRY_STATUS(fsync_fd_dir(parent->dir.get(), display));
    return report;
}

}  // namespace archctl::node
