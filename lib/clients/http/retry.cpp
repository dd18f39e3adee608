#include "lib/clients/http/retry.hpp"

#include <algorithm>
#include <cstdint>
#include <thread>

namespace archctl::clients::http {

Disposition classify(const Attempt& attempt) {
    switch (attempt.failure) {
        case TransportFailure::none:
            if (attempt.status >= 500) return Disposition::transient;
            if (attempt.status >= 400 || attempt.status < 100) return Disposition::permanent;
            return Disposition::success;
        case TransportFailure::refused:
        case TransportFailure::reset:
        case TransportFailure::timeout:
            return Disposition::transient;
        case TransportFailure::resolve:
        case TransportFailure::tls:
        case TransportFailure::other:
            return Disposition::permanent;
    }
    return Disposition::permanent;
}

bool should_retry(const Attempt& attempt, RetryMode mode) {
    if (classify(attempt) != Disposition::transient) return false;
    switch (mode) {
        case RetryMode::transient: return true;
        case RetryMode::connect_only: return attempt.failure == TransportFailure::refused;
        case RetryMode::never: return false;
    }
    return false;
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int next_try) {
    const int doublings = std::clamp(next_try - 2, 0, 30);
    const auto base = std::max<std::int64_t>(policy.base_delay.count(), 0);
    const auto cap = std::max<std::int64_t>(policy.max_delay.count(), 0);
    std::int64_t delay = base;
    for (int i = 0; i < doublings && delay < cap; ++i) delay *= 2;
    return std::chrono::milliseconds(std::min(delay, cap));
}

Sleeper real_sleeper() {
    return [](std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); };
}

Attempt with_retry(const RetryPolicy& policy, RetryMode mode, const std::function<Attempt()>& once,
                   const Sleeper& sleep) {
    const int tries = std::max(policy.attempts, 1);
    Attempt last = once();
    for (int next = 2; next <= tries && should_retry(last, mode); ++next) {
        sleep(backoff_delay(policy, next));
        last = once();
    }
    return last;
}

std::string describe(TransportFailure failure) {
    switch (failure) {
        case TransportFailure::none: return "no error";
        case TransportFailure::refused: return "connection refused";
        case TransportFailure::reset: return "connection reset";
        case TransportFailure::timeout: return "timed out";
        case TransportFailure::resolve: return "host name not resolved";
        case TransportFailure::tls: return "TLS failure";
        case TransportFailure::other: return "request failed";
    }
    return "request failed";
}

}  // namespace archctl::clients::http
