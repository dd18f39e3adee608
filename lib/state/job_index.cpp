// The job index: active markers and the finished-job log; see job_index.hpp for the crash contract.
#include "lib/state/job_index.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <set>
#include <string.h>
#include <string_view>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/atomic_file.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/journal.hpp"

namespace archctl::state {
namespace {

constexpr const char* k_kind = "finished";
constexpr int k_version = 1;
constexpr off_t k_chunk = 64 * 1024;
constexpr std::size_t k_scan_chunk = 1024 * 1024;

// An exclusive flock on <index>/lock for as long as it lives.
class IndexLock {
public:
    static Result<IndexLock> take(const std::string& index_dir) {
        ARCHCTL_TRY_STATUS(make_dirs(index_dir + "/active", 0700));  // an old state directory has none yet
        std::string path = index_dir + "/lock";
        UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
        if (!fd.valid()) return errno_error("cannot open the job index lock", path, errno);
        while (::flock(fd.get(), LOCK_EX) != 0)
            if (errno != EINTR) return errno_error("cannot lock the job index", path, errno);
        return IndexLock(std::move(fd));
    }

    // The locked descriptor, for a holder that outlives this object (IndexRebuild).
    UniqueFd release() && { return std::move(m_fd); }

private:
    explicit IndexLock(UniqueFd fd) : m_fd(std::move(fd)) {}
    UniqueFd m_fd;  // closing it releases the lock
};

// Each complete line of `path`, newest first, until `f` returns false. A torn last line (no
// newline) is skipped; a missing file has no lines. Reads 64 KiB chunks from the end.
Status lines_backwards(const std::string& path, const std::function<bool(const std::string&)>& f) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno == ENOENT ? Status{} : errno_error("cannot open the finished-job log", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat the finished-job log", path, errno);
    std::string pending;  // the start of a line whose end was read already
    bool tail_cut = false;
    for (off_t end = st.st_size; end > 0;) {
        off_t from = end > k_chunk ? end - k_chunk : 0;
        std::string data(static_cast<std::size_t>(end - from), '\0');
        ssize_t n = ::pread(fd.get(), data.data(), data.size(), from);
        if (n != static_cast<ssize_t>(data.size())) return errno_error("cannot read the finished-job log", path, n < 0 ? errno : EIO);
        data += pending;
        pending.clear();
        end = from;
        if (!tail_cut) {
            auto nl = data.rfind('\n');
            if (nl == std::string::npos) continue;  // still inside a torn last line
            data.resize(nl + 1);
            tail_cut = true;
        }
        std::size_t stop = data.size() - 1;  // the newline that ends the current line
        for (;;) {
            std::size_t prev = stop == 0 ? std::string::npos : data.rfind('\n', stop - 1);
            if (prev == std::string::npos) {
                if (from == 0) {
                    if (stop > 0 && !f(data.substr(0, stop))) return {};
                } else {
                    pending = data.substr(0, stop + 1);
                }
                break;
            }
            if (stop - prev > 1 && !f(data.substr(prev + 1, stop - prev - 1))) return {};
            stop = prev;
        }
    }
    return {};
}

// Each complete line of `path` that holds one of `needles`, oldest first and once however many
// it holds, to `f`. A torn last line (no newline) is skipped; a missing file has no lines. Reads
// 1 MiB chunks forward and searches each with memmem, so only the lines that match are split
// out: a log of a million jobs (about 500 MB) is one sequential read, not a million strings.
Status lines_containing(const std::string& path, const std::vector<std::string>& needles, const std::function<void(std::string_view)>& f) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno == ENOENT ? Status{} : errno_error("cannot open the finished-job log", path, errno);
    std::string buf;  // the unscanned rest of the last chunk (a line's start), then the next chunk
    std::vector<std::pair<std::size_t, std::size_t>> hits;  // [start, end) of matching lines
    for (;;) {
        const std::size_t kept = buf.size();
        buf.resize(kept + k_scan_chunk);
        ssize_t n = ::read(fd.get(), buf.data() + kept, k_scan_chunk);
        if (n < 0 && errno == EINTR) {
            buf.resize(kept);
            continue;
        }
        if (n < 0) return errno_error("cannot read the finished-job log", path, errno);
        buf.resize(kept + static_cast<std::size_t>(n));
        if (n == 0) return {};  // what is left has no newline: a torn last line
        const std::size_t end = buf.rfind('\n');
        if (end == std::string::npos) continue;  // a line longer than a chunk so far
        const std::string_view region(buf.data(), end + 1);
        hits.clear();
        for (const auto& needle : needles) {
            for (std::size_t at = 0; at < region.size();) {
                const void* p = needle.empty() ? nullptr : ::memmem(region.data() + at, region.size() - at, needle.data(), needle.size());
                if (!p) break;
                const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(p) - region.data());
                const std::size_t nl = pos == 0 ? std::string_view::npos : region.rfind('\n', pos - 1);
                const std::size_t from = nl == std::string_view::npos ? 0 : nl + 1;
                const std::size_t to = region.find('\n', pos);
                hits.emplace_back(from, to);
                at = to + 1;
            }
        }
        std::sort(hits.begin(), hits.end());
        hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
        for (const auto& [from, to] : hits) f(region.substr(from, to - from));
        buf.erase(0, end + 1);
    }
}

