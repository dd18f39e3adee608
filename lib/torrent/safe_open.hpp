#pragma once
// Opening payload files below a save path without following symlinks (docs/torrent-format.md
// "At use time").
//
// The save path itself is opened normally (symlinks above the root are the operator's choice);
// every component below it is opened with openat(O_NOFOLLOW), directories with O_DIRECTORY, so
// a symlink anywhere below the root is refused rather than followed, and the final object must
// be a regular file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"

namespace archctl::torrent {

enum class OpenFailure {
    none,
    missing,      // a component does not exist (or a directory component is not a directory)
    symlink,      // a component below the root is a symlink
    not_regular,  // the final object is not a regular file
    io,           // any other error (permissions, I/O)
};

struct OpenedFile {
    UniqueFd fd;
    std::int64_t size = 0;
    OpenFailure failure = OpenFailure::none;
    std::string detail;  // human cause when failure != none
};

// Opens the save path as a directory. Errors: NOT_FOUND / IO.
[[nodiscard]] Result<UniqueFd> open_root_dir(const std::filesystem::path& root);

// Opens root/rel[0]/.../rel[n-1] for reading with O_NOFOLLOW on every component and
// POSIX_FADV_SEQUENTIAL on the result. Never throws; the failure says why it did not open.
[[nodiscard]] OpenedFile open_below(int root_fd, const std::vector<std::string>& rel);

}  // namespace archctl::torrent
