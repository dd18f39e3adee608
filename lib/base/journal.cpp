#include "lib/base/journal.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"

namespace archctl {

namespace {

// Where the journal's complete lines end: a crash mid-append leaves a last line without its
// newline, and appending after it would glue the next record to it and turn the whole journal
// corrupt. The torn tail is cut off (durably) before the first append.
Status cut_torn_tail(int fd, const std::string& path, off_t size) {
    char last = 0;
    if (::pread(fd, &last, 1, size - 1) != 1) return errno_error("cannot read journal", path, errno);
    if (last == '\n') return {};
    // The end of the last complete line: just after the last newline, or 0 when there is none.
    off_t keep = 0;
    char chunk[4096];
    for (off_t end = size; end > 0 && keep == 0;) {
        off_t from = end > static_cast<off_t>(sizeof chunk) ? end - static_cast<off_t>(sizeof chunk) : 0;
        ssize_t n = ::pread(fd, chunk, static_cast<std::size_t>(end - from), from);
        if (n <= 0) return errno_error("cannot read journal", path, errno);
        for (ssize_t i = n - 1; i >= 0 && keep == 0; --i)
            if (chunk[i] == '\n') keep = from + i + 1;
        end = from;
    }
    if (::ftruncate(fd, keep) != 0) return errno_error("cannot cut the torn last line of journal", path, errno);
    if (::fsync(fd) != 0) return errno_error("cannot fsync journal", path, errno);
    return {};
}

}  // namespace

JournalWriter::JournalWriter(std::string path, UniqueFd fd, SyncPolicy policy, unsigned batch)
    : m_path(std::move(path)), m_fd(std::move(fd)), m_policy(policy), m_batch(batch ? batch : 1) {}

JournalWriter::~JournalWriter() {
    if (!m_fd.valid() || m_pending == 0) return;
    if (!m_buffer.empty() && !write_all(m_fd.get(), m_buffer, m_path).ok()) return;
    ::fsync(m_fd.get());
}

Result<JournalWriter> JournalWriter::open(const std::string& path, const std::string& kind, int version,
                                          SyncPolicy policy, unsigned batch_records) {
    bool existed = path_exists(path);
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd.valid()) return errno_error("cannot open journal", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat journal", path, errno);
    if (st.st_size > 0) {
        ARCHCTL_TRY_STATUS(cut_torn_tail(fd.get(), path, st.st_size));
        if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat journal", path, errno);
    }
    if (st.st_size == 0) {
        std::string line = nlohmann::json{{"journal", kind}, {"version", version}}.dump() + "\n";
        ARCHCTL_TRY_STATUS(write_all(fd.get(), line, path));
        if (::fsync(fd.get()) != 0) return errno_error("cannot fsync journal", path, errno);
        if (!existed) ARCHCTL_TRY_STATUS(fsync_dir(parent_dir(path)));
    }
    return JournalWriter(path, std::move(fd), policy, batch_records);
}

Status JournalWriter::append(const nlohmann::json& record) { return append_line(record.dump()); }

Status JournalWriter::append_line(std::string_view json_line) {
    if (m_policy == SyncPolicy::buffered) {
        m_buffer.append(json_line);
        m_buffer.push_back('\n');
    } else {
        std::string line;
        line.reserve(json_line.size() + 1);
        line.append(json_line);
        line.push_back('\n');
        ARCHCTL_TRY_STATUS(write_all(m_fd.get(), line, m_path));
    }
    ++m_pending;
    if (m_policy == SyncPolicy::every_record || m_pending >= m_batch) ARCHCTL_TRY_STATUS(flush());
    return {};
}

Status JournalWriter::flush() {
    if (m_pending == 0) return {};
    if (!m_buffer.empty()) {
        ARCHCTL_TRY_STATUS(write_all(m_fd.get(), m_buffer, m_path));
        m_buffer.clear();
    }
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