// Each complete line of the open log in [start, size), oldest first, with its offset, to `f`
// (`start` is a line's start). Reads 1 MiB chunks; a torn last line (no newline) is skipped.
Status lines_forward(int fd, off_t size, const std::function<void(off_t, std::string_view)>& f, off_t start = 0) {
    std::string buf;
    off_t at = start;    // the file offset of buf[0]
    off_t read = start;  // the file offset read up to
    while (read < size) {
        const std::size_t kept = buf.size();
        const std::size_t want = static_cast<std::size_t>(std::min<off_t>(static_cast<off_t>(k_scan_chunk), size - read));
        buf.resize(kept + want);
        ssize_t n = ::pread(fd, buf.data() + kept, want, read);
        if (n < 0 && errno == EINTR) {
            buf.resize(kept);
            continue;
        }
        if (n <= 0) return errno_error("cannot read the finished-job log", "index/finished.jsonl", n < 0 ? errno : EIO);
        buf.resize(kept + static_cast<std::size_t>(n));
        read += n;
        std::size_t from = 0;
        for (std::size_t nl; (nl = buf.find('\n', from)) != std::string::npos; from = nl + 1)
            if (nl > from) f(at + static_cast<off_t>(from), std::string_view(buf).substr(from, nl - from));
        buf.erase(0, from);
        at += static_cast<off_t>(from);
    }
    return {};
}

// What one log line is: a row (its id), a removal (the removed id) or anything else (the header,
// a line that does not parse). A row as line_of writes it ({"id":"…",…) is read without parsing.
struct LineKey {
    enum Kind { row, removal, other } kind = other;
    std::string_view id;
};

LineKey key_of(std::string_view line, std::string& held) {
    constexpr std::string_view k_row = "{\"id\":\"";
    if (line.substr(0, k_row.size()) == k_row) {
        const std::size_t end = line.find('"', k_row.size());
        const std::string_view id = end == std::string_view::npos ? std::string_view() : line.substr(k_row.size(), end - k_row.size());
        if (!id.empty() && id.find('\\') == std::string_view::npos) return {LineKey::row, id};
    }
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.contains("journal")) return {};
    if (j.contains("removed")) {
        if (!j["removed"].is_string()) return {};
        held = j["removed"].get<std::string>();
        return {LineKey::removal, held};
    }
    if (!j.contains("id") || !j["id"].is_string()) return {};
    held = j["id"].get<std::string>();
    return held.empty() ? LineKey{} : LineKey{LineKey::row, held};
}

nlohmann::json parse_line(std::string_view line) { return nlohmann::json::parse(line, nullptr, false); }

// The live-row count the newest line records (0 for an empty log).
Result<std::size_t> last_count(const std::string& path) {
    std::size_t n = 0;
    ARCHCTL_TRY_STATUS(lines_backwards(path, [&](const std::string& line) {
        auto j = parse_line(line);
        if (j.is_object() && j.contains("n") && j["n"].is_number_unsigned()) n = j["n"].get<std::size_t>();
        return false;
    }));
    return n;
}

