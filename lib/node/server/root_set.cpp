#include "lib/node/server/root_set.hpp"

#include "lib/base/fs.hpp"
#include "lib/node/server/file_ops.hpp"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

namespace archctl::node {
namespace {

std::atomic<ResolveMode> g_mode{ResolveMode::auto_detect};
std::atomic<bool> g_openat2_missing{false};
constexpr std::size_t k_dir_cache_limit = 512;

Error outside_error(std::string_view path, std::string_view cause) {
    return Error(ErrorCode::PATH_OUTSIDE_ROOT, fmt::format("path outside the node's roots '{}': {}", path, cause),
                 "node paths are absolute, clean and below a --root directory");
}

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Classifies a failed open of `name` in `dirfd` (ELOOP, ENOTDIR, ENOENT...).
Error classify_open_failure(int dirfd, const std::string& name, const std::string& display, int err) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) return symlink_error(display);
        if (!S_ISDIR(st.st_mode))
            return Error(ErrorCode::NOT_A_DIRECTORY, fmt::format("cannot open directory '{}': not a directory", display));
    }
    return errno_error("cannot open directory", display, err);
}

Result<UniqueFd> walk(int dirfd, std::span<const std::string> components, const std::string& display,
                      CreateDirs create, std::vector<std::string>* created) {
    UniqueFd current(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
    if (!current.valid()) return errno_error("cannot open directory", display, errno);
    for (std::size_t i = 0; i < components.size(); ++i) {
        const std::string& name = components[i];
        std::string shown = fmt::format("{}/{}", display, join_path(components.subspan(0, i + 1)));
        int fd = ::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create == CreateDirs::yes) {
            if (::mkdirat(current.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
                return errno_error("cannot create directory", shown, errno);
            if (errno != EEXIST && created) created->push_back(shown);
            ARCHCTL_TRY_STATUS(fsync_fd_dir(current.get(), shown));
            fd = ::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0) return classify_open_failure(current.get(), name, shown, errno);
        current.reset(fd);
    }
    return current;
}

// openat2 beneath dirfd; ENOSYS (old kernel) reports `unsupported`.
Result<UniqueFd> resolve_beneath(int dirfd, std::span<const std::string> components, const std::string& display,
                                 bool& unsupported) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    std::string rel = join_path(components);
    long fd = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    int err = errno;
    if (err == ENOSYS || err == EPERM) {  // EPERM: seccomp filters that deny unknown syscalls
        unsupported = true;
        return Error(ErrorCode::IO, "openat2 unavailable");
    }
    if (err == EXDEV) return outside_error(fmt::format("{}/{}", display, rel), "resolves outside its root");
    // The walk finds which component failed, for a precise message.
    if (err == ELOOP || err == ENOTDIR || err == ENOENT) return walk(dirfd, components, display, CreateDirs::no, nullptr);
    return errno_error("cannot open directory", fmt::format("{}/{}", display, rel), err);
}

}  // namespace

void set_resolve_mode(ResolveMode mode) { g_mode = mode; }

Error symlink_error(const std::string& path) {
    return Error(ErrorCode::PATH_SYMLINK, fmt::format("refusing path '{}': a component below the root is a symlink", path),
                 "archctl never follows symlinks below a node root");
}

std::string join_path(std::span<const std::string> components) {
    std::string out;
    for (const auto& c : components) {
        if (!out.empty()) out += '/';
        out += c;
    }
    return out;
}

Result<std::vector<std::string>> split_relative(std::string_view rel) {
    if (rel.empty()) return Error(ErrorCode::BAD_PATH, "invalid relative path '': empty");
    if (rel.front() == '/') return outside_error(rel, "absolute path where a relative path is expected");
    if (has_nul(rel)) return Error(ErrorCode::BAD_PATH, fmt::format("invalid relative path '{}': contains NUL", rel));
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= rel.size()) {
        std::size_t slash = rel.find('/', pos);
        std::string_view part = rel.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
        if (part == "..") return outside_error(rel, "'..' is not allowed");
        if (part.empty() || part == ".")
            return Error(ErrorCode::BAD_PATH, fmt::format("invalid relative path '{}': empty or '.' component", rel));
        out.emplace_back(part);
        if (slash == std::string_view::npos) break;
        pos = slash + 1;
    }
    return out;
}

