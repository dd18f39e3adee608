#pragma once
// Thin, error-returning wrappers over POSIX file calls, and an owning file descriptor.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl {

// Owns one file descriptor; closes it on destruction.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : m_fd(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(UniqueFd&& other) noexcept : m_fd(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const { return m_fd; }
    bool valid() const { return m_fd >= 0; }
    int release() { int fd = m_fd; m_fd = -1; return fd; }
    void reset(int fd = -1);

private:
    int m_fd = -1;
};

// "<what> '<path>': <strerror(err)>" as an Error with code IO (or NOT_FOUND for ENOENT).
Error errno_error(std::string_view what, const std::string& path, int err);

// Whole-file read. NOT_FOUND when the file does not exist.
Result<std::string> read_file(const std::string& path);

// Write all bytes to fd, retrying on EINTR/short writes.
Status write_all(int fd, std::string_view data, const std::string& path_for_errors);

// fsync the directory that holds `path` (or `path` itself when it is a directory).
Status fsync_dir(const std::string& dir);

// Create a directory and missing parents (mode 0755 unless given); ok if it exists.
Status make_dirs(const std::string& dir, unsigned mode = 0755);

// Parent directory of a path ("a/b" → "a", "b" → ".").
std::string parent_dir(const std::string& path);

// A path without trailing slashes, as qBittorrent may report a save path ("/srv/x/" → "/srv/x";
// "/" stays "/").
std::string strip_trailing_slashes(std::string path);

// The names in a directory, without "." and "..", sorted. Errors: NOT_FOUND, IO, with a message
// "<what> '<dir>': <cause>".
Result<std::vector<std::string>> list_dir(const std::string& dir, std::string_view what = "cannot list");
// The same for an open directory descriptor (not consumed); `display` names it in errors.
Result<std::vector<std::string>> list_dir(int dirfd, const std::string& display, std::string_view what = "cannot list");

// True when the path exists (lstat succeeds).
bool path_exists(const std::string& path);

// Durable whole-file replace: AtomicFile write + commit in one call.
Status write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0644);

// Durable create-only write: fails with EXISTS if the file is already there (O_EXCL),
// then fsyncs the file and its directory.
Status write_file_exclusive(const std::string& path, std::string_view data, unsigned mode = 0644);
// The same with the content written by `write` to the open temp file (`fd`, named `temp` in its
// errors), for a content too large to hold as one string first.
Status write_file_exclusive_with(const std::string& path, unsigned mode, const std::function<Status(int fd, const std::string& temp)>& write);

}  // namespace archctl