// Whether the log's last 64 KiB already hold a row of `job_id` (a retire a crash interrupted).
Result<bool> in_tail(const std::string& path, const std::string& job_id) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno == ENOENT ? Result<bool>(false) : Result<bool>(errno_error("cannot open the finished-job log", path, errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("cannot stat the finished-job log", path, errno);
    off_t from = st.st_size > k_chunk ? st.st_size - k_chunk : 0;
    std::string data(static_cast<std::size_t>(st.st_size - from), '\0');
    if (::pread(fd.get(), data.data(), data.size(), from) != static_cast<ssize_t>(data.size()))
        return errno_error("cannot read the finished-job log", path, errno);
    return data.find(fmt::format("{{\"id\":\"{}\"", job_id)) != std::string::npos;
}

std::string line_of(std::size_t n, const FinishedEntry& e) {
    return nlohmann::json{{"n", n}, {"id", e.id}, {"row", e.row}, {"nodes", e.nodes}}.dump() + "\n";
}

// Folds log lines (newest first) into live entries: later removals and duplicates drop a row,
// and so does a row whose job directory is gone.
class Folder {
public:
    explicit Folder(const StateDir& dir) : m_dir(dir) {}
    // Returns the entry the line adds, if any.
    std::optional<FinishedEntry> take(const nlohmann::json& j) {
        if (!j.is_object() || j.contains("journal")) return std::nullopt;
        if (!m_total && j.contains("n") && j["n"].is_number_unsigned()) m_total = j["n"].get<std::size_t>();
        if (j.contains("removed")) {
            if (j["removed"].is_string()) m_gone.insert(j["removed"].get<std::string>());
            return std::nullopt;
        }
        std::string id = j.value("id", "");
        if (id.empty() || m_gone.count(id) || !m_seen.insert(id).second) return std::nullopt;
        if (!path_exists(m_dir.job(id))) return std::nullopt;
        return FinishedEntry{id, j.value("row", nlohmann::json::object()), j.value("nodes", "")};
    }
    std::size_t total() const { return m_total.value_or(0); }

private:
    const StateDir& m_dir;
    std::set<std::string> m_gone, m_seen;
    std::optional<std::size_t> m_total;
};

Status write_built(const StateDir& dir) {
    return write_file_atomic(dir.index() + "/built", nlohmann::json{{"index", "jobs"}, {"version", k_version}}.dump() + "\n");
}

}  // namespace

bool JobIndex::built() const { return path_exists(m_dir.index() + "/built"); }

Status JobIndex::mark_active(const std::string& job_id) {
    Status s = write_file_exclusive(marker(job_id), "", 0644);
    if (!s.ok() && s.error().is(ErrorCode::NOT_FOUND)) {
        ARCHCTL_TRY_STATUS(make_dirs(m_dir.index() + "/active", 0700));
        s = write_file_exclusive(marker(job_id), "", 0644);
    }
    if (!s.ok() && !s.error().is(ErrorCode::EXISTS)) return s;
    crash_point("job.index.active");
    return {};
}

Result<std::vector<std::string>> JobIndex::active() const {
    auto names = list_dir(m_dir.index() + "/active", "cannot list active jobs in");
    if (!names.ok() && names.error().is(ErrorCode::NOT_FOUND)) return std::vector<std::string>{};
    return names;
}

bool JobIndex::marker_older_than(const std::string& job_id, long seconds) const {
    struct stat st {};
    if (::stat(marker(job_id).c_str(), &st) != 0) return false;
    return std::time(nullptr) - st.st_mtime > seconds;
}

Status JobIndex::unmark(const std::string& job_id) {
    if (::unlink(marker(job_id).c_str()) != 0) {
        if (errno == ENOENT) return {};
        return errno_error("cannot remove the active marker", marker(job_id), errno);
    }
    return fsync_dir(m_dir.index() + "/active");
}

Status JobIndex::retire(const std::string& job_id, const nlohmann::json& row, const std::string& nodes) {
    {
        ARCHCTL_TRY_ASSIGN(IndexLock lock, IndexLock::take(m_dir.index()));
        ARCHCTL_TRY_ASSIGN(bool already, in_tail(log_path(), job_id));
        if (!already) {
            ARCHCTL_TRY_ASSIGN(JournalWriter w, JournalWriter::open(log_path(), k_kind, k_version));
            ARCHCTL_TRY_ASSIGN(std::size_t n, last_count(log_path()));
            ARCHCTL_TRY_STATUS(w.append(nlohmann::json{{"n", n + 1}, {"id", job_id}, {"row", row}, {"nodes", nodes}}));
        }
    }
    crash_point("job.index.retired");
    return unmark(job_id);
}

Status JobIndex::forget(const std::string& job_id, bool in_log) {
    ARCHCTL_TRY_STATUS(unmark(job_id));
    if (!in_log) return {};
    crash_point("job.index.unmarked");
    ARCHCTL_TRY_ASSIGN(IndexLock lock, IndexLock::take(m_dir.index()));
    ARCHCTL_TRY_ASSIGN(JournalWriter w, JournalWriter::open(log_path(), k_kind, k_version));
    ARCHCTL_TRY_ASSIGN(std::size_t n, last_count(log_path()));
    return w.append(nlohmann::json{{"n", n > 0 ? n - 1 : 0}, {"removed", job_id}});
}

