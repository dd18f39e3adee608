#pragma once
// Retry as a wrapper around one HTTP attempt (docs/style.md "Retry").
//
// An attempt ends in a transport failure (the request never produced a status) or a response.
// classify() sorts it into success, transient (worth another try: connection refused or reset,
// timeouts, 5xx) and permanent (4xx, TLS and URL problems, unresolvable host). with_retry()
// repeats transient attempts with bounded exponential backoff; the sleep is a seam so unit
// tests never sleep.

#include <chrono>
#include <functional>
#include <string>

namespace archctl::clients::http {

// Why an attempt produced no HTTP status.
enum class TransportFailure {
    none,       // a response arrived (any status)
    refused,    // connection refused / could not connect
    reset,      // connection reset, empty reply, send/receive error
    timeout,    // connect or total timeout
    resolve,    // host name did not resolve
    tls,        // certificate or handshake failure
    other,      // malformed URL, unsupported protocol, out of memory, …
};

// One attempt's outcome, as the retry logic sees it.
struct Attempt {
    TransportFailure failure = TransportFailure::none;
    std::string detail;  // libcurl's explanation for a failure (never contains request data)
    long status = 0;     // HTTP status when failure == none
};

enum class Disposition { success, transient, permanent };

// Which transient failures a request may be repeated after.
enum class RetryMode {
    transient,     // every transient failure (idempotent requests)
    connect_only,  // only failures where the request surely never reached the server
    never,
};

[[nodiscard]] Disposition classify(const Attempt& attempt);

// Whether `attempt` may be repeated under `mode` (false for success and permanent outcomes).
[[nodiscard]] bool should_retry(const Attempt& attempt, RetryMode mode);

struct RetryPolicy {
    int attempts = 3;                                // total tries, ≥ 1
    std::chrono::milliseconds base_delay{200};       // delay before the 2nd try
    std::chrono::milliseconds max_delay{5000};       // cap for later delays
};

// Delay before try number `next_try` (2 for the first retry): base · 2^(next_try−2), capped.
[[nodiscard]] std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int next_try);

using Sleeper = std::function<void(std::chrono::milliseconds)>;

// The real sleeper (std::this_thread::sleep_for).
[[nodiscard]] Sleeper real_sleeper();

// Run `once` until it succeeds, fails permanently, may not be repeated under `mode`, or
// `policy.attempts` tries are used up; sleep through `sleep` between tries. Returns the last
// attempt. `once` stores whatever else it produced (the response) itself.
Attempt with_retry(const RetryPolicy& policy, RetryMode mode, const std::function<Attempt()>& once,
                   const Sleeper& sleep);

// Short human text for a failure: "connection refused", "timed out", … (detail not included).
[[nodiscard]] std::string describe(TransportFailure failure);

}  // namespace archctl::clients::http
