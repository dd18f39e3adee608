#include "lib/state/reservations.hpp"

#include <algorithm>

#include <cerrno>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/crash_point.hpp"
#include "lib/base/fs.hpp"
#include "lib/base/hash.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/state/job_store.hpp"

namespace archctl::state {
namespace {

Status check_alias(const std::string& alias) {
    if ((alias.size() != 40 && alias.size() != 64) || !is_hex(alias))
        return Error(ErrorCode::BAD_VALUE, fmt::format("invalid resource alias '{}': expected 40 or 64 hex characters", alias));
    return {};
}

std::string path_of(const StateDir& dir, const std::string& alias) { return dir.reservations() + "/" + alias; }

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

Result<std::optional<std::string>> holder(const StateDir& dir, const std::string& alias) {
    ARCHCTL_TRY_STATUS(check_alias(alias));
    auto text = read_file(path_of(dir, alias));
    if (!text.ok()) {
        if (text.error().is(ErrorCode::NOT_FOUND)) return std::optional<std::string>();
        return text.take_error();
    }
    std::string id = trim(text.value());
    if (id.empty()) return std::optional<std::string>();  // torn create: nobody holds it
    return std::optional<std::string>(id);
}

Status reserve(const StateDir& dir, const std::vector<std::string>& aliases, const std::string& job_id) {
    std::vector<std::string> created;
    auto undo = [&] {
        for (const auto& a : created) ::unlink(path_of(dir, a).c_str());
    };
    for (const std::string& alias : aliases) {
        ARCHCTL_TRY_STATUS(check_alias(alias));
        for (int attempt = 0; attempt < 2; ++attempt) {
            Status s = write_file_exclusive(path_of(dir, alias), job_id + "\n", 0644);
            if (s.ok()) {
                created.push_back(alias);
                crash_point("reservation.created");
                break;
            }
            if (!s.error().is(ErrorCode::EXISTS)) {
                undo();
                return s;
            }
            auto held = holder(dir, alias);
            if (!held.ok()) {
                undo();
                return held.take_error();
            }
            if (held.value() && *held.value() == job_id) break;  // ours already
            if (!held.value()) {                                  // torn, empty: reclaim once
                ::unlink(path_of(dir, alias).c_str());
                continue;
            }
            undo();
            return Error(ErrorCode::RESERVED, fmt::format("resource '{}' is held by job {}", alias.substr(0, 12), *held.value()),
                         fmt::format("see 'archctl job show {}'", *held.value()));
        }
    }
    return {};
}

Status release(const StateDir& dir, const std::vector<std::string>& aliases, const std::string& job_id) {
    for (const std::string& alias : aliases) {
        auto held = holder(dir, alias);
        if (!held.ok()) return held.take_error();
        if (!held.value() || *held.value() != job_id) continue;
        if (::unlink(path_of(dir, alias).c_str()) != 0 && errno != ENOENT)
            return errno_error("cannot release reservation", path_of(dir, alias), errno);
        crash_point("reservation.released");
    }
    return fsync_dir(dir.reservations());
}

namespace {

// Whether `job_id` ended: its ledger says done, cancelled or failed, or, with the ledger lost,
// its events (append-only, kept apart from it) record that it was done.
bool ended(const JobStore& store, const std::string& job_id) {
    auto ledger = store.ledger(job_id);
    if (ledger.ok()) {
        if (!ledger.value().is_object()) return false;
        const auto state = ledger.value().find("state");
        return state != ledger.value().end() && state->is_string() &&
               (*state == "done" || *state == "cancelled" || *state == "failed");
    }
    auto events = store.events(job_id);
    if (!events.ok()) return false;
    return std::any_of(events.value().records.begin(), events.value().records.end(), [](const nlohmann::json& e) {
        return e.is_object() && e.contains("type") && e["type"].is_string() && e["type"] == "done";
    });
}

}  // namespace

Result<std::optional<std::string>> holding_job(const StateDir& dir, const std::vector<std::string>& aliases,
                                                const std::string& digest) {
    JobStore store(dir);
    for (const auto& alias : aliases) {
        ARCHCTL_TRY_ASSIGN(auto held, holder(dir, alias));
        if (!held) continue;
        auto def = store.definition_outline(*held);
        if (!def.ok()) {
            // A crash between reserving and defining left a reservation without a job: stale.
            ARCHCTL_TRY_STATUS(release(dir, {alias}, *held));
            continue;
        }
        // A job that ended holds nothing: its reservation outlived it only because its run was
        // killed between the end and the release.
        if (ended(store, *held)) {
            ARCHCTL_TRY_STATUS(release(dir, {alias}, *held));
            continue;
        }
        if (def.value().value("request_digest", "") == digest) return held;
        auto lock = LockFile::read(store.dir_of(*held));
        std::string by = lock.ok() ? fmt::format(" (pid {} on {}, since {})", lock->pid, lock->host, lock->started_at) : "";
        return Error(ErrorCode::RESERVED, fmt::format("job {} holds '{}'{}", *held, alias.substr(0, 12), by),
                     fmt::format("finish it with 'archctl resume {}', or cancel it with 'archctl job cancel {}'", *held, *held));
    }
    return std::optional<std::string>();
}

}  // namespace archctl::state
