// The target qBittorrent's full recheck, waited for (docs/design.md "Step 4: verify"): a check
// already running is stopped first (qBittorrent 4.5 leaves a torrent asked to recheck during its
// own check at checkingDL 0% for good); a check that makes no progress for a bounded time while
// no other check moves is redone once, and a second stall is QB_RECHECK_STALLED.

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lib/base/clock.hpp"
#include "lib/base/crash_point.hpp"
#include "lib/base/signals.hpp"
#include "lib/jobs/transfer/job_run.hpp"

namespace archctl::jobs::transfer {

namespace qb = clients::qbittorrent;

std::chrono::milliseconds recheck_poll_interval(std::chrono::steady_clock::duration since_recheck) {
    // Most rechecks a job waits for end within seconds: their end is seen within 50 ms (one
    // torrent's info, a request of a few hundred bytes); a longer check is read less and less
    // often, every 2 s once it has run a minute.
    using std::chrono::milliseconds, std::chrono::seconds;
    if (since_recheck < seconds(2)) return milliseconds(50);
    if (since_recheck < seconds(5)) return milliseconds(200);
    if (since_recheck < seconds(20)) return milliseconds(500);
    if (since_recheck < seconds(60)) return milliseconds(1000);
    return milliseconds(2000);
}

std::chrono::seconds recheck_stall_limit(std::int64_t bytes) {
    // Hashing reads at hundreds of MB/s; 30 s of no progress at all, plus a second per 100 MiB
    // for large pieces on slow disks, capped at 10 minutes.
    const auto extra = std::chrono::seconds(std::max<std::int64_t>(bytes, 0) / (100LL << 20));
    return std::min<std::chrono::seconds>(std::chrono::seconds(30) + extra, std::chrono::minutes(10));
}

namespace {

// The checking torrents of a qBittorrent other than `id`, with their progress.
Result<std::map<std::string, double>> checks_elsewhere(qb::Api& client, const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto all, client.all_torrents());
    std::map<std::string, double> out;
    for (const auto& t : all)
        if (t.id != id && t.run_state == qb::RunState::checking) out[t.id] = t.progress;
    return out;
}

// How a recheck is watched for a stall: the torrent's own progress, and when that stands still
// for half the limit, the other checks of the same qBittorrent (it checks one torrent at a time
// by default, and a torrent waiting for its turn shows checking at 0%). A check that moved
// elsewhere in the meantime means this one is queued; nothing moving anywhere for the whole
// limit is a stall.
class StallWatch {
public:
    StallWatch(std::chrono::seconds limit, SteadyTime now) : m_limit(limit), m_since(now) {}

    // The torrent's latest read; true when it stalled.
    Result<bool> observe(qb::Api& client, const qb::TorrentInfo& t, SteadyTime now) {
        if (t.state != m_state || t.progress != m_progress) {
            m_state = t.state;
            m_progress = t.progress;
            restart(now);
            return false;
        }
        if (t.run_state != qb::RunState::checking) return false;
        if (!m_elsewhere && now - m_since >= m_limit / 2) {
            ARCHCTL_TRY_ASSIGN(auto others, checks_elsewhere(client, t.id));
            m_elsewhere = std::move(others);
            return false;
        }
        if (now - m_since < m_limit) return false;
        ARCHCTL_TRY_ASSIGN(auto others, checks_elsewhere(client, t.id));
        if (others.empty() || others == *m_elsewhere) return true;
        restart(now);  // queued behind checks that moved: wait on
        return false;
    }

    [[nodiscard]] std::chrono::seconds limit() const { return m_limit; }

private:
    void restart(SteadyTime now) {
        m_since = now;
        m_elsewhere.reset();
    }

