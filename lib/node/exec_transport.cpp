// The exec transport: a spawned `archctl node serve` (locally or through ssh), JSON lines on
// its stdin/stdout, stderr captured for error messages.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/node/transport.hpp"

namespace archctl::node {
namespace {

constexpr std::size_t k_stderr_tail_bytes = 8192;
constexpr int k_poll_ms = 200;  // how often a waiting call looks at Ctrl-C

class ExecTransport final : public Transport {
public:
    ExecTransport(std::string name, Subprocess child) : m_name(std::move(name)), m_child(std::move(child)) {
        m_stderr_thread = std::thread([this] { drain_stderr(); });
    }

    ~ExecTransport() override {
        cancel();
        {
            std::lock_guard lock(m_write_mutex);
            m_child.close_stdin();
        }
        // The far end exits at end of input; one that lingers (a hung ssh) is killed.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!exited() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!exited()) kill_group();
        m_child.wait();
        if (m_stderr_thread.joinable()) m_stderr_thread.join();
    }

    const std::string& node_name() const override { return m_name; }
    const Hello& hello() const override { return m_hello; }

    Status read_hello(std::chrono::seconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        ARCHCTL_TRY_ASSIGN(std::string line, read_line(deadline, "hello"));
        auto msg = decode(line);
        if (!msg.ok() || !std::holds_alternative<Hello>(msg.value()))
            return Error(ErrorCode::PROTOCOL, fmt::format("node '{}' did not greet with a hello line: '{}'", m_name, line.substr(0, 200)));
        m_hello = std::get<Hello>(std::move(msg).value());
        if (m_hello.protocol != k_protocol_version)
            return Error(ErrorCode::PROTOCOL_MISMATCH,
                         fmt::format("node '{}' speaks node protocol {}, this archctl speaks {}", m_name,
                                     m_hello.protocol, k_protocol_version),
                         fmt::format("install the same archctl version on '{}' (it runs {})", m_name, m_hello.archctl_version));
        return {};
    }

    Result<Response> call(const Request& request, ProgressSink* sink) override {
        std::lock_guard call_lock(m_call_mutex);
        if (m_dead) return *m_dead;
        Request sent = request;
        if (sent.id == 0) sent.id = ++m_next_id;
        m_current = sent.id;
        m_cancel_sent = false;
        struct Reset {
            std::atomic<std::uint64_t>& id;
            ~Reset() { id = 0; }
        } reset{m_current};
        ARCHCTL_TRY_STATUS(write_line(encode(Message{sent}), sent.op));
        for (;;) {
            ARCHCTL_TRY_ASSIGN(std::string line, read_line(std::nullopt, sent.op));
            auto msg = decode(line);
            if (!msg.ok()) return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' sent an invalid line: {}", m_name, msg.error().message)));
            if (auto* p = std::get_if<Progress>(&msg.value())) {
                if (p->id == sent.id && sink) sink->on_progress(*p);
            } else if (auto* r = std::get_if<Response>(&msg.value())) {
                if (r->id == sent.id) return std::move(*r);
                if (r->id == 0 && !r->ok)
                    return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' rejected a line: {}", m_name, r->error.message)));
            }
        }
    }

    void cancel() override {
        std::uint64_t id = m_current;
        if (id == 0) return;
        std::lock_guard lock(m_write_mutex);
        if (m_child.stdin_fd() < 0) return;
        std::string line = encode(Message{Cancel{id}}) + "\n";
        (void)write_all(m_child.stdin_fd(), line, "<node input>");
    }

private:
    bool exited() {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(m_child.pid()), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
        return info.si_pid != 0;
    }

    Status write_line(const std::string& line, const std::string& op) {
        bool written = false;
        {
            std::lock_guard lock(m_write_mutex);
            written = write_all(m_child.stdin_fd(), line + "\n", "<node input>").ok();
        }
        if (!written) return fail(death_error(op));
        return {};
    }

