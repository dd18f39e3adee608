#pragma once
// retry_through_outage: do something again while what it needs does not answer (an outage), for
// as long as the caller's wait allows. Jobs wait out an unreachable qBittorrent, Syncthing or
// node this way (lib/jobs/core/outage.hpp), routes an unanswering Syncthing (lib/routes).
//
//   Status s = retry_through_outage([&] { return read(); },
//                                   [](const Status& r) { return !r.ok() && unreachable(r.error()); },
//                                   [&](const Status& r) -> std::optional<Status> {
//                                       if (window_over()) return Error(...);  // end with this
//                                       nap();
//                                       return std::nullopt;                   // try again
//                                   });
//
// `attempt()` is tried; while `outage(result)` says its result is an outage, `wait_out(result)`
// waits it out and returns std::nullopt to try again, or the result to end with (the wait is
// over: a stop, a deadline). Any other result of `attempt()` is returned at once.

#include <optional>
#include <utility>

namespace archctl {

template <class Attempt, class Outage, class WaitOut>
auto retry_through_outage(Attempt&& attempt, Outage&& outage, WaitOut&& wait_out) -> decltype(attempt()) {
    for (;;) {
        auto result = attempt();
        if (!outage(std::as_const(result))) return result;
        if (auto end = wait_out(std::as_const(result))) return std::move(*end);
    }
}

}  // namespace archctl
