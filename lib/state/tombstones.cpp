#include "lib/state/tombstones.hpp"

#include <cctype>
#include <fcntl.h>
#include <functional>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"

namespace archctl::state {
namespace {

constexpr std::string_view k_batch_prefix = "cleared-";
constexpr std::string_view k_batch_suffix = ".jsonl";
constexpr std::size_t k_batch_chunk = 1024 * 1024;

bool is_batch(const std::string& name) {
    return name.size() > k_batch_prefix.size() + k_batch_suffix.size() && name.compare(0, k_batch_prefix.size(), k_batch_prefix) == 0 &&
           name.compare(name.size() - k_batch_suffix.size(), k_batch_suffix.size(), k_batch_suffix) == 0;
}

// Each complete line of a batch file, in order, until `f` returns false. Reads 1 MiB at a time.
Status batch_lines(const std::string& path, const std::function<bool(std::string_view)>& f) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("cannot open the tombstones", path, errno);
    std::string buf;
    for (;;) {
        const std::size_t kept = buf.size();
        buf.resize(kept + k_batch_chunk);
        ssize_t n = ::read(fd.get(), buf.data() + kept, k_batch_chunk);
        if (n < 0 && errno == EINTR) {
            buf.resize(kept);
            continue;
        }
        if (n < 0) return errno_error("cannot read the tombstones", path, errno);
        buf.resize(kept + static_cast<std::size_t>(n));
        std::size_t from = 0;
        for (std::size_t nl; (nl = buf.find('\n', from)) != std::string::npos; from = nl + 1)
            if (nl > from && !f(std::string_view(buf).substr(from, nl - from))) return {};
        buf.erase(0, from);
        if (n == 0) return {};
    }
}

// The header of a batch: its hidden_at ("" when it has none).
std::string batch_hidden_at(const std::string& path) {
    std::string at;
    (void)batch_lines(path, [&](std::string_view line) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.contains("hidden_at") && j["hidden_at"].is_string()) at = j["hidden_at"].get<std::string>();
        return false;
    });
    return at;
}

}  // namespace

Status write_tombstone(const StateDir& dir, const Tombstone& t) {
    nlohmann::json j = {{"job_id", t.job_id}, {"request_digest", t.request_digest}, {"outcome", t.outcome},
                        {"hidden_at", t.hidden_at.empty() ? format_rfc3339(system_now()) : t.hidden_at}};
    return write_file_atomic(dir.tombstones() + "/" + t.job_id, j.dump() + "\n");
}

Result<std::vector<Tombstone>> read_tombstones(const StateDir& dir) {
    std::vector<Tombstone> out;
    ARCHCTL_TRY_ASSIGN(auto names, list_dir(dir.tombstones()));
    for (const auto& name : names) {
        if (name.empty() || name[0] == '.') continue;
        const std::string path = dir.tombstones() + "/" + name;
        if (is_batch(name)) {
            std::string hidden_at;
            ARCHCTL_TRY_STATUS(batch_lines(path, [&](std::string_view line) {
                auto j = nlohmann::json::parse(line, nullptr, false);
                if (!j.is_object()) return true;
                if (j.contains("tombstones")) hidden_at = j.value("hidden_at", "");
                else out.push_back({j.value("job_id", ""), j.value("request_digest", ""), j.value("outcome", ""), hidden_at});
                return true;
            }));
            continue;
        }
        auto text = read_file(path);
        if (!text.ok()) continue;
        auto j = nlohmann::json::parse(text.value(), nullptr, false);
        if (j.is_discarded()) continue;
        out.push_back({j.value("job_id", name), j.value("request_digest", ""), j.value("outcome", ""), j.value("hidden_at", "")});
    }
    return out;
}

Result<size_t> purge_tombstones(const StateDir& dir, long days) {
    ARCHCTL_TRY_ASSIGN(auto names, list_dir(dir.tombstones()));
    size_t removed = 0;
    bool unlinked = false;
    auto cutoff = system_now() - std::chrono::hours(24 * days);
    for (const auto& name : names) {
        if (name.empty() || name[0] == '.') continue;
        const std::string path = dir.tombstones() + "/" + name;
        std::string hidden_at;
        if (is_batch(name)) {
            hidden_at = batch_hidden_at(path);
        } else {
            auto text = read_file(path);
            if (!text.ok()) continue;
            auto j = nlohmann::json::parse(text.value(), nullptr, false);
            if (!j.is_object()) continue;
            hidden_at = j.value("hidden_at", "");
        }
        SystemTime at{};
        if (!parse_rfc3339(hidden_at, at) || at >= cutoff) continue;
        size_t records = 1;
        if (is_batch(name)) {
            records = 0;
            (void)batch_lines(path, [&](std::string_view) {
                ++records;
                return true;
            });
            records = records > 0 ? records - 1 : 0;  // the header
        }
        if (::unlink(path.c_str()) == 0) {
            removed += records;
            unlinked = true;
        }
    }
    if (unlinked) ARCHCTL_TRY_STATUS(fsync_dir(dir.tombstones()));
    return removed;
}

Result<TombstoneBatch> TombstoneBatch::create(const StateDir& dir) {
    const std::string hidden_at = format_rfc3339(system_now());
    std::string stamp;
    for (char c : hidden_at)
        if (std::isalnum(static_cast<unsigned char>(c))) stamp += c;
    ARCHCTL_TRY_ASSIGN(AtomicFile file,
                       AtomicFile::create(fmt::format("{}/{}{}-{}{}", dir.tombstones(), k_batch_prefix, stamp, ::getpid(), k_batch_suffix)));
    TombstoneBatch batch(std::move(file), hidden_at);
    batch.m_pending = nlohmann::json{{"tombstones", "cleared"}, {"version", 1}, {"hidden_at", hidden_at}}.dump() + "\n";
    return batch;
}

Status TombstoneBatch::add(const Tombstone& t) {
    m_pending += nlohmann::json{{"job_id", t.job_id}, {"request_digest", t.request_digest}, {"outcome", t.outcome}}.dump() + "\n";
    ++m_count;
    if (m_pending.size() < k_batch_chunk) return {};
    Status s = m_file.write(m_pending);
    m_pending.clear();
    return s;
}

Status TombstoneBatch::commit() {
    if (m_count == 0) return {};
    ARCHCTL_TRY_STATUS(m_file.write(m_pending));
    m_pending.clear();
    ARCHCTL_TRY_STATUS(m_file.commit());
    crash_point("tombstones.batch");
    return {};
}

}  // namespace archctl::state
