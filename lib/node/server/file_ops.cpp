#include "lib/node/server/file_ops.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace archctl::node {

Result<std::size_t> pread_full(int fd, char* buf, std::size_t size, std::uint64_t offset, const std::string& display) {
    std::size_t got = 0;
    while (got < size) {
        ssize_t n = ::pread(fd, buf + got, size - got, static_cast<off_t>(offset + got));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("cannot read", display, errno);
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    return got;
}

namespace {

std::atomic<unsigned> g_probe_counter{0};

std::unique_ptr<char[]> chunk_buffer() { return std::make_unique<char[]>(k_chunk_bytes); }

// One read-hash-write step of a copy: small enough that the bytes just read are still in the CPU
// cache when they are hashed and written.
constexpr std::size_t k_io_block = 256u << 10;
// Write-behind window of a copy (see WriteBehind).
constexpr std::uint64_t k_writeback_window = 8u << 20;

// Write-behind for a file written sequentially: each finished window is handed to the disk at
// once and the window two back is waited for, so the disk works while the copy goes on, dirty
// pages stay bounded, and the final fsync finds little left. Advisory only (durability is still
// the caller's fsync, which also reports any write error); a filesystem without
// sync_file_range just does nothing here.
class WriteBehind {
public:
    WriteBehind(int fd, std::uint64_t start) : m_fd(fd), m_start(start) {}
    void written_to(std::uint64_t end) {
        while (end - m_start >= k_writeback_window) {
            auto from = static_cast<off_t>(m_start);
            auto len = static_cast<off_t>(k_writeback_window);
            ::sync_file_range(m_fd, from, len, SYNC_FILE_RANGE_WRITE);
            if (m_start >= m_first + 2 * k_writeback_window)
                ::sync_file_range(m_fd, from - 2 * len, len,
                                  SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
            m_start += k_writeback_window;
        }
    }

private:
    int m_fd;
    std::uint64_t m_start;
    std::uint64_t m_first = m_start;
};

struct ProbeFiles {
    int dirfd;
    std::vector<std::string> names;
    ~ProbeFiles() {
        for (const auto& n : names) ::unlinkat(dirfd, n.c_str(), 0);
    }
    std::string next() {
        names.push_back(fmt::format(".archctl-probe.{}.{}", ::getpid(), g_probe_counter++));
        return names.back();
    }
};

Capabilities probe_capabilities(int dirfd, const std::string& display) {
    Capabilities c;
    ProbeFiles files{dirfd, {}};
    std::string a = files.next();
    UniqueFd fa(::openat(dirfd, a.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fa.valid()) {
        c.probe_error = errno_error("cannot create probe file in", display, errno).message;
        return c;
    }
    std::string block(4096, 'a');
    if (!pwrite_full(fa.get(), block.data(), block.size(), 0, display).ok()) {
        c.probe_error = fmt::format("cannot write probe file in '{}'", display);
        return c;
    }
    std::string l = files.next();
    c.hardlink = ::linkat(dirfd, a.c_str(), dirfd, l.c_str(), 0) == 0;
    std::string r = files.next();
    UniqueFd fr(::openat(dirfd, r.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fr.valid()) c.reflink = ::ioctl(fr.get(), FICLONE, fa.get()) == 0;
    std::string k = files.next();
    UniqueFd fk(::openat(dirfd, k.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fk.valid()) {
        loff_t in = 0, out = 0;
        c.copy_file_range = ::copy_file_range(fa.get(), &in, fk.get(), &out, block.size(), 0) ==
                            static_cast<ssize_t>(block.size());
    }
    std::string s = files.next();
    UniqueFd fs(::openat(dirfd, s.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fs.valid() && ::ftruncate(fs.get(), 1 << 20) == 0) {
        struct stat st {};
        bool hole = ::lseek(fs.get(), 0, SEEK_DATA) < 0 && errno == ENXIO;
        c.sparse = hole && ::fstat(fs.get(), &st) == 0 && st.st_blocks == 0;
    }
    return c;
}

}  // namespace

Status pwrite_full(int fd, const char* buf, std::size_t size, std::uint64_t offset, const std::string& display) {
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = ::pwrite(fd, buf + done, size - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOSPC || errno == EDQUOT)
                return Error(ErrorCode::DISK_INSUFFICIENT, fmt::format("cannot write '{}': its filesystem is full ({})", display,
                                                                       errno == ENOSPC ? "no space left" : "quota exceeded"));
            return errno_error("cannot write", display, errno);
        }
        done += static_cast<std::size_t>(n);
    }
    return {};
}

Status fsync_fd_dir(int fd, const std::string& display) {
    if (::fsync(fd) != 0 && errno != EINVAL) return errno_error("cannot fsync directory", display, errno);
    return {};
}

Result<CopyOutcome> copy_and_hash(int src, int dst, std::uint64_t offset, Xxh3Hasher& hasher, const ChunkGate& gate,
                                  const std::string& display) {
    auto buf = std::make_unique<char[]>(k_io_block);
    CopyOutcome out;
    ::posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
    WriteBehind behind(dst, offset);
    for (;;) {
        std::size_t n = 0;  // bytes of this chunk, in k_io_block steps
        while (n < k_chunk_bytes) {
            std::size_t want = std::min(k_io_block, k_chunk_bytes - n);
            ARCHCTL_TRY_ASSIGN(std::size_t got, pread_full(src, buf.get(), want, offset + n, display));
            if (got == 0) break;
            hasher.update(buf.get(), got);
            ARCHCTL_TRY_STATUS(pwrite_full(dst, buf.get(), got, offset + n, display));
            n += got;
            if (got < want) break;
        }
        if (n == 0) break;
        offset += n;
        behind.written_to(offset);
        out.bytes += n;
        bool go_on = !gate || gate(n);
        if (n < k_chunk_bytes) break;  // end of file: a stop request applies to the next file
        if (!go_on) {
            out.stopped = true;
            return out;
        }
    }
    return out;
}

Result<CopyOutcome> hash_range(int fd, std::uint64_t length, Xxh3Hasher& hasher, const ChunkGate& gate,
                               const std::string& display) {
    auto buf = chunk_buffer();
    CopyOutcome out;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::uint64_t offset = 0;
    while (offset < length) {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(k_chunk_bytes, length - offset));
        ARCHCTL_TRY_ASSIGN(std::size_t n, pread_full(fd, buf.get(), want, offset, display));
        if (n == 0) break;
        hasher.update(buf.get(), n);
        offset += n;
        out.bytes += n;
        if (n < want) break;
        if (gate && offset < length && !gate(n)) {
            out.stopped = true;
            return out;
        }
    }
    return out;
}

Result<bool> try_reflink(int src, int dst, const std::string& display) {
    if (::ioctl(dst, FICLONE, src) == 0) return true;
    int err = errno;
    if (err == EOPNOTSUPP || err == EXDEV || err == EINVAL || err == ENOTTY || err == ENOSYS || err == EPERM)
        return false;
    return errno_error("cannot reflink", display, err);
}

std::string fs_type_name(std::int64_t magic) {
    switch (static_cast<std::uint64_t>(magic) & 0xffffffffu) {
        case 0xEF53: return "ext4";
        case 0x01021994: return "tmpfs";
        case 0x58465342: return "xfs";
        case 0x9123683E: return "btrfs";
        case 0x2FC12FC1: return "zfs";
        case 0x6969: return "nfs";
        case 0x65735546: return "fuse";
        case 0x794C7630: return "overlay";
        case 0xFF534D42: return "cifs";
        case 0xFE534D42: return "smb2";
        case 0x2011BAB0: return "exfat";
        case 0x4D44: return "vfat";
        case 0x5346544E: return "ntfs";
        case 0xF2F52010: return "f2fs";
        case 0xCA451A4E: return "bcachefs";
        default: return fmt::format("0x{:x}", static_cast<std::uint64_t>(magic));
    }
}

RootInfo probe_directory(int dirfd, const std::string& display) {
    RootInfo info;
    info.path = display;
    struct statfs sf {};
    if (::fstatfs(dirfd, &sf) == 0) info.fs_type = fs_type_name(static_cast<std::int64_t>(sf.f_type));
    if (auto fs = fs_stat_of(dirfd)) info.fs_id = fmt::format("{:016x}", fs->fs_id);
    info.capabilities = probe_capabilities(dirfd, display);
    return info;
}

TempFile::~TempFile() {
    if (m_dir >= 0) ::unlinkat(m_dir, m_name.c_str(), 0);
}

std::optional<FsStat> fs_stat_of(int fd) {
    struct statvfs sv {};
    if (::fstatvfs(fd, &sv) != 0) return std::nullopt;
    return FsStat{.free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize,
                  .total_bytes = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize,
                  .fs_id = static_cast<std::uint64_t>(sv.f_fsid)};
}

std::optional<std::uint64_t> free_bytes_of(int fd) {
    if (auto fs = fs_stat_of(fd)) return fs->free_bytes;
    return std::nullopt;
}

IoCounters read_self_io() {
    IoCounters io;
    std::FILE* f = std::fopen("/proc/self/io", "r");
    if (!f) return io;
    char key[64];
    unsigned long long value = 0;
    while (std::fscanf(f, "%63[^:]: %llu\n", key, &value) == 2) {
        std::string k(key);
        if (k == "rchar") io.rchar = value;
        if (k == "read_bytes") io.read_bytes = value;
    }
    std::fclose(f);
    return io;
}

std::string_view file_type_name(mode_t mode) {
    if (S_ISREG(mode)) return "file";
    if (S_ISDIR(mode)) return "dir";
    if (S_ISLNK(mode)) return "symlink";
    if (S_ISFIFO(mode)) return "fifo";
    if (S_ISSOCK(mode)) return "socket";
    if (S_ISCHR(mode)) return "char";
    if (S_ISBLK(mode)) return "block";
    return "other";
}

std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

Result<UniqueFd> open_regular(int dirfd, const std::string& name, const std::string& display, struct stat* st_out) {
    UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        int err = errno;
        struct stat st {};
        if (err == ELOOP || (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
            return Error(ErrorCode::PATH_SYMLINK, fmt::format("refusing path '{}': it is a symlink", display),
                         "archctl never follows symlinks below a node root");
        return errno_error("cannot open", display, err);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat", display, errno);
    if (!S_ISREG(st.st_mode))
        return Error(ErrorCode::NOT_REGULAR, fmt::format("refusing path '{}': it is a {}, not a regular file", display,
                                                file_type_name(st.st_mode)));
    // Regular files ignore O_NONBLOCK, but clear it anyway so later reads are plain.
    ::fcntl(fd.get(), F_SETFL, 0);
    if (st_out) *st_out = st;
    return fd;
}

std::string fd_path(int dirfd, std::string_view name) { return fmt::format("/proc/self/fd/{}/{}", dirfd, name); }

Status write_atomic_in(int dirfd, const std::string& name, std::string_view data, const std::string& display, unsigned mode) {
    Status st = write_file_atomic(fd_path(dirfd, name), data, mode);
    if (!st.ok()) {
        Error e = st.take_error();
        return Error(e.code, fmt::format("cannot write '{}': {}", display, e.message), e.hint);
    }
    return {};
}

Result<std::string> read_small_in(int dirfd, const std::string& name, const std::string& display, std::size_t limit) {
    struct stat st {};
    ARCHCTL_TRY_ASSIGN(UniqueFd fd, open_regular(dirfd, name, display, &st));
    if (static_cast<std::uint64_t>(st.st_size) > limit)
        return Error(ErrorCode::TOO_LARGE, fmt::format("cannot read '{}': it is {} bytes, larger than {} bytes", display,
                                                      static_cast<std::uint64_t>(st.st_size), limit));
    std::string out(static_cast<std::size_t>(st.st_size), '\0');
    ARCHCTL_TRY_ASSIGN(std::size_t n, pread_full(fd.get(), out.data(), out.size(), 0, display));
    out.resize(n);
    return out;
}

Result<std::optional<struct stat>> stat_in(int dirfd, const std::string& name, const std::string& display) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return std::optional<struct stat>(st);
    if (errno == ENOENT) return std::optional<struct stat>();
    return errno_error("cannot stat", display, errno);
}

bool is_syncthing_artifact(std::string_view name) {
    if (name == ".stfolder" || name == ".stignore" || name == ".stversions") return true;
    if (name.starts_with(".syncthing.") && name.ends_with(".tmp")) return true;
    if (name.starts_with("~syncthing~") && name.ends_with(".tmp")) return true;
    return name.find(".sync-conflict-") != std::string_view::npos;
}

std::string syncthing_temp_name(std::string_view name) { return fmt::format(".syncthing.{}.tmp", name); }

}  // namespace archctl::node
