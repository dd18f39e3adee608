#include "lib/state/tombstones.hpp"

#include <unistd.h>

#include "lib/base/clock.hpp"
#include "lib/base/fs.hpp"

namespace archctl::state {

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
        auto text = read_file(dir.tombstones() + "/" + name);
        if (!text.ok()) continue;
        auto j = nlohmann::json::parse(text.value(), nullptr, false);
        if (j.is_discarded()) continue;
        out.push_back({j.value("job_id", name), j.value("request_digest", ""), j.value("outcome", ""), j.value("hidden_at", "")});
    }
    return out;
}

Result<size_t> purge_tombstones(const StateDir& dir, long days) {
    ARCHCTL_TRY_ASSIGN(auto all, read_tombstones(dir));
    size_t removed = 0;
    auto cutoff = system_now() - std::chrono::hours(24 * days);
    for (const auto& t : all) {
        SystemTime at{};
        if (parse_rfc3339(t.hidden_at, at) && at < cutoff) {
            ::unlink((dir.tombstones() + "/" + t.job_id).c_str());
            ++removed;
        }
    }
    if (removed) ARCHCTL_TRY_STATUS(fsync_dir(dir.tombstones()));
    return removed;
}

}  // namespace archctl::state
