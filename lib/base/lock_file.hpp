#pragma once
// LockFile: one holder at a time for a directory (a job, the state directory), with a record that
// names the holder (docs/style.md "Practices" 7; docs/design.md "State on disk").
//
// The lock is `<dir>/lock`, created O_CREAT|O_EXCL, holding JSON: pid, process start time (from
// /proc/<pid>/stat, so a reused pid is not mistaken for the holder), host, started_at and the
// dev/inode of the locked directory. Acquiring when a lock exists:
//   - same host, pid alive with the same start time → LOCKED error naming pid, host and since;
//   - same host, pid dead or alive with another start time → stale: reclaimed, with a notice;
//   - another host → LOCKED, never judged by pid;
//   - the directory's dev/inode differ from the record (state copied elsewhere) → reclaimed.
// Acquirers on one host serialize on flock() of the directory while they check and reclaim.
// Released by the destructor, and by release_all_locks_for_exit() on an abort signal.

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/result.hpp"

namespace archctl {

struct LockRecord {
    long pid = 0;
    std::uint64_t start_time = 0;  // clock ticks since boot, /proc/<pid>/stat field 22
    std::string host;
    std::string started_at;        // RFC 3339 UTC
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    std::string purpose;           // e.g. "archive 1838bf9a70c1"
};

class LockFile {
public:
    // Take the lock of `dir`. Notices about reclaimed stale locks are appended to `notices`.
    static Result<LockFile> acquire(const std::string& dir, const std::string& purpose,
                                    std::vector<std::string>& notices);
    // Read a lock record without taking it (for status views). NOT_FOUND when unlocked.
    static Result<LockRecord> read(const std::string& dir);

    LockFile(LockFile&& other) noexcept;
    LockFile& operator=(LockFile&&) = delete;
    LockFile(const LockFile&) = delete;
    LockFile& operator=(const LockFile&) = delete;
    ~LockFile();

    void release();
    const std::string& path() const { return m_path; }

private:
    explicit LockFile(std::string path);
    std::string m_path;
};

// Unlink every lock this process holds; async-signal-safe (used by the abort path).
void release_all_locks_for_exit();

// True when the holder a lock record names runs now: this host, and a live process with the
// recorded pid and start time (a reused pid is not the holder).
[[nodiscard]] bool lock_holder_alive(const LockRecord& record);

// This machine's host name.
std::string host_name();
// Start time of a live process (field 22 of /proc/<pid>/stat); 0 when the process is gone.
std::uint64_t process_start_time(long pid);

}  // namespace archctl
