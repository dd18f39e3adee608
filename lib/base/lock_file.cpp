#include "lib/base/lock_file.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"

namespace archctl {
namespace {

// Fixed-size registry so the abort path can unlink without allocating.
constexpr size_t k_max_locks = 16;
std::array<std::array<char, 4096>, k_max_locks> g_lock_paths{};
std::array<volatile sig_atomic_t, k_max_locks> g_lock_used{};

void register_lock(const std::string& path) {
    for (size_t i = 0; i < k_max_locks; ++i) {
        if (!g_lock_used[i] && path.size() < g_lock_paths[i].size()) {
            std::memcpy(g_lock_paths[i].data(), path.c_str(), path.size() + 1);
            g_lock_used[i] = 1;
            return;
        }
    }
}

void unregister_lock(const std::string& path) {
    for (size_t i = 0; i < k_max_locks; ++i)
        if (g_lock_used[i] && path == g_lock_paths[i].data()) g_lock_used[i] = 0;
}

nlohmann::json to_json(const LockRecord& r) {
    return {{"pid", r.pid}, {"start_time", r.start_time}, {"host", r.host}, {"started_at", r.started_at},
            {"dev", r.dev}, {"ino", r.ino}, {"purpose", r.purpose}};
}

Result<LockRecord> parse_record(const std::string& text, const std::string& path) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Error(ErrorCode::CORRUPT, fmt::format("unreadable lock '{}'", path));
    LockRecord r;
    r.pid = j.value("pid", 0L);
    r.start_time = j.value("start_time", std::uint64_t{0});
    r.host = j.value("host", "");
    r.started_at = j.value("started_at", "");
    r.dev = j.value("dev", std::uint64_t{0});
    r.ino = j.value("ino", std::uint64_t{0});
    r.purpose = j.value("purpose", "");
    return r;
}

enum class Verdict { live, stale_dead, stale_moved, stale_torn, foreign };

Verdict judge(const Result<LockRecord>& rec, const struct stat& dir_st, const std::string& me) {
    if (!rec.ok()) return Verdict::stale_torn;  // crash between create and write
    const LockRecord& r = rec.value();
    if (r.dev != static_cast<std::uint64_t>(dir_st.st_dev) || r.ino != static_cast<std::uint64_t>(dir_st.st_ino))
        return Verdict::stale_moved;
    if (r.host != me) return Verdict::foreign;
    return lock_holder_alive(r) ? Verdict::live : Verdict::stale_dead;
}

std::string holder_text(const LockRecord& r) {
    std::string since = r.started_at.size() >= 16 ? r.started_at.substr(0, 16) : r.started_at;
    std::replace(since.begin(), since.end(), 'T', ' ');
    return fmt::format("pid {} on {}, since {}", r.pid, r.host, since);
}

}  // namespace

bool lock_holder_alive(const LockRecord& r) {
    if (r.host != host_name()) return false;
    std::uint64_t start = process_start_time(r.pid);
    return start != 0 && start == r.start_time;
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

std::uint64_t process_start_time(long pid) {
    if (pid <= 0) return 0;
    auto text = read_file(fmt::format("/proc/{}/stat", pid));
    if (!text.ok()) return 0;
    const std::string& s = text.value();
    auto rparen = s.rfind(')');
    if (rparen == std::string::npos) return 0;
    // Fields after "comm)": state is field 3; starttime is field 22.
    size_t pos = rparen + 2;
    for (int field = 3; field < 22; ++field) {
        pos = s.find(' ', pos);
        if (pos == std::string::npos) return 0;
        ++pos;
    }
    if (pos < 2) return 0;
    char state = s[rparen + 2];
    if (state == 'Z' || state == 'X') return 0;  // a zombie holds nothing
    return std::strtoull(s.c_str() + pos, nullptr, 10);
}

LockFile::LockFile(std::string path) : m_path(std::move(path)) { register_lock(m_path); }

LockFile::LockFile(LockFile&& other) noexcept : m_path(std::move(other.m_path)) { other.m_path.clear(); }

LockFile::~LockFile() { release(); }

void LockFile::release() {
    if (m_path.empty()) return;
    unregister_lock(m_path);
    ::unlink(m_path.c_str());
    m_path.clear();
}

Result<LockRecord> LockFile::read(const std::string& dir) {
    std::string path = dir + "/lock";
    ARCHCTL_TRY_ASSIGN(std::string text, read_file(path));
    return parse_record(text, path);
}

Result<LockFile> LockFile::acquire(const std::string& dir, const std::string& purpose,
                                   std::vector<std::string>& notices) {
    std::string path = dir + "/lock";
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.valid()) return errno_error("cannot open directory to lock", dir, errno);
    if (::flock(dir_fd.get(), LOCK_EX) != 0) return errno_error("cannot lock directory", dir, errno);
    struct stat dir_st {};
    if (::fstat(dir_fd.get(), &dir_st) != 0) return errno_error("cannot stat", dir, errno);

    LockRecord mine;
    mine.pid = ::getpid();
    mine.start_time = process_start_time(mine.pid);
    mine.host = host_name();
    mine.started_at = format_rfc3339(system_now());
    mine.dev = static_cast<std::uint64_t>(dir_st.st_dev);
    mine.ino = static_cast<std::uint64_t>(dir_st.st_ino);
    mine.purpose = purpose;

    for (int attempt = 0; attempt < 2; ++attempt) {
        Status created = write_file_exclusive(path, to_json(mine).dump() + "\n", 0644);
        if (created.ok()) return LockFile(path);
        if (!created.error().is(ErrorCode::EXISTS)) return created.take_error();
        auto text = read_file(path);
        if (!text.ok() && text.error().is(ErrorCode::NOT_FOUND)) continue;
        auto rec = text.ok() ? parse_record(text.value(), path) : Result<LockRecord>(text.error());
        Verdict v = judge(rec, dir_st, mine.host);
        if (v == Verdict::live || v == Verdict::foreign) {
            const LockRecord& r = rec.value();
            std::string what = r.purpose.empty() ? dir : r.purpose;
            return Error(ErrorCode::LOCKED, fmt::format("'{}' is locked by {}", what, holder_text(r)),
                         v == Verdict::foreign
                             ? fmt::format("the holder runs on another host; if it is gone, remove '{}'", path)
                             : "wait for it to finish, or stop that process");
        }
        const char* why = v == Verdict::stale_moved ? "the state directory was copied or moved"
                          : v == Verdict::stale_torn ? "the lock record was incomplete"
                                                     : "its process is gone";
        notices.push_back(rec.ok() ? fmt::format("reclaimed stale lock '{}' ({}; was {})", path, why, holder_text(rec.value()))
                                   : fmt::format("reclaimed stale lock '{}' ({})", path, why));
        crash_point("lock.reclaim");
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("cannot remove stale lock", path, errno);
    }
    return Error(ErrorCode::LOCKED, fmt::format("cannot lock '{}': another process keeps taking it", dir));
}

void release_all_locks_for_exit() {
    for (size_t i = 0; i < k_max_locks; ++i)
        if (g_lock_used[i]) ::unlink(g_lock_paths[i].data());
}

}  // namespace archctl
