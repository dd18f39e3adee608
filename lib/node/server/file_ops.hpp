#pragma once
// File primitives shared by the node operations: copy-and-hash in one pass, hashing, reflink,
// capability probes, filesystem identification, stat records and the process's read counters.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/result.hpp"
#include "lib/node/wire/protocol.hpp"

namespace archctl::node {

inline constexpr std::size_t k_chunk_bytes = 1u << 20;  // copy/hash chunk: large sequential I/O, cache-sized

// Writes all of `size` bytes at `offset` (pwrite, retried on EINTR and short writes). A full
// filesystem (ENOSPC, EDQUOT) is DISK_INSUFFICIENT: the floor's business, a 'disk' stop, not a
// verdict on the request.
[[nodiscard]] Status pwrite_full(int fd, const char* buf, std::size_t size, std::uint64_t offset, const std::string& display);

// Whether writing `need` bytes where `free` bytes are free leaves at least `floor` free (the
// free-space floor, min_free; 0: the bytes must merely fit). Exact for every value: a request's
// huge numbers cannot wrap it into a yes.
[[nodiscard]] constexpr bool leaves_floor(std::uint64_t free, std::uint64_t need, std::uint64_t floor) {
    return need <= free && free - need >= floor;
}

// fsync a directory descriptor (`display` names it in errors).
[[nodiscard]] Status fsync_fd_dir(int fd, const std::string& display);

// Called after every chunk with the bytes of that chunk; returning false stops the copy at
// that boundary (budget or cancel).
using ChunkGate = std::function<bool(std::uint64_t chunk_bytes)>;

struct CopyOutcome {
    std::uint64_t bytes = 0;  // bytes copied by this call
    bool stopped = false;     // the gate said stop before the end
};

// Copies src (from `offset`) to dst (at the same offset) until EOF, feeding every byte to
// `hasher` in the same pass (read once, hash, write). Stops at a chunk boundary when `gate`
// refuses. Both descriptors must be positioned-independent (pread/pwrite are used). A write
// that finds dst's filesystem full fails with DISK_INSUFFICIENT.
[[nodiscard]] Result<CopyOutcome> copy_and_hash(int src, int dst, std::uint64_t offset, Xxh3Hasher& hasher,
                                                const ChunkGate& gate, const std::string& display);

// Hashes `length` bytes of fd from offset 0 (or to EOF when length is UINT64_MAX), feeding the
// hasher. Stops at a chunk boundary when `gate` refuses (returns the bytes hashed so far).
[[nodiscard]] Result<CopyOutcome> hash_range(int fd, std::uint64_t length, Xxh3Hasher& hasher,
                                             const ChunkGate& gate, const std::string& display);

// FICLONE dst from src. false (no error) when the filesystem cannot clone between them.
[[nodiscard]] Result<bool> try_reflink(int src, int dst, const std::string& display);

// Filesystem type name from statfs f_type ("ext4", "tmpfs", ...), or "0x<hex>".
[[nodiscard]] std::string fs_type_name(std::int64_t magic);
// Type, id and capabilities of the filesystem of directory `dirfd`, proven by creating (and then
// removing) probe files in it.
[[nodiscard]] RootInfo probe_directory(int dirfd, const std::string& display);

// A temp file `name` in directory `dir` that is removed on every way out of the scope that made
// it (error, stop, exception) unless placed() says it was renamed into place (or is not ours).
class TempFile {
public:
    TempFile(int dir, std::string name) : m_dir(dir), m_name(std::move(name)) {}
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile();
    void placed() { m_dir = -1; }
    const std::string& name() const { return m_name; }

private:
    int m_dir;
    std::string m_name;
};

// What statvfs says of the filesystem of `fd`: the bytes an unprivileged writer may still use
// (f_bavail × f_frsize), its size (f_blocks × f_frsize) and its id (f_fsid). The one statvfs call
// of the node operations: `info` reports these figures, the floors of stage, merge and partfile
// hold against the same free bytes.
struct FsStat {
    std::uint64_t free_bytes = 0;
    std::uint64_t total_bytes = 0;
    std::uint64_t fs_id = 0;
};
// nullopt when the filesystem does not say.
[[nodiscard]] std::optional<FsStat> fs_stat_of(int fd);
// fs_stat_of(fd)'s free bytes.
[[nodiscard]] std::optional<std::uint64_t> free_bytes_of(int fd);

// This process's counters from /proc/self/io (zero when unreadable).
[[nodiscard]] IoCounters read_self_io();

// "file", "dir", "symlink", "fifo", "socket", "char", "block", "other".
[[nodiscard]] std::string_view file_type_name(mode_t mode);
[[nodiscard]] std::int64_t mtime_ns(const struct stat& st);

// Opens `name` in `dirfd` for reading without following a symlink or blocking on a FIFO and
// checks it is a regular file (PATH_SYMLINK / NOT_REGULAR / NOT_FOUND otherwise).
[[nodiscard]] Result<UniqueFd> open_regular(int dirfd, const std::string& name, const std::string& display,
                                            struct stat* st_out = nullptr);

// "/proc/self/fd/<dirfd>/<name>": a path that reaches `name` in an already-confined directory
// without walking its components again, for the path-based lib/base helpers.
[[nodiscard]] std::string fd_path(int dirfd, std::string_view name);
// Durable replace of `name` in `dirfd` (lib/base write_file_atomic through fd_path); errors name
// `display` instead of the /proc path.
[[nodiscard]] Status write_atomic_in(int dirfd, const std::string& name, std::string_view data, const std::string& display,
                                     unsigned mode = 0644);
// Reads up to `size` bytes at `offset` of `fd` into `buf`, through short reads and EINTR; fewer
// only at the end of the file. Errors name `display`.
[[nodiscard]] Result<std::size_t> pread_full(int fd, char* buf, std::size_t size, std::uint64_t offset, const std::string& display);
// Reads a small regular file `name` in `dirfd` without following a symlink (open_regular; at most
// `limit` bytes: TOO_LARGE beyond, naming its size).
[[nodiscard]] Result<std::string> read_small_in(int dirfd, const std::string& name, const std::string& display,
                                                std::size_t limit = 64u << 20);
// lstat of `name` in `dirfd`; nullopt when absent, an error for anything else.
[[nodiscard]] Result<std::optional<struct stat>> stat_in(int dirfd, const std::string& name, const std::string& display);

// True for names Syncthing uses for temporary or conflict files, and other never-payload names
// (docs/torrent-format.md "Path safety"): ".syncthing.*.tmp", "~syncthing~*.tmp", "*.sync-conflict-*", ".stfolder",
// ".stignore", ".stversions".
[[nodiscard]] bool is_syncthing_artifact(std::string_view name);
// ".syncthing.<name>.tmp", the temp name Syncthing pulls `name` into.
[[nodiscard]] std::string syncthing_temp_name(std::string_view name);

}  // namespace archctl::node