Result<FinishedPage> JobIndex::finished(std::optional<std::size_t> limit) const {
    FinishedPage page;
    Folder fold(m_dir);
    ARCHCTL_TRY_STATUS(lines_backwards(log_path(), [&](const std::string& line) {
        if (limit && page.entries.size() >= *limit) return false;
        if (auto e = fold.take(parse_line(line))) page.entries.push_back(std::move(*e));
        return true;
    }));
    std::reverse(page.entries.begin(), page.entries.end());
    page.total = std::max(fold.total(), page.entries.size());
    if (!limit) page.total = page.entries.size();
    return page;
}

Result<std::vector<FinishedEntry>> JobIndex::finished_matching(const std::string& needle) const {
    std::vector<FinishedEntry> out;
    if (needle.empty()) return out;
    // The lines that may matter: those holding the needle, and removals (a later one drops a row).
    std::vector<std::string> lines;
    ARCHCTL_TRY_STATUS(lines_containing(log_path(), {needle, "\"removed\""}, [&](std::string_view line) { lines.emplace_back(line); }));
    Folder fold(m_dir);  // folds newest first
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (auto e = fold.take(parse_line(*it))) out.push_back(std::move(*e));
    std::reverse(out.begin(), out.end());
    return out;
}

Status JobIndex::rebuild(const std::vector<std::string>& active, std::vector<FinishedEntry> finished) {
    std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    finished.erase(std::unique(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.id == b.id; }), finished.end());
    ARCHCTL_TRY_ASSIGN(IndexRebuild r, begin_rebuild());
    for (const auto& id : active) ARCHCTL_TRY_STATUS(r.add_active(id));
    for (const auto& e : finished) ARCHCTL_TRY_STATUS(r.add_finished(e));
    return r.commit();
}

Result<IndexRebuild> JobIndex::begin_rebuild() {
    ARCHCTL_TRY_ASSIGN(IndexLock lock, IndexLock::take(m_dir.index()));
    ARCHCTL_TRY_ASSIGN(AtomicFile log, AtomicFile::create(log_path()));
    IndexRebuild r(m_dir, std::move(lock).release(), std::move(log));
    r.m_pending = nlohmann::json{{"journal", k_kind}, {"version", k_version}}.dump() + "\n";
    return r;
}

Status IndexRebuild::add_active(const std::string& job_id) { return JobIndex(m_dir).mark_active(job_id); }

Status IndexRebuild::add_finished(const FinishedEntry& entry) {
    if (!m_finished.empty() && entry.id <= m_finished.back())
        return Error(ErrorCode::BAD_VALUE, fmt::format("job '{}' came after job '{}' in a rebuild of the job index, out of id order", entry.id,
                                                       m_finished.back()));
    m_finished.push_back(entry.id);
    m_pending += line_of(m_finished.size(), entry);
    return m_pending.size() >= k_scan_chunk ? flush() : Status{};
}

Status IndexRebuild::flush() {
    Status s = m_log.write(m_pending);
    m_pending.clear();
    return s;
}

Status IndexRebuild::commit() {
    ARCHCTL_TRY_STATUS(flush());
    ARCHCTL_TRY_STATUS(m_log.commit());
    crash_point("job.index.rebuilt_log");
    // Only the markers there are (one listing), not an unlink per finished job.
    JobIndex index(m_dir);
    ARCHCTL_TRY_ASSIGN(auto marked, index.active());
    for (const auto& id : marked)
        if (std::binary_search(m_finished.begin(), m_finished.end(), id)) ARCHCTL_TRY_STATUS(index.unmark(id));
    return write_built(m_dir);
}