    std::chrono::seconds m_limit;
    SteadyTime m_since;
    std::string m_state;
    double m_progress = -1;
    std::optional<std::map<std::string, double>> m_elsewhere;
};

// A torrent qBittorrent is still checking (a check asked for by a run that was stopped, or the
// one a stall left) is stopped and seen stopped before the recheck: qBittorrent 4.5 leaves a
// torrent asked to recheck during its check at 0% for good, and a stop ends the check.
// `before`: the torrent as read last.
Status stop_running_check(Clock& clock, qb::Api& client, const qb::TorrentInfo& before) {
    auto checking = [](const qb::TorrentInfo& t) { return t.run_state == qb::RunState::checking && t.state != "checkingResumeData"; };
    if (!checking(before)) return {};
    const std::string& id = before.id;
    ARCHCTL_TRY_STATUS(client.stop({id}));
    const auto deadline = clock.steady() + std::chrono::seconds(30);
    for (;;) {
        clock.sleep_for(std::chrono::milliseconds(200));
        ARCHCTL_TRY_ASSIGN(auto now, client.torrents({id}));
        if (now.empty() || !checking(now[0])) return {};
        if (clock.steady() > deadline)
            return Error(ErrorCode::QB_TIMEOUT, fmt::format("qBittorrent did not stop checking torrent '{}' within 30 s of being asked", id.substr(0, 12)));
    }
}

enum class RecheckEnd { verified, stalled };

// One recheck asked for and watched to its end: the torrent stopped again after it, or a stall.
// A stopped torrent must never start downloading.
// `last`: the torrent as the stall left it.
Result<RecheckEnd> recheck_once(Clock& clock, qb::Api& client, const qb::TorrentInfo& before, std::chrono::seconds stall_limit,
                                qb::TorrentInfo* last) {
    const std::string& id = before.id;
    ARCHCTL_TRY_STATUS(stop_running_check(clock, client, before));
    ARCHCTL_TRY_STATUS(client.recheck({id}));
    crash_point("recheck.asked");
    auto begun = clock.steady();
    StallWatch stall(stall_limit, begun);
    bool saw_checking = false;
    for (;;) {
        clock.sleep_for(recheck_poll_interval(clock.steady() - begun));
        // A stop asked for (Ctrl-C, SIGTERM) ends the wait, not the check: qBittorrent finishes it
        // on its own, and the next run stops a check still running and asks for its own.
        if (stop_requested())
            return Error(ErrorCode::CANCELLED, fmt::format("stopped waiting for qBittorrent's recheck of '{}'", id.substr(0, 12)),
                         "rerun the same command, or 'archctl resume', to continue");
        ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
        if (infos.empty()) return Error(ErrorCode::QB_GONE, fmt::format("torrent '{}' disappeared during its recheck", id.substr(0, 12)));
        qb::RunState s = infos[0].run_state;
        if (s == qb::RunState::downloading || s == qb::RunState::metadata)
            return Error(ErrorCode::DOWNLOAD_ATTEMPT, fmt::format("qBittorrent tried to download torrent '{}' (state {})", id.substr(0, 12), infos[0].state),
                         "archctl never downloads; the job failed before commit");
        if (s == qb::RunState::checking) {
            saw_checking = true;
            ARCHCTL_TRY_ASSIGN(bool stalled, stall.observe(client, infos[0], clock.steady()));
            if (stalled) {
                *last = infos[0];
                return RecheckEnd::stalled;
            }
            continue;
        }
        // Until qBittorrent reports the check (or long enough has passed for a check too short to
        // be seen), a stopped torrent at 100% is the state before it: qBittorrent refreshes its
        // torrent states only every RefreshInterval, and a torrent started before the check it
        // has queued ends is stopped again by that check.
        bool settled = saw_checking || clock.steady() - begun > std::chrono::seconds(4);
        if (s == qb::RunState::error) return Error(ErrorCode::QB_ERROR, fmt::format("qBittorrent reports an error for '{}'", id.substr(0, 12)));
        if (settled && s == qb::RunState::stopped) return RecheckEnd::verified;
        if (clock.steady() - begun > std::chrono::minutes(30))
            return Error(ErrorCode::QB_TIMEOUT, fmt::format("the recheck of '{}' did not finish", id.substr(0, 12)));
    }
}

}  // namespace

// A recheck that stalls is asked for once more; a second stall is an error (job_run.hpp).
Result<std::vector<qb::TorrentFile>> recheck_and_wait(Clock& clock, qb::Api& client, const std::string& id) {
    ARCHCTL_TRY_ASSIGN(auto infos, client.torrents({id}));
    if (infos.empty()) return Error(ErrorCode::QB_GONE, fmt::format("torrent '{}' disappeared before its recheck", id.substr(0, 12)));
    qb::TorrentInfo before = infos[0];
    const auto limit = recheck_stall_limit(std::max(before.total_size, before.size));
    for (int attempt = 1;; ++attempt) {
        ARCHCTL_TRY_ASSIGN(RecheckEnd end, recheck_once(clock, client, before, limit, &before));
        if (end == RecheckEnd::verified) return client.files(id);
        if (attempt == 2)
            return Error(ErrorCode::QB_RECHECK_STALLED,
                         fmt::format("qBittorrent's check of torrent '{}' made no progress for {} s, twice (it was stopped and asked again "
                                     "after the first stall)",
                                     id.substr(0, 12), limit.count()),
                         "stop the torrent in that qBittorrent and recheck it there (or restart qBittorrent), then run 'archctl resume'");
    }
}

bool is_recheck_stall(const Error& e) {
    return e.is(ErrorCode::QB_RECHECK_STALLED);
}

}  // namespace archctl::jobs::transfer
