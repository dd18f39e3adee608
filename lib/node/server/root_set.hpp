#pragma once
// Path confinement for node operations (docs/design.md "Where things run"; docs/torrent-format.md "At use time").
//
// A node serves a fixed set of root directories. Every path in a request is a node path: an
// absolute, lexically clean path ("/srv/a/x/y", no ".", "..", empty or NUL components) that lies
// below one of the roots. Relative paths inside a request (torrent paths below a save path,
// names inside a job directory) must be clean relative paths. Anything else is refused before
// the filesystem is touched (PATH_OUTSIDE_ROOT).
//
// Below a root nothing is followed: directories are opened with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) where the kernel has it, else by an openat(O_NOFOLLOW | O_DIRECTORY) walk
// one component at a time. A symlink anywhere below the root is refused (PATH_SYMLINK); the
// final object of a path is then reached with *at() calls on its parent descriptor with
// O_NOFOLLOW / AT_SYMLINK_NOFOLLOW. Symlinks above a root are the operator's choice and are
// followed when the root itself is opened.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"

namespace archctl::node {

// How directories below a root are resolved. auto_detect uses openat2 and falls back to the walk
// when the kernel lacks it (ENOSYS); walk forces the portable path (tests exercise both).
enum class ResolveMode { auto_detect, walk };
void set_resolve_mode(ResolveMode mode);

// Splits a clean relative path ("a/b/c") into components. PATH_OUTSIDE_ROOT for absolute paths
// and "..", BAD_PATH for empty, "." or NUL components.
[[nodiscard]] Result<std::vector<std::string>> split_relative(std::string_view rel);

// The first existing-component failure of a walk, classified.
[[nodiscard]] Error symlink_error(const std::string& path);

struct LocatedPath {
    std::size_t root = 0;                 // index into RootSet::roots()
    std::vector<std::string> components;  // below the root; empty for the root itself
    std::string path;                     // the node path as given (cleaned)
};

enum class CreateDirs { no, yes };

class RootSet {
public:
    // Opens every root (must be an existing directory given as an absolute path).
    static Result<RootSet> open(const std::vector<std::string>& roots);

    const std::vector<std::string>& paths() const { return m_paths; }
    int root_fd(std::size_t index) const { return m_fds[index].get(); }

    // Lexical confinement: which root holds `path`, and the components below it.
    [[nodiscard]] Result<LocatedPath> locate(std::string_view path) const;

    // Opens the directory at a node path (O_RDONLY|O_DIRECTORY). With CreateDirs::yes missing
    // components are created (0755) and their node paths appended to `created`, shallowest first.
    [[nodiscard]] Result<UniqueFd> open_dir(std::string_view path, CreateDirs create = CreateDirs::no,
                                            std::vector<std::string>* created = nullptr) const;

    // Opens the parent directory of a node path (which must lie strictly below a root) and returns
    // the leaf name beside it.
    struct Parent {
        UniqueFd dir;
        std::string name;
        std::string path;
    };
    [[nodiscard]] Result<Parent> open_parent(std::string_view path, CreateDirs create = CreateDirs::no,
                                             std::vector<std::string>* created = nullptr) const;

private:
    std::vector<std::string> m_paths;
    std::vector<UniqueFd> m_fds;
};

// Opens dirfd/components[0]/.../components[n-1] as a directory without following symlinks.
// `display` names the path in errors. With CreateDirs::yes, missing components are created and
// `display`-based paths of the created ones appended to `created`.
[[nodiscard]] Result<UniqueFd> open_dir_below(int dirfd, std::span<const std::string> components,
                                              const std::string& display, CreateDirs create = CreateDirs::no,
                                              std::vector<std::string>* created = nullptr);

// Caches parent-directory descriptors below one base directory, so that stat-ing or opening
// 100,000 files under a few directories costs a few opens, not one walk per file. A directory
// found missing is remembered as missing too (a tree of 100,000 files not there yet is one walk
// per directory), until a call that may create directories.
class DirCache {
public:
    DirCache(int base_fd, std::string base_display) : m_base(base_fd), m_display(std::move(base_display)) {}
    // Descriptor of base/components[0..n-1] (owned by the cache; valid until the next call that
    // evicts, so use it immediately).
    [[nodiscard]] Result<int> dir(std::span<const std::string> components, CreateDirs create = CreateDirs::no,
                                  std::vector<std::string>* created = nullptr);

private:
    int m_base;
    std::string m_display;
    std::unordered_map<std::string, UniqueFd> m_fds;
    std::unordered_map<std::string, Error> m_missing;  // NOT_FOUND answers of lookups that create nothing
};

// Joins components with '/'.
[[nodiscard]] std::string join_path(std::span<const std::string> components);

}  // namespace archctl::node