Result<FinishedStream> JobIndex::finished_stream() const {
    UniqueFd fd(::open(log_path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid() && errno != ENOENT) return errno_error("cannot open the finished-job log", log_path(), errno);
    FinishedStream stream(m_dir, std::move(fd));
    ARCHCTL_TRY_STATUS(stream.scan());
    return stream;
}

Result<IndexClear> JobIndex::begin_clear() {
    ARCHCTL_TRY_ASSIGN(IndexLock lock, IndexLock::take(m_dir.index()));
    ARCHCTL_TRY_ASSIGN(FinishedStream stream, finished_stream());
    return IndexClear(m_dir, std::move(stream));
}

Status IndexClear::commit() {
    const std::string path = JobIndex(m_dir).log_path();
    ARCHCTL_TRY_ASSIGN(IndexLock lock, IndexLock::take(m_dir.index()));
    if (!m_stream.m_fd.valid()) return {};  // there was no log: nothing was cleared from it
    struct stat was {}, now {};
    if (::fstat(m_stream.m_fd.get(), &was) != 0) return errno_error("cannot stat the finished-job log", path, errno);
    if (::stat(path.c_str(), &now) != 0) {
        if (errno == ENOENT) return {};
        return errno_error("cannot stat the finished-job log", path, errno);
    }
    // A rebuild replaced the log meanwhile: it listed only the jobs whose directories it found.
    if (now.st_dev != was.st_dev || now.st_ino != was.st_ino) return {};
    ARCHCTL_TRY_ASSIGN(AtomicFile log, AtomicFile::create(path));
    ARCHCTL_TRY_STATUS(log.write(nlohmann::json{{"journal", k_kind}, {"version", k_version}}.dump() + "\n"));
    // The lines appended since the stream read the log (jobs that ended meanwhile, removals),
    // complete ones only, each with its count of live rows made anew.
    Status wrote;
    std::size_t live = 0;
    ARCHCTL_TRY_STATUS(lines_forward(m_stream.m_fd.get(), now.st_size, [&](off_t, std::string_view line) {
        nlohmann::json j = parse_line(line);
        if (!j.is_object() || j.contains("journal")) return;
        if (j.contains("removed")) live = live > 0 ? live - 1 : 0;
        else ++live;
        j["n"] = live;
        if (wrote.ok()) wrote = log.write(j.dump() + "\n");
    }, m_stream.m_size));
    ARCHCTL_TRY_STATUS(wrote);
    ARCHCTL_TRY_STATUS(log.commit());
    crash_point("job.index.cleared");
    return {};
}

Status FinishedStream::scan() {
    if (!m_fd.valid()) return {};
    struct stat st {};
    if (::fstat(m_fd.get(), &st) != 0) return errno_error("cannot stat the finished-job log", m_dir.index(), errno);
    m_size = st.st_size;
    std::string newest;  // the largest id so far: a row not after it is out of order
    return lines_forward(m_fd.get(), m_size, [&](off_t offset, std::string_view line) {
        std::string held;
        const LineKey key = key_of(line, held);
        if (key.kind == LineKey::removal) m_removed[std::string(key.id)] = offset;
        if (key.kind != LineKey::row) return;
        if (key.id > newest) newest = key.id;
        else m_late[std::string(key.id)] = Place{offset, line.size()};
    });
}

Status FinishedStream::emit(std::string_view id, std::string_view line, off_t offset, std::size_t& k,
                            const std::function<Status(const FinishedEntry&)>& f) {
    if (auto r = m_removed.find(id); r != m_removed.end() && r->second > offset) return {};
    bool live = false;
    if (m_checked) {
        live = k < m_live.size() && m_live[k];
    } else {
        live = path_exists(m_dir.job(std::string(id)));
        m_live.push_back(live);
    }
    ++k;
    if (!live) return {};
    const nlohmann::json j = parse_line(line);
    if (!j.is_object()) return {};
    return f(FinishedEntry{std::string(id), j.value("row", nlohmann::json::object()), j.value("nodes", "")});
}

Status FinishedStream::each(const std::function<Status(const FinishedEntry&)>& f) {
    std::size_t k = 0;
    Status failed;
    auto late = m_late.begin();
    std::string text;
    // A row out of order, read from its place in the log.
    auto emit_late = [&]() -> Status {
        text.resize(late->second.length);
        ssize_t n = ::pread(m_fd.get(), text.data(), text.size(), late->second.offset);
        if (n != static_cast<ssize_t>(text.size())) return errno_error("cannot read the finished-job log", m_dir.index(), n < 0 ? errno : EIO);
        Status s = emit(late->first, text, late->second.offset, k, f);
        ++late;
        return s;
    };
    std::string newest;
    if (m_fd.valid()) {
        ARCHCTL_TRY_STATUS(lines_forward(m_fd.get(), m_size, [&](off_t offset, std::string_view line) {
            if (!failed.ok()) return;
            std::string held;
            const LineKey key = key_of(line, held);
            if (key.kind != LineKey::row || key.id <= newest) return;  // out of order: merged in from m_late
            newest = key.id;
            while (failed.ok() && late != m_late.end() && late->first < key.id) failed = emit_late();
            if (!failed.ok()) return;
            if (late != m_late.end() && late->first == key.id) failed = emit_late();  // a newer line of this id
            else failed = emit(key.id, line, offset, k, f);
        }));
    }
    while (failed.ok() && late != m_late.end()) failed = emit_late();
    m_checked = true;
    return failed;
}

}  // namespace archctl::state
