#include "lib/base/fs.hpp"

#include <algorithm>
#include <atomic>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/atomic_file.hpp"
#include "lib/base/crash_point.hpp"

namespace archctl {

void UniqueFd::reset(int fd) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = fd;
}

Error errno_error(std::string_view what, const std::string& path, int err) {
    return Error(err == ENOENT ? ErrorCode::NOT_FOUND : ErrorCode::IO,
                 fmt::format("{} '{}': {}", what, path, std::strerror(err)));
}

Result<std::string> read_file(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("cannot open", path, errno);
    std::string out;
    // Sized once for a regular file (a 20 MB torrent grew to 32 MB by doubling); a file that grows
    // while it is read still reads whole.
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size) + 1);
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("cannot read", path, errno);
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

Status write_all(int fd, std::string_view data, const std::string& path_for_errors) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("cannot write", path_for_errors, errno);
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return {};
}

Status fsync_dir(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("cannot open directory", dir, errno);
    if (::fsync(fd.get()) != 0 && errno != EINVAL) return errno_error("cannot fsync directory", dir, errno);
    return {};
}

Status make_dirs(const std::string& dir, unsigned mode) {
    if (dir.empty()) return {};
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return {};
        return Error(ErrorCode::IO, fmt::format("cannot create directory '{}': a file is in the way", dir));
    }
    std::string parent = parent_dir(dir);
    if (parent != dir && parent != "." && parent != "/") ARCHCTL_TRY_STATUS(make_dirs(parent, mode));
    if (::mkdir(dir.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST)
        return errno_error("cannot create directory", dir, errno);
    return {};
}

std::string strip_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

namespace {

// Reads and closes `d`; the names without "." and "..", sorted.
std::vector<std::string> read_names(DIR* d) {
    std::vector<std::string> out;
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") out.push_back(std::move(name));
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

Result<std::vector<std::string>> list_dir(const std::string& dir, std::string_view what) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return errno_error(what, dir, errno);
    return read_names(d);
}

Result<std::vector<std::string>> list_dir(int dirfd, const std::string& display, std::string_view what) {
    int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_error(what, display, errno);
    DIR* d = ::fdopendir(fd);
    if (!d) {
        int err = errno;
        ::close(fd);
        return errno_error(what, display, err);
    }
    return read_names(d);
}

std::string parent_dir(const std::string& path) {
    auto end = path.find_last_not_of('/');
    if (end == std::string::npos) return "/";
    auto slash = path.rfind('/', end);
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

bool path_exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

Status write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
    ARCHCTL_TRY_ASSIGN(AtomicFile file, AtomicFile::create(path, mode));
    ARCHCTL_TRY_STATUS(file.write(data));
    return file.commit();
}

Status write_file_exclusive(const std::string& path, std::string_view data, unsigned mode) {
    return write_file_exclusive_with(path, mode, [data](int fd, const std::string& temp) { return write_all(fd, data, temp); });
}

Status write_file_exclusive_with(const std::string& path, unsigned mode, const std::function<Status(int fd, const std::string& temp)>& write) {
    // Written in full to a temp name first, then linked into place: link(2) fails if the name
    // exists, so the file is created exclusively and is never seen empty or half-written by a
    // concurrent reader (who would otherwise take it for a torn file).
    static std::atomic<unsigned> counter{0};
    const std::string dir = parent_dir(path);
    const std::string base = path.substr(path.find_last_of('/') + 1);
    const std::string temp = fmt::format("{}/.{}.tmp.{}.{}", dir, base, ::getpid(), counter++);
    {
        UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, static_cast<mode_t>(mode)));
        if (!fd.valid()) return errno_error("cannot create", temp, errno);
        Status written = write(fd.get(), temp);
        if (written.ok() && ::fsync(fd.get()) != 0) written = errno_error("cannot fsync", temp, errno);
        if (!written.ok()) {
            ::unlink(temp.c_str());
            return written;
        }
    }
    const bool linked = ::link(temp.c_str(), path.c_str()) == 0;
    const int link_errno = errno;
    ::unlink(temp.c_str());
    if (!linked) {
        if (link_errno == EEXIST) return Error(ErrorCode::EXISTS, fmt::format("cannot create '{}': it already exists", path));
        return errno_error("cannot create", path, link_errno);
    }
    crash_point("exclusive.created");
    ARCHCTL_TRY_STATUS(fsync_dir(dir));
    crash_point("exclusive.synced");
    return {};
}

}  // namespace archctl