    // Next line from the child's stdout; a closed stream is the far end's death.
    Result<std::string> read_line(std::optional<std::chrono::steady_clock::time_point> deadline, const std::string& op) {
        for (;;) {
            if (auto nl = m_buffer.find('\n'); nl != std::string::npos) {
                std::string line = m_buffer.substr(0, nl);
                m_buffer.erase(0, nl + 1);
                if (!line.empty()) return line;
                continue;
            }
            // The child has a process group of its own, so a Ctrl-C does not reach it: the
            // running operation is cancelled here instead, and stops at its next chunk boundary.
            if (stop_requested() && !m_cancel_sent) {
                m_cancel_sent = true;
                cancel();
            }
            int wait_ms = k_poll_ms;
            if (deadline) {
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
                if (left.count() <= 0)
                    return fail(Error(ErrorCode::NODE_UNREACHABLE, fmt::format("node '{}' did not answer within the timeout ({})", m_name, op)));
                wait_ms = std::min(wait_ms, static_cast<int>(left.count()));
            }
            pollfd p{m_child.stdout_fd(), POLLIN, 0};
            int r = ::poll(&p, 1, wait_ms);
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) continue;
            char chunk[65536];
            ssize_t n = ::read(m_child.stdout_fd(), chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return fail(death_error(op));
            m_buffer.append(chunk, static_cast<std::size_t>(n));
        }
    }

    // The far end is gone (its output ended, or it stopped reading): it gets a second to exit,
    // then its process group is killed, so a dying ssh never leaves this run waiting.
    Error death_error(const std::string& op) {
        {
            std::lock_guard lock(m_write_mutex);
            m_child.close_stdin();
        }
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!exited() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!exited()) kill_group();
        int status = m_child.wait();
        if (m_stderr_thread.joinable()) m_stderr_thread.join();
        std::string tail;
        {
            std::lock_guard lock(m_stderr_mutex);
            tail = m_stderr_tail;
        }
        while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
        if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
        std::string message = fmt::format("node '{}' closed the connection during '{}': exit status {}", m_name, op, status);
        return Error(ErrorCode::NODE_UNREACHABLE, message, tail.empty() ? "" : fmt::format("node '{}' said: {}", m_name, tail));
    }

    // The child and whatever it started in its process group.
    void kill_group() {
        ::kill(-static_cast<pid_t>(m_child.pid()), SIGKILL);
        ::kill(static_cast<pid_t>(m_child.pid()), SIGKILL);
    }

    Error fail(Error e) {
        m_dead = e;
        return e;
    }

    void drain_stderr() {
        int fd = m_child.stderr_fd();
        if (fd < 0) return;
        char chunk[4096];
        for (;;) {
            ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return;
            std::lock_guard lock(m_stderr_mutex);
            m_stderr_tail.append(chunk, static_cast<std::size_t>(n));
            if (m_stderr_tail.size() > k_stderr_tail_bytes)
                m_stderr_tail.erase(0, m_stderr_tail.size() - k_stderr_tail_bytes);
        }
    }

    std::string m_name;
    Subprocess m_child;
    Hello m_hello;
    std::string m_buffer;
    std::thread m_stderr_thread;
    std::mutex m_stderr_mutex;
    std::string m_stderr_tail;
    std::mutex m_call_mutex;
    std::mutex m_write_mutex;
    std::atomic<std::uint64_t> m_current{0};
    std::uint64_t m_next_id = 0;
    std::optional<Error> m_dead;
    bool m_cancel_sent = false;
};

}  // namespace

Result<std::unique_ptr<Transport>> connect_exec(const ExecOptions& options) {
    SpawnOptions spawn;
    spawn.stderr_mode = StderrMode::capture;
    spawn.extra_env = options.extra_env;
    spawn.own_process_group = true;
    auto child = Subprocess::spawn(options.argv, spawn);
    if (!child.ok())
        return Error(ErrorCode::NODE_UNREACHABLE, fmt::format("cannot reach node '{}': {}", options.node_name, child.error().message));
    auto t = std::make_unique<ExecTransport>(options.node_name, std::move(child).value());
    ARCHCTL_TRY_STATUS(t->read_hello(options.hello_timeout));
    return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace archctl::node
