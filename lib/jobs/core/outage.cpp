#include "lib/jobs/core/outage.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"

namespace archctl::jobs {

bool is_outage(const Error& e) {
    return e.is(ErrorCode::HTTP_UNREACHABLE) || e.is(ErrorCode::HTTP_TIMEOUT) || e.is(ErrorCode::NODE_UNREACHABLE) ||
           e.is(ErrorCode::QB_SERVER_ERROR) || e.is(ErrorCode::ST_SERVER_ERROR);
}

OutageWait::OutageWait(const RunEnv& env) : m_env(env), m_run_started(env.budgets.run_started.value_or(env.io.clock->steady())) {}

void OutageWait::clear() {
    m_since.reset();
    m_tries = 0;
}

StepResult OutageWait::wait(const Error& e) {
    Clock& clock = *m_env.io.clock;
    const SteadyTime now = clock.steady();
    if (!m_since) {
        m_since = now;
        m_env.log(fmt::format("archctl: waiting: {} (retrying for up to {})", e.message, format_duration(m_env.budgets.outage_wait.count())));
    }
    auto text = [&](const std::string& why) { return fmt::format("{}: {}", why, e.message); };
    if (m_env.budgets.no_wait) return StepResult::stopped(StopReason::waiting, text("unreachable (--no-wait)"));
    if (now - *m_since >= m_env.budgets.outage_wait)
        return StepResult::stopped(StopReason::waiting, text(fmt::format("still unreachable after {}", format_duration(m_env.budgets.outage_wait.count()))));
    auto delay = std::chrono::milliseconds(1000) * (1 << std::min(m_tries, 4));
    delay = std::min<std::chrono::milliseconds>(delay, std::chrono::seconds(15));
    ++m_tries;
    const SteadyTime until = std::min(now + delay, *m_since + m_env.budgets.outage_wait);
    while (clock.steady() < until) {
        if (stop_requested()) return StepResult::stopped(StopReason::interrupt, std::string(interrupt_text()) + " while waiting: " + e.message);
        if (m_env.budgets.max_duration && clock.steady() - m_run_started >= *m_env.budgets.max_duration)
            return StepResult::stopped(StopReason::deadline, text("deadline reached while waiting"));
        clock.sleep_for(std::chrono::milliseconds(200));
    }
    return {};
}

}  // namespace archctl::jobs
