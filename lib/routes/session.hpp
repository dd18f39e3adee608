#pragma once
// Session: one routes call's shared machinery (internal to lib/routes) — the record store, the
// node sessions (the caller's, Env::nodes), live discovery, and the clock/deadline
// rules every wait follows.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/clock.hpp"
#include "lib/base/lock_file.hpp"
#include "lib/routes/discovery.hpp"
#include "lib/session/node_session.hpp"
#include "lib/routes/route_record.hpp"
#include "lib/routes/routes.hpp"

namespace archctl::routes {

// When waiting must end: the attempt's own timeout, the caller's stop time, an interrupt.
struct Deadlines {
    SteadyTime attempt;
    std::optional<SteadyTime> stop_at;
    std::int64_t timeout_s = 0;
    // --no-wait: a wait that is still needed at this time ends (not_waiting) instead of going on.
    std::optional<SteadyTime> no_wait_after;
};

enum class WaitEnd { keep_waiting, interrupted, stop_deadline, timed_out, not_waiting };

[[nodiscard]] WaitEnd wait_end(const Deadlines& deadlines);
[[nodiscard]] Error clean_stop_error(WaitEnd end, const std::string& what);
// How long --no-wait lets a nonce travel a healthy route (Syncthing carries it in about a second).
inline constexpr auto k_no_wait_nonce_grace = std::chrono::seconds(15);
// Sleep up to `interval`, never past the deadlines.
void nap(const Deadlines& deadlines, std::chrono::milliseconds interval);

class Session {
public:
    explicit Session(Env& env);

    [[nodiscard]] Env& env() { return m_env; }
    [[nodiscard]] const RouteStore& store() const { return m_store; }
    // The node named `name`; NODE_UNKNOWN when the config has none.
    [[nodiscard]] Result<session::NodeSession*> link(const std::string& name);
    [[nodiscard]] const config::NodeConfig* node(const std::string& name) const { return m_env.config.node(name); }

    // Snapshots of `nodes` (all configured nodes when empty) and their classification.
    [[nodiscard]] Discovery discover(std::vector<NodeSnapshot>& snapshots, const std::vector<std::string>& nodes = {});

    // Records, with unreadable ones noted in problems().
    [[nodiscard]] std::vector<RouteRecord> records();
    [[nodiscard]] const std::vector<std::string>& problems() const { return m_problems; }

    // The routes lock (<state>/routes/lock): one routes call that may write at a time.
    [[nodiscard]] Result<LockFile> lock(const std::string& purpose);

    [[nodiscard]] Deadlines deadlines(const EnsureOptions& options) const;
    void say(const std::string& text) const;

    // Node `node`'s Syncthing did not answer (`why`) while this call was `doing` something. The
    // first sight starts the call's outage window (transfer.outage_wait); once the window is
    // over, the ROUTE_WAITING error that ends the wait (a clean stop), with `hint`.
    [[nodiscard]] std::optional<Error> outage_seen(const std::string& node, const std::string& why, const std::string& doing,
                                                   const std::string& hint);

private:
    Env& m_env;
    RouteStore m_store;
    std::vector<std::string> m_problems;
    std::optional<SteadyTime> m_outage_since;  // first sight of an unanswering Syncthing in this call
};

// Current time as RFC 3339.
[[nodiscard]] std::string now_text();

}  // namespace archctl::routes
