#include "lib/routes/session.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "lib/base/fs.hpp"
#include "lib/base/signals.hpp"

namespace archctl::routes {

std::string now_text() { return format_rfc3339(system_now()); }

WaitEnd wait_end(const Deadlines& d) {
    if (stop_requested()) return WaitEnd::interrupted;
    const auto now = std::chrono::steady_clock::now();
    if (d.stop_at && now >= *d.stop_at) return WaitEnd::stop_deadline;
    if (now >= d.attempt) return WaitEnd::timed_out;
    if (d.no_wait_after && now >= *d.no_wait_after) return WaitEnd::not_waiting;
    return WaitEnd::keep_waiting;
}

Error clean_stop_error(WaitEnd end, const std::string& what) {
    if (end == WaitEnd::interrupted)
        return Error(ErrorCode::ROUTE_INTERRUPTED, fmt::format("interrupted while {}", what), "rerun the same command to continue");
    if (end == WaitEnd::not_waiting)
        return Error(ErrorCode::ROUTE_WAITING, fmt::format("not waiting (--no-wait): {}", what),
                     "rerun without --no-wait to wait for it, or fix the cause");
    return Error(ErrorCode::ROUTE_DEADLINE, fmt::format("time budget (--max-minutes) used up while {}", what),
                 "rerun the same command to continue");
}

void nap(const Deadlines& d, std::chrono::milliseconds interval) {
    auto until = std::chrono::steady_clock::now() + interval;
    until = std::min(until, d.attempt);
    if (d.stop_at) until = std::min(until, *d.stop_at);
    if (d.no_wait_after) until = std::min(until, *d.no_wait_after);
    // Short slices so an interrupt is noticed promptly.
    while (std::chrono::steady_clock::now() < until && !stop_requested())
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
}

Session::Session(Env& env) : m_env(env), m_store(env.state.routes()) {}

Result<session::NodeSession*> Session::link(const std::string& name) { return m_env.nodes.get(name); }

Discovery Session::discover(std::vector<NodeSnapshot>& snapshots, const std::vector<std::string>& nodes) {
    snapshots.clear();
    std::vector<std::string> names = nodes;
    if (names.empty())
        for (const auto& [name, _] : m_env.config.nodes) names.push_back(name);
    for (const auto& name : names) {
        auto l = link(name);
        if (!l.ok()) continue;
        snapshots.push_back(read_snapshot((*l)->st(), (*l)->config()));
    }
    // Device IDs of nodes that could not be read, from what earlier attempts recorded.
    std::map<std::string, std::string> known;
    for (const auto& r : records()) {
        if (!r.cache_device.empty()) known.emplace(r.cache, r.cache_device);
        if (!r.archive_device.empty()) known.emplace(r.archive, r.archive_device);
    }
    for (const auto& s : snapshots)
        if (s.reachable) known.erase(s.node);
    return classify(snapshots, known);
}

std::vector<RouteRecord> Session::records() {
    m_problems.clear();
    return m_store.load_all(m_problems);
}

Result<LockFile> Session::lock(const std::string& purpose) {
    ARCHCTL_TRY_STATUS(make_dirs(m_store.dir()));
    std::vector<std::string> notices;
    auto lock = LockFile::acquire(m_store.dir(), purpose, notices);
    for (const auto& n : notices) say(n);
    return lock;
}

Deadlines Session::deadlines(const EnsureOptions& options) const {
    Deadlines d;
    d.timeout_s = std::max<std::int64_t>(1, m_env.config.provision_timeout_s);
    d.attempt = std::chrono::steady_clock::now() + std::chrono::seconds(d.timeout_s);
    d.stop_at = options.stop_at;
    if (options.no_wait) d.no_wait_after = std::chrono::steady_clock::now();
    return d;
}

void Session::say(const std::string& text) const {
    if (m_env.info) m_env.info(text);
}

std::optional<Error> Session::outage_seen(const std::string& node, const std::string& why, const std::string& doing,
                                          const std::string& hint) {
    const auto now = std::chrono::steady_clock::now();
    const std::int64_t window_s = std::max<std::int64_t>(0, m_env.config.outage_wait_s);
    if (!m_outage_since) {
        m_outage_since = now;
        if (window_s > 0)
            say(fmt::format("archctl: waiting: Syncthing of '{}' does not answer ({}); waiting up to {} s (transfer.outage_wait)", node,
                            why, window_s));
    }
    if (now - *m_outage_since < std::chrono::seconds(window_s)) return std::nullopt;
    return Error(ErrorCode::ROUTE_WAITING,
                 fmt::format("waiting: Syncthing of '{}' unreachable for {} s while {}: {}", node, window_s, doing, why), hint);
}

}  // namespace archctl::routes
