#include "lib/node/server/payload_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "lib/node/server/file_ops.hpp"
#include "lib/node/server/root_set.hpp"

namespace archctl::node {

PayloadDirs::PayloadDirs(UniqueFd payload, std::string job_display, PayloadLayout layout)
    : m_payload(std::move(payload)), m_job_display(std::move(job_display)), m_layout(layout) {}

std::string PayloadDirs::display(std::uint32_t index) const { return fmt::format("{}/{}", m_job_display, payload_name(index, m_layout)); }

Result<int> PayloadDirs::dir_of(std::uint32_t index, bool create) {
    if (!m_payload.valid()) return -1;
    if (m_layout == PayloadLayout::flat) return m_payload.get();
    const std::uint32_t shard = shard_of(index);
    if (m_shard == shard && (m_shard_fd.valid() || !create)) {
        m_wrote = m_wrote || create;
        return m_shard_fd.valid() ? m_shard_fd.get() : -1;
    }
    if (m_wrote && m_shard_fd.valid()) ARCHCTL_TRY_STATUS(fsync_fd_dir(m_shard_fd.get(), fmt::format("{}/{}/{}", m_job_display, k_payload_dir, *m_shard)));
    m_shard = shard;
    m_shard_fd.reset();
    m_wrote = false;
    const std::string name = shard_name(index);
    const std::string shown = fmt::format("{}/{}", m_job_display, payload_dir(index, m_layout));
    if (create) {
        if (::mkdirat(m_payload.get(), name.c_str(), 0755) == 0) {
            ARCHCTL_TRY_STATUS(fsync_fd_dir(m_payload.get(), fmt::format("{}/{}", m_job_display, k_payload_dir)));
        } else if (errno != EEXIST) {
            return errno_error("cannot create directory", shown, errno);
        }
    }
    auto fd = open_dir_below(m_payload.get(), std::vector<std::string>{name}, shown);
    if (!fd.ok()) {
        if (fd.error().is(ErrorCode::NOT_FOUND) && !create) return -1;
        return fd.take_error();
    }
    m_shard_fd = std::move(fd).value();
    m_wrote = create;
    return m_shard_fd.get();
}

Status PayloadDirs::sync() {
    if (m_wrote && m_shard_fd.valid()) ARCHCTL_TRY_STATUS(fsync_fd_dir(m_shard_fd.get(), fmt::format("{}/{}/{}", m_job_display, k_payload_dir, *m_shard)));
    m_wrote = false;
    if (m_payload.valid()) ARCHCTL_TRY_STATUS(fsync_fd_dir(m_payload.get(), fmt::format("{}/{}", m_job_display, k_payload_dir)));
    return {};
}

}  // namespace archctl::node
