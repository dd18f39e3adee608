#include "lib/base/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"

namespace archctl {
namespace {

std::string base_name(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string crash_name(const std::string& path, const char* what) {
    return fmt::format("atomic.{}.{}", base_name(path), what);
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string temp, UniqueFd fd)
    : m_path(std::move(path)), m_temp(std::move(temp)), m_fd(std::move(fd)) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_temp(std::move(other.m_temp)), m_fd(std::move(other.m_fd)),
      m_committed(other.m_committed) {
    other.m_committed = true;  // the moved-from object owns nothing
}

AtomicFile::~AtomicFile() {
    if (!m_committed && !m_temp.empty()) {
        m_fd.reset();
        ::unlink(m_temp.c_str());
    }
}

Result<AtomicFile> AtomicFile::create(const std::string& path, unsigned mode) {
    static std::atomic<unsigned> counter{0};
    std::string dir = parent_dir(path);
    std::string temp = fmt::format("{}/.{}.tmp.{}.{}", dir, base_name(path), ::getpid(), counter++);
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, static_cast<mode_t>(mode)));
    if (!fd.valid()) return errno_error("cannot create temporary file for", path, errno);
    return AtomicFile(path, std::move(temp), std::move(fd));
}

Status AtomicFile::write(std::string_view data) {
    return write_all(m_fd.get(), data, m_path);
}

Status AtomicFile::commit() {
    if (::fsync(m_fd.get()) != 0) return errno_error("cannot fsync", m_path, errno);
    m_fd.reset();
    crash_point(crash_name(m_path, "written"));
    if (::rename(m_temp.c_str(), m_path.c_str()) != 0) return errno_error("cannot rename into place", m_path, errno);
    m_committed = true;
    crash_point(crash_name(m_path, "renamed"));
    return fsync_dir(parent_dir(m_path));
}

}  // namespace archctl
