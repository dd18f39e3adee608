// info, space and tree: what a node has, without changing anything (apart from info's capability
// probe files, created and removed again in each root and probed directory; space and tree write
// nothing).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "lib/base/version.hpp"
#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/operation.hpp"
#include "lib/node/wire/ops.hpp"

namespace archctl::node {
namespace {

using nlohmann::json;

EntryStat entry_stat(const struct stat& st) {
    EntryStat s;
    s.size = static_cast<std::uint64_t>(st.st_size);
    s.dev = static_cast<std::uint64_t>(st.st_dev);
    s.ino = static_cast<std::uint64_t>(st.st_ino);
    s.nlink = static_cast<std::uint64_t>(st.st_nlink);
    s.mtime_ns = mtime_ns(st);
    s.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    s.mode = static_cast<unsigned>(st.st_mode & 07777);
    return s;
}

DirectoryInfo directory_info(int fd, const std::string& display) {
    DirectoryInfo d;
    d.root = probe_directory(fd, display);
    if (auto fs = fs_stat_of(fd)) {
        d.free_bytes = fs->free_bytes;
        d.total_bytes = fs->total_bytes;
    }
    struct stat st {};
    if (::fstat(fd, &st) == 0) d.dev = static_cast<std::uint64_t>(st.st_dev);
    return d;
}

EntryType entry_type_of(mode_t mode) {
    if (S_ISREG(mode)) return EntryType::file;
    if (S_ISDIR(mode)) return EntryType::dir;
    if (S_ISLNK(mode)) return EntryType::symlink;
    if (S_ISFIFO(mode)) return EntryType::fifo;
    if (S_ISSOCK(mode)) return EntryType::socket;
    if (S_ISCHR(mode)) return EntryType::char_device;
    if (S_ISBLK(mode)) return EntryType::block;
    return EntryType::other;
}

// The node path of `components` below root `root`.
std::string node_path(const std::string& root, std::span<const std::string> components) {
    if (components.empty()) return root;
    return (root == "/" ? root : root + "/") + join_path(components);
}

// The directory at `located`, or while it does not exist its nearest existing ancestor up to its
// root; `measured` is set to the node path opened.
Result<UniqueFd> open_nearest_dir(const RootSet& roots, const LocatedPath& located, std::string& measured) {
    const std::string& root = roots.paths()[located.root];
    std::span<const std::string> components(located.components);
    for (;;) {
        auto fd = open_dir_below(roots.root_fd(located.root), components, root);
        if (fd.ok() || !fd.error().is(ErrorCode::NOT_FOUND) || components.empty()) {
            measured = node_path(root, components);
            return fd;
        }
        components = components.first(components.size() - 1);
    }
}

// The entry at `rel` below `base`; its path is left empty (the entries form sets it).
TreeEntry tree_entry(DirCache& cache, const std::string& base, const std::string& rel) {
    TreeEntry entry;
    auto parts = split_relative(rel);
    if (!parts.ok()) {
        entry.type = EntryType::refused;
        entry.error = parts.error();
        return entry;
    }
    const auto& comps = parts.value();
    auto dir = cache.dir(std::span<const std::string>(comps.data(), comps.size() - 1));
    if (!dir.ok()) {
        if (dir.error().is(ErrorCode::NOT_FOUND)) {
            entry.type = EntryType::absent;
        } else {
            entry.type = EntryType::refused;
            entry.error = dir.error();
        }
        return entry;
    }
    struct stat st {};
    if (::fstatat(dir.value(), comps.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            entry.type = EntryType::absent;
        } else {
            entry.type = EntryType::refused;
            entry.error = errno_error("cannot stat", fmt::format("{}/{}", base, rel), errno);
        }
        return entry;
    }
    entry.type = entry_type_of(st.st_mode);
    entry.stat = entry_stat(st);
    // The birth time tells a file from a new one that reuses its inode number (a replacement
    // with the same size and a restored mtime is otherwise the same stamp).
    struct statx stx {};
    if (::statx(dir.value(), comps.back().c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) == 0 && (stx.stx_mask & STATX_BTIME))
        entry.stat->btime_ns = static_cast<std::int64_t>(stx.stx_btime.tv_sec) * 1'000'000'000 + stx.stx_btime.tv_nsec;
    return entry;
}

}  // namespace

Result<json> op_info(OpContext& ctx, json args) {
    auto request = args.get<InfoRequest>();
    InfoResult out;
    out.archctl = k_version;
    out.pid = static_cast<long>(::getpid());
    for (std::size_t i = 0; i < ctx.roots().paths().size(); ++i)
        out.roots.push_back(directory_info(ctx.roots().root_fd(i), ctx.roots().paths()[i]));
    for (const auto& path : request.probe_dirs) {
        ARCHCTL_TRY_ASSIGN(UniqueFd fd, ctx.roots().open_dir(path));
        out.probes.push_back(directory_info(fd.get(), path));
    }
    return json(out);
}

Result<json> op_space(OpContext& ctx, json args) {
    auto request = args.get<SpaceRequest>();
    ARCHCTL_TRY_ASSIGN(LocatedPath located, ctx.roots().locate(request.path));
    SpaceResult out;
    out.path = request.path;
    ARCHCTL_TRY_ASSIGN(UniqueFd fd, open_nearest_dir(ctx.roots(), located, out.measured));
    auto fs = fs_stat_of(fd.get());
    if (!fs) return errno_error("cannot read the free space of", out.measured, errno);
    out.free_bytes = fs->free_bytes;
    out.total_bytes = fs->total_bytes;
    return json(out);
}

Result<json> op_tree(OpContext& ctx, json args) {
    std::optional<std::vector<std::string>> columns;
    TreeRequest request;
    if (args.contains("columns")) {
        auto asked = args.get<TreeColumnsRequest>();
        request = std::move(asked.tree);
        columns = std::move(asked.columns);
    } else {
        request = args.get<TreeRequest>();
    }
    auto base_fd = ctx.roots().open_dir(request.base);
    if (!base_fd.ok() && !base_fd.error().is(ErrorCode::NOT_FOUND)) return base_fd.take_error();
    const bool base_exists = base_fd.ok();
    std::optional<DirCache> cache;
    if (base_exists) cache.emplace(base_fd.value().get(), request.base);
    auto entry_at = [&](const std::string& p) {
        return cache ? tree_entry(*cache, request.base, p) : TreeEntry{{}, EntryType::absent, std::nullopt, {}};
    };
    Progress progress;
    progress.files_total = request.paths.size();
    auto step = [&] {
        ++progress.files;
        if (base_exists) ctx.progress(progress);
    };
    // The columns form is written entry by entry: a node holds no entry of a large tree.
    if (columns) {
        TreeColumnsWriter writer(*columns, request.paths.size());
        for (const auto& p : request.paths) {
            writer.add(entry_at(p));
            step();
        }
        return std::move(writer).finish(base_exists);
    }
    TreeResult out;
    out.base_exists = base_exists;
    out.entries.reserve(request.paths.size());
    for (const auto& p : request.paths) {
        out.entries.push_back(entry_at(p));
        out.entries.back().path = p;
        step();
    }
    return json(out);
}

}  // namespace archctl::node
