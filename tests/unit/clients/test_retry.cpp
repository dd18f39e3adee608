#include <doctest/doctest.h>

#include <vector>

#include "lib/clients/http/retry.hpp"

using namespace archctl::clients::http;
using std::chrono::milliseconds;

TEST_CASE("classification: transport failures and statuses") {
    CHECK(classify({TransportFailure::none, "", 200}) == Disposition::success);
    CHECK(classify({TransportFailure::none, "", 204}) == Disposition::success);
    CHECK(classify({TransportFailure::none, "", 403}) == Disposition::permanent);
    CHECK(classify({TransportFailure::none, "", 404}) == Disposition::permanent);
    CHECK(classify({TransportFailure::none, "", 500}) == Disposition::transient);
    CHECK(classify({TransportFailure::none, "", 503}) == Disposition::transient);
    CHECK(classify({TransportFailure::refused, "", 0}) == Disposition::transient);
    CHECK(classify({TransportFailure::reset, "", 0}) == Disposition::transient);
    CHECK(classify({TransportFailure::timeout, "", 0}) == Disposition::transient);
    CHECK(classify({TransportFailure::tls, "", 0}) == Disposition::permanent);
    CHECK(classify({TransportFailure::resolve, "", 0}) == Disposition::permanent);
    CHECK(classify({TransportFailure::other, "", 0}) == Disposition::permanent);
}

TEST_CASE("retry modes") {
    const Attempt refused{TransportFailure::refused, "", 0};
    const Attempt timeout{TransportFailure::timeout, "", 0};
    const Attempt unavailable{TransportFailure::none, "", 503};
    CHECK(should_retry(timeout, RetryMode::transient));
    CHECK(should_retry(refused, RetryMode::connect_only));
    CHECK_FALSE(should_retry(timeout, RetryMode::connect_only));
    CHECK_FALSE(should_retry(unavailable, RetryMode::connect_only));
    CHECK_FALSE(should_retry(refused, RetryMode::never));
}

TEST_CASE("backoff doubles from the base delay and is capped") {
    RetryPolicy p{6, milliseconds(100), milliseconds(500)};
    CHECK(backoff_delay(p, 2) == milliseconds(100));
    CHECK(backoff_delay(p, 3) == milliseconds(200));
    CHECK(backoff_delay(p, 4) == milliseconds(400));
    CHECK(backoff_delay(p, 5) == milliseconds(500));
    CHECK(backoff_delay(p, 60) == milliseconds(500));
}

TEST_CASE("with_retry repeats transient failures, sleeping through the seam") {
    RetryPolicy p{4, milliseconds(10), milliseconds(1000)};
    std::vector<milliseconds> slept;
    const Sleeper sleep = [&](milliseconds d) { slept.push_back(d); };

    SUBCASE("succeeds on the third try") {
        int calls = 0;
        auto last = with_retry(p, RetryMode::transient, [&] {
            ++calls;
            return calls < 3 ? Attempt{TransportFailure::refused, "x", 0} : Attempt{TransportFailure::none, "", 200};
        }, sleep);
        CHECK(calls == 3);
        CHECK(last.status == 200);
        CHECK(slept == std::vector<milliseconds>{milliseconds(10), milliseconds(20)});
    }
    SUBCASE("gives up after the configured attempts") {
        int calls = 0;
        auto last = with_retry(p, RetryMode::transient, [&] { ++calls; return Attempt{TransportFailure::none, "", 502}; }, sleep);
        CHECK(calls == 4);
        CHECK(last.status == 502);
        CHECK(slept.size() == 3);
    }
    SUBCASE("permanent failures are not repeated") {
        int calls = 0;
        with_retry(p, RetryMode::transient, [&] { ++calls; return Attempt{TransportFailure::none, "", 404}; }, sleep);
        with_retry(p, RetryMode::transient, [&] { ++calls; return Attempt{TransportFailure::tls, "", 0}; }, sleep);
        CHECK(calls == 2);
        CHECK(slept.empty());
    }
    SUBCASE("at least one try even with attempts = 0") {
        int calls = 0;
        with_retry({0, milliseconds(1), milliseconds(1)}, RetryMode::transient,
                   [&] { ++calls; return Attempt{TransportFailure::refused, "", 0}; }, sleep);
        CHECK(calls == 1);
    }
}
