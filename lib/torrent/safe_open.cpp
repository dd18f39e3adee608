#include "lib/torrent/safe_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lib/torrent/path_rules.hpp"

namespace archctl::torrent {
namespace {

OpenFailure classify(int err) {
    switch (err) {
    case ENOENT: return OpenFailure::missing;
    case ENOTDIR: return OpenFailure::missing;
    case ELOOP: return OpenFailure::symlink;
    default: return OpenFailure::io;
    }
}

OpenedFile failed(OpenFailure failure, std::string detail) {
    OpenedFile f;
    f.failure = failure;
    f.detail = std::move(detail);
    return f;
}

std::string prefix_of(const std::vector<std::string>& rel, std::size_t upto) {
    std::vector<std::string> head(rel.begin(), rel.begin() + static_cast<std::ptrdiff_t>(upto + 1));
    return printable(join_path(head));
}

OpenedFile open_failure(int at, int err, const std::vector<std::string>& rel, std::size_t i) {
    // O_DIRECTORY on a symlink reports ENOTDIR before O_NOFOLLOW's ELOOP: look at the entry.
    struct stat st {};
    if (err == ENOTDIR && ::fstatat(at, rel[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) err = ELOOP;
    OpenFailure kind = classify(err);
    std::string where = prefix_of(rel, i);
    if (kind == OpenFailure::symlink) return failed(kind, fmt::format("'{}' is a symlink (refused)", where));
    if (kind == OpenFailure::missing && err == ENOTDIR)
        return failed(kind, fmt::format("'{}' is not a directory", where));
    if (kind == OpenFailure::missing) return failed(kind, fmt::format("'{}' does not exist", where));
    return failed(kind, fmt::format("cannot open '{}': {}", where, std::strerror(err)));
}

}  // namespace

Result<UniqueFd> open_root_dir(const std::filesystem::path& root) {
    int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_error("cannot open save path", root.string(), errno);
    return UniqueFd(fd);
}

OpenedFile open_below(int root_fd, const std::vector<std::string>& rel) {
    if (rel.empty()) return failed(OpenFailure::missing, "empty path");
    UniqueFd dir;
    int at = root_fd;
    for (std::size_t i = 0; i + 1 < rel.size(); ++i) {
        int fd = ::openat(at, rel[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return open_failure(at, errno, rel, i);
        dir = UniqueFd(fd);
        at = dir.get();
    }
    // O_NONBLOCK so a FIFO planted under the root cannot block the open.
    int fd = ::openat(at, rel.back().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return open_failure(at, errno, rel, rel.size() - 1);
    OpenedFile out;
    out.fd = UniqueFd(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return failed(OpenFailure::io, fmt::format("cannot stat '{}': {}", prefix_of(rel, rel.size() - 1), std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        return failed(OpenFailure::not_regular, fmt::format("'{}' is not a regular file", prefix_of(rel, rel.size() - 1)));
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    out.size = static_cast<std::int64_t>(st.st_size);
    return out;
}

}  // namespace archctl::torrent