Result<RootSet> RootSet::open(const std::vector<std::string>& roots) {
    RootSet set;
    for (const std::string& given : roots) {
        std::string root = strip_trailing_slashes(given);
        if (root.empty() || root.front() != '/')
            return Error(ErrorCode::USAGE, fmt::format("invalid root '{}': must be an absolute path", root));
        if (root != "/") ARCHCTL_TRY_STATUS(split_relative(std::string_view(root).substr(1)));
        UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd.valid()) return errno_error("cannot open root", root, errno);
        set.m_paths.push_back(root);
        set.m_fds.push_back(std::move(fd));
    }
    return set;
}

Result<LocatedPath> RootSet::locate(std::string_view path) const {
    if (path.empty() || path.front() != '/') return outside_error(path, "not an absolute node path");
    std::string clean = strip_trailing_slashes(std::string(path));
    std::size_t best = m_paths.size();
    for (std::size_t i = 0; i < m_paths.size(); ++i) {
        const std::string& r = m_paths[i];
        bool below = clean == r || (clean.size() > r.size() && clean.compare(0, r.size(), r) == 0 &&
                                    (r == "/" || clean[r.size()] == '/'));
        if (below && (best == m_paths.size() || r.size() > m_paths[best].size())) best = i;
    }
    if (best == m_paths.size()) return outside_error(clean, "not below any root");
    LocatedPath out;
    out.root = best;
    out.path = clean;
    const std::string& r = m_paths[best];
    if (clean.size() > r.size()) {
        std::string_view rest = std::string_view(clean).substr(r == "/" ? 1 : r.size() + 1);
        auto parts = split_relative(rest);
        if (!parts.ok()) {
            // The part below the root is not a clean relative path ('//', '.', '..'): the error
            // names the path as the request gave it, not that part.
            Error e = parts.take_error();
            if (e.is(ErrorCode::PATH_OUTSIDE_ROOT) && rest.front() != '/') return outside_error(clean, "'..' is not allowed");
            return Error(ErrorCode::BAD_PATH, fmt::format("invalid node path '{}': an empty or '.' component", clean),
                         "node paths are absolute, clean and below a --root directory");
        }
        out.components = std::move(parts).value();
    }
    return out;
}

Result<UniqueFd> RootSet::open_dir(std::string_view path, CreateDirs create, std::vector<std::string>* created) const {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, locate(path));
    return open_dir_below(root_fd(loc.root), loc.components, m_paths[loc.root], create, created);
}

Result<RootSet::Parent> RootSet::open_parent(std::string_view path, CreateDirs create,
                                             std::vector<std::string>* created) const {
    ARCHCTL_TRY_ASSIGN(LocatedPath loc, locate(path));
    if (loc.components.empty()) return outside_error(loc.path, "a root itself cannot be used here");
    Parent out;
    out.name = loc.components.back();
    out.path = loc.path;
    std::span<const std::string> dirs(loc.components.data(), loc.components.size() - 1);
    ARCHCTL_TRY_ASSIGN(out.dir, open_dir_below(root_fd(loc.root), dirs, m_paths[loc.root], create, created));
    return out;
}

Result<UniqueFd> open_dir_below(int dirfd, std::span<const std::string> components, const std::string& display,
                                CreateDirs create, std::vector<std::string>* created) {
    if (components.empty()) {
        UniqueFd fd(::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd.valid()) return errno_error("cannot open directory", display, errno);
        return fd;
    }
    if (create == CreateDirs::no && g_mode.load() == ResolveMode::auto_detect && !g_openat2_missing.load()) {
        bool unsupported = false;
        auto r = resolve_beneath(dirfd, components, display, unsupported);
        if (!unsupported) return r;
        g_openat2_missing = true;
    }
    return walk(dirfd, components, display, create, created);
}

Result<int> DirCache::dir(std::span<const std::string> components, CreateDirs create, std::vector<std::string>* created) {
    std::string key = join_path(components);
    if (auto it = m_fds.find(key); it != m_fds.end()) return it->second.get();
    if (create == CreateDirs::yes) {
        m_missing.clear();
    } else if (auto it = m_missing.find(key); it != m_missing.end()) {
        return it->second;
    }
    if (m_fds.size() >= k_dir_cache_limit) m_fds.clear();
    if (m_missing.size() >= k_dir_cache_limit) m_missing.clear();
    auto opened = open_dir_below(m_base, components, m_display, create, created);
    if (!opened.ok()) {
        if (create == CreateDirs::no && opened.error().is(ErrorCode::NOT_FOUND)) m_missing.emplace(std::move(key), opened.error());
        return opened.take_error();
    }
    UniqueFd fd = std::move(opened).value();
    int raw = fd.get();
    m_fds.emplace(std::move(key), std::move(fd));
    return raw;
}

}  // namespace archctl::node
