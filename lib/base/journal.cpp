#include "lib/base/journal.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"

namespace archctl {

JournalWriter::JournalWriter(std::string path, UniqueFd fd, SyncPolicy policy, unsigned batch)
    : m_path(std::move(path)), m_fd(std::move(fd)), m_policy(policy), m_batch(batch ? batch : 1) {}

JournalWriter::~JournalWriter() {
    if (m_fd.valid() && m_pending > 0) ::fsync(m_fd.get());
}

Result<JournalWriter> JournalWriter::open(const std::string& path, const std::string& kind, int version,
                                          SyncPolicy policy, unsigned batch_records) {
    bool existed = path_exists(path);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd.valid()) return errno_error("cannot open journal", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat journal", path, errno);
    if (st.st_size == 0) {
        std::string line = nlohmann::json{{"journal", kind}, {"version", version}}.dump() + "\n";
        ARCHCTL_TRY_STATUS(write_all(fd.get(), line, path));
        if (::fsync(fd.get()) != 0) return errno_error("cannot fsync journal", path, errno);
        if (!existed) ARCHCTL_TRY_STATUS(fsync_dir(parent_dir(path)));
    }
    return JournalWriter(path, std::move(fd), policy, batch_records);
}

Status JournalWriter::append(const nlohmann::json& record) {
    std::string line = record.dump() + "\n";
    ARCHCTL_TRY_STATUS(write_all(m_fd.get(), line, m_path));
    ++m_pending;
    if (m_policy == SyncPolicy::every_record || m_pending >= m_batch) ARCHCTL_TRY_STATUS(flush());
    return {};
}

Status JournalWriter::flush() {
    if (m_pending == 0) return {};
    if (::fsync(m_fd.get()) != 0) return errno_error("cannot fsync journal", m_path, errno);
    m_pending = 0;
    crash_point("journal.synced");
    return {};
}

Result<JournalContents> read_journal(const std::string& path, const std::string& kind) {
    ARCHCTL_TRY_ASSIGN(std::string text, read_file(path));
    JournalContents out;
    size_t pos = 0;
    bool first = true;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        bool last = nl == std::string::npos;
        std::string line = text.substr(pos, last ? std::string::npos : nl - pos);
        pos = last ? text.size() : nl + 1;
        if (line.empty()) continue;
        auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded() || last) {
            // A record is complete only with its newline; anything else at the end is torn.
            if (last) {
                out.warnings.push_back(fmt::format("dropped a torn last line in journal '{}'", path));
                break;
            }
            return Error(ErrorCode::CORRUPT, fmt::format("corrupt journal '{}': line is not JSON", path));
        }
        if (first) {
            if (!parsed.is_object() || parsed.value("journal", "") != kind || !parsed.contains("version"))
                return Error(ErrorCode::CORRUPT, fmt::format("corrupt journal '{}': missing '{}' version line", path, kind));
            out.version = parsed["version"].get<int>();
            first = false;
            continue;
        }
        out.records.push_back(std::move(parsed));
    }
    if (first) return Error(ErrorCode::CORRUPT, fmt::format("corrupt journal '{}': missing '{}' version line", path, kind));
    return out;
}

}  // namespace archctl
