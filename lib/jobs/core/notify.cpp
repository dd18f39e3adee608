// Notification hooks at a job's end: an exec hook fed the row on stdin, and an HTTP POST.

#include "lib/jobs/core/notify.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "lib/base/process.hpp"
#include "lib/clients/http/http_client.hpp"

namespace archctl::jobs {
namespace {

using SteadyClock = std::chrono::steady_clock;

int remaining_ms(SteadyClock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 200));
}

// Feed `data` to the hook's stdin and drain its stdout (shown on stderr, as the hook's own
// chatter) until it closes stdout or the deadline passes. False on the deadline.
bool exchange(Subprocess& hook, const std::string& data, SteadyClock::time_point deadline) {
    std::size_t written = 0;
    bool out_open = true;
    while (out_open || hook.stdin_fd() >= 0) {
        if (SteadyClock::now() >= deadline) return false;
        pollfd fds[2] = {{hook.stdout_fd(), static_cast<short>(out_open ? POLLIN : 0), 0},
                         {hook.stdin_fd(), static_cast<short>(hook.stdin_fd() >= 0 ? POLLOUT : 0), 0}};
        int n = ::poll(fds, 2, remaining_ms(deadline));
        if (n < 0 && errno != EINTR) return true;
        if (n <= 0) continue;
        if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[4096];
            ssize_t got = ::read(hook.stdout_fd(), buf, sizeof buf);
            if (got > 0) (void)!::write(STDERR_FILENO, buf, static_cast<std::size_t>(got));
            else if (got == 0 || errno != EINTR) out_open = false;
        }
        if (hook.stdin_fd() >= 0 && (fds[1].revents & (POLLOUT | POLLHUP | POLLERR))) {
            ssize_t put = (fds[1].revents & POLLOUT) ? ::write(hook.stdin_fd(), data.data() + written, data.size() - written) : -1;
            if (put > 0) written += static_cast<std::size_t>(put);
            if (put < 0 && errno == EINTR) continue;
            if (put < 0 || written == data.size()) hook.close_stdin();  // a hook that stops reading just gets less
        }
    }
    return true;
}

// Wait for the hook's exit until the deadline; nullopt when it is still running. waitid with
// WNOWAIT only looks: Subprocess::wait reaps it.
std::optional<int> wait_until(Subprocess& hook, SteadyClock::time_point deadline) {
    for (;;) {
        siginfo_t info{};
        int r = ::waitid(P_PID, static_cast<id_t>(hook.pid()), &info, WEXITED | WNOHANG | WNOWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || info.si_pid != 0) return hook.wait();
        if (SteadyClock::now() >= deadline) return std::nullopt;
        ::usleep(20000);
    }
}

std::string seconds(std::chrono::milliseconds d) { return fmt::format("{} s", (d.count() + 999) / 1000); }

void run_exec(const NotifySettings& settings, const std::string& data, const std::function<void(const std::string&)>& warn) {
    const std::string& program = settings.exec.front();
    auto spawned = Subprocess::spawn(settings.exec, {.stderr_mode = StderrMode::inherit, .extra_env = {}, .own_process_group = true});
    if (!spawned.ok()) {
        warn(fmt::format("notify hook '{}' did not start: {}", program, spawned.error().message));
        return;
    }
    Subprocess hook = std::move(spawned).value();
    auto deadline = SteadyClock::now() + settings.timeout;
    bool in_time = exchange(hook, data, deadline);
    std::optional<int> code = in_time ? wait_until(hook, deadline) : std::nullopt;
    if (!code) {
        ::kill(-static_cast<pid_t>(hook.pid()), SIGKILL);
        hook.wait();
        warn(fmt::format("notify hook '{}' did not finish within {}; it was stopped ([notify] exec)", program, seconds(settings.timeout)));
        return;
    }
    if (*code != 0) warn(fmt::format("notify hook '{}' exited with status {} ([notify] exec)", program, *code));
}

void run_post(const NotifySettings& settings, const std::string& data, const std::function<void(const std::string&)>& warn) {
    clients::http::ClientSettings cs;
    cs.node = "notify";
    cs.service = "notify url";
    cs.base_url = settings.url;
    cs.connect_timeout = std::min(settings.timeout, std::chrono::milliseconds(3000));
    cs.total_timeout = settings.timeout;
    cs.retry.attempts = 1;
    clients::http::HttpClient client(cs);
    clients::http::Request req;
    req.method = clients::http::Method::post;
    req.body_kind = clients::http::BodyKind::raw;
    req.body = data;
    req.content_type = "application/json";
    req.retry = clients::http::RetryMode::never;
    auto sent = client.send(req);
    if (!sent.ok()) {
        warn(fmt::format("notify url: {} ([notify] url)", sent.error().message));
        return;
    }
    if (!sent->ok()) warn(fmt::format("notify url: {} answered {} ([notify] url)", client.subject(), sent->status));
}

}  // namespace

std::optional<std::string> notify_event(const JobSummary& row) {
    if (row.needs_attention) return "needs_attention";
    switch (row.ledger.state) {
        case JobState::done: return "done";
        case JobState::failed: return "failed";
        case JobState::cancelled: return "cancelled";
        case JobState::cleanup_required:
        case JobState::compensating: return "needs_attention";
        case JobState::running: break;
    }
    return std::nullopt;
}

nlohmann::json notify_document(const JobSummary& row, const std::string& event) {
    nlohmann::json doc = row.to_json();
    doc["event"] = event;
    doc["schema"] = 1;
    return doc;
}

void notify_job_end(const NotifySettings& settings, const nlohmann::json& document, const std::function<void(const std::string&)>& warn) {
    const std::string data = document.dump() + "\n";
    if (!settings.exec.empty()) run_exec(settings, data, warn);
    if (!settings.url.empty()) run_post(settings, data, warn);
}

}  // namespace archctl::jobs
