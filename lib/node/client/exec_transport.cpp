// The exec transport: a spawned `archctl node serve` (locally or through ssh), JSON lines on
// its stdin/stdout, stderr captured for error messages.
//
// It never waits without bound, in time or in memory: the child runs in a process group of its
// own (a Ctrl-C reaches archctl only, which cancels the running operation instead), a far end
// that exits or stops reading is an error within a second, and one that stays silent longer
// than the node's timeout — before its hello, while a request is written, or between two lines
// of a call (`node serve` sends keepalives while an operation runs) — is killed with its process
// group. So is one that does not speak the protocol: a line that does not begin as a JSON
// object (the first byte tells), a line longer than k_max_line_bytes, or a line that is not
// complete within the timeout after its first byte (plus a second for each MiB it carries, so
// a large result on a slow link still arrives, and a far end dripping bytes does not). A stop
// (SIGINT, SIGTERM) cancels the running operation; a far end that has not answered (or greeted)
// within k_stop_grace of it is killed.
// After any of these the transport is broken(): every later call fails at once, and
// NodeSession connects anew.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "lib/base/signals.hpp"
#include "lib/base/units.hpp"
#include "lib/node/client/transport.hpp"
#include "lib/node/wire/line_reader.hpp"
#include "lib/node/wire/ops_inspect.hpp"
#include "lib/torrent/path_rules.hpp"

namespace archctl::node {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t k_stderr_tail_bytes = 8192;
constexpr int k_poll_ms = 200;  // how often a waiting call looks at Ctrl-C
constexpr std::chrono::seconds k_exit_grace{1};           // a far end that hung up gets this to exit
constexpr std::chrono::seconds k_close_grace{5};          // one told to finish (end of input) gets this
constexpr std::chrono::milliseconds k_cancel_write{1000};  // a cancel line that cannot be written is dropped
// After a stop (SIGINT, SIGTERM) the running operation is cancelled; a far end that has not
// answered (or greeted) this long after is killed, so archctl ends within a second or two of
// the signal, and a call a far end answers at once still gets its answer.
constexpr std::chrono::milliseconds k_stop_grace{1500};
// How much of what a far end sent instead of the protocol its error quotes.
constexpr std::size_t k_quoted_bytes = 40;

enum class WriteOutcome { written, closed, timed_out, stopped };
// Whether a write gives up when a stop is requested (a request does; the cancel line that a
// stop sends does not).
enum class OnStop { give_up, carry_on };

// Writes all of `data` to the non-blocking `fd` by `deadline`.
WriteOutcome write_until(int fd, std::string_view data, Clock::time_point deadline, OnStop on_stop) {
    if (fd < 0) return WriteOutcome::closed;
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return WriteOutcome::closed;
        // Only a write that has to wait gives up on a stop: a far end that reads still gets
        // the request (the call then cancels it at once and allows it k_stop_grace).
        if (on_stop == OnStop::give_up && stop_requested()) return WriteOutcome::stopped;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return WriteOutcome::timed_out;
        pollfd p{fd, POLLOUT, 0};
        int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), k_poll_ms)));
        if (r < 0 && errno != EINTR) return WriteOutcome::closed;
        if (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return WriteOutcome::closed;
    }
    return WriteOutcome::written;
}

class ExecTransport final : public Transport {
public:
    ExecTransport(std::string name, Subprocess child, std::chrono::seconds timeout)
        : m_name(std::move(name)), m_child(std::move(child)), m_timeout(timeout) {
        // Writes wait with a deadline (poll), never in write() itself.
        if (int fd = m_child.stdin_fd(); fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        m_stderr_thread = std::thread([this] { drain_stderr(); });
    }

    ~ExecTransport() override {
        // The far end exits at end of input; one that lingers (a hung ssh) is killed, after a
        // stop without the grace a finishing operation would get.
        if (!m_ended) (void)end_child(stop_requested() ? k_exit_grace : k_close_grace);
    }

    const std::string& node_name() const override { return m_name; }
    const Hello& hello() const override { return m_hello; }
    bool broken() const override { return m_broken; }

    Status read_hello() {
        ARCHCTL_TRY_ASSIGN(std::string line, read_line("hello"));
        auto msg = decode(line);
        if (!msg.ok() || !std::holds_alternative<Hello>(msg.value())) {
            (void)end_child(std::chrono::milliseconds(0));
            return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' did not greet with a hello line: '{}'", m_name, quoted(line)),
                              exec_hint()));
        }
        m_hello = std::get<Hello>(std::move(msg).value());
        if (m_hello.protocol != k_protocol_version)
            return fail(Error(ErrorCode::PROTOCOL_MISMATCH,
                              fmt::format("node '{}' speaks node protocol {}, this archctl speaks {}", m_name,
                                          m_hello.protocol, k_protocol_version),
                              fmt::format("install the same archctl version on '{}' (it runs {})", m_name, m_hello.archctl_version)));
        return {};
    }

    // Names the node's roots to the far end; its answer (the probed roots) replaces the hello's.
    Status open_roots(const std::vector<std::string>& roots) {
        Request request;
        request.op = name(Op::open_roots);
        request.args = OpenRootsRequest{roots};
        ARCHCTL_TRY_ASSIGN(Response response, call(request, nullptr));
        if (!response.ok) {
            // A far end from before open_roots, started with --root, serves those as it always did.
            if (response.error.is(ErrorCode::UNKNOWN_OPERATION) && !m_hello.roots.empty()) return {};
            Error e = response.error;
            e.message = fmt::format("node '{}' refused its roots: {}", m_name, e.message);
            return e;
        }
        try {
            m_hello.roots = response.result.get<OpenRootsResult>().roots;
        } catch (const nlohmann::json::exception& e) {
            return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' answered {} with invalid roots: {}", m_name, name(Op::open_roots), e.what())));
        }
        return {};
    }

    Result<Response> call(Request request, ProgressSink* sink) override {
        std::lock_guard call_lock(m_call_mutex);
        if (m_dead) return *m_dead;
        const std::uint64_t id = request.id == 0 ? ++m_next_id : request.id;
        const std::string& op = request.op;
        m_current = id;
        m_stop_seen_at.reset();
        struct Reset {
            std::atomic<std::uint64_t>& id;
            ~Reset() { id = 0; }
        } reset{m_current};
        {
            std::string line = encode_request(id, op, request.args);
            request.args = nlohmann::json();  // not held while the far end works
            ARCHCTL_TRY_STATUS(write_line(line, op));
        }
        for (;;) {
            ARCHCTL_TRY_ASSIGN(std::string line, read_line(op));
            auto msg = decode(line);
            if (!msg.ok()) {
                (void)end_child(std::chrono::milliseconds(0));
                return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' sent an invalid line: {}", m_name, msg.error().message)));
            }
            if (auto* p = std::get_if<Progress>(&msg.value())) {
                if (p->id == id && sink && !p->keepalive) sink->on_progress(*p);
            } else if (auto* r = std::get_if<Response>(&msg.value())) {
                if (r->id == id) return std::move(*r);
                if (r->id == 0 && !r->ok)
                    return fail(Error(ErrorCode::PROTOCOL, fmt::format("node '{}' rejected a line: {}", m_name, r->error.message)));
            }
        }
    }

    void cancel() override {
        std::uint64_t id = m_current;
        if (id == 0) return;
        std::lock_guard lock(m_write_mutex);
        (void)write_until(m_child.stdin_fd(), encode(Message{Cancel{id}}) + "\n", Clock::now() + k_cancel_write, OnStop::carry_on);
    }

private:
    bool exited() {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(m_child.pid()), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
        return info.si_pid != 0;
    }

    Status write_line(const std::string& line, const std::string& op) {
        WriteOutcome outcome;
        {
            std::lock_guard lock(m_write_mutex);
            outcome = write_until(m_child.stdin_fd(), line + "\n", Clock::now() + m_timeout, OnStop::give_up);
        }
        if (outcome == WriteOutcome::timed_out) return fail(silence_error(op));
        if (outcome == WriteOutcome::closed) return fail(death_error(op));
        if (outcome == WriteOutcome::stopped) return fail(stop_error(op));
        return {};
    }

    // Next line from the child's stdout. A closed stream is the far end's death; no byte for
    // the timeout is its silence; bytes that are not the protocol, a line past the limit or one
    // not complete in time end it (see the file's opening comment).
    Result<std::string> read_line(const std::string& op) {
        auto silence_deadline = Clock::now() + m_timeout;
        for (;;) {
            while (auto line = m_lines.next()) {
                if (line->kind == LineReader::Kind::overlong) return fail(overlong_error(op, line->text));
                if (line->text.front() != '{') return fail(not_protocol_error(op, line->text));
                m_line_started = m_lines.partial().empty() ? std::nullopt : std::optional(Clock::now());
                return std::move(line->text);
            }
            const std::string_view partial = m_lines.partial();
            if (!partial.empty() && partial.front() != '{') return fail(not_protocol_error(op, partial));
            const auto now = Clock::now();
            if (partial.empty()) m_line_started.reset();
            else if (!m_line_started) m_line_started = now;
            if (m_line_started && now >= line_deadline(partial.size())) return fail(slow_line_error(op, partial));
            if (stop_requested()) {
                // The child has a process group of its own, so a Ctrl-C does not reach it: the
                // running operation is cancelled here instead, and stops at its next chunk
                // boundary. A far end that has not answered (or greeted) by k_stop_grace is
                // killed.
                if (!m_stop_seen_at) {
                    m_stop_seen_at = now;
                    if (m_current != 0) cancel();
                }
                if (now - *m_stop_seen_at >= k_stop_grace) return fail(stop_error(op));
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(silence_deadline - now);
            if (left.count() <= 0) return fail(silence_error(op));
            pollfd p{m_child.stdout_fd(), POLLIN, 0};
            int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), k_poll_ms)));
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) continue;
            char chunk[65536];
            ssize_t n = ::read(m_child.stdout_fd(), chunk, sizeof chunk);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) return fail(death_error(op));
            m_lines.feed(std::string_view(chunk, static_cast<std::size_t>(n)));
            silence_deadline = Clock::now() + m_timeout;
        }
    }

    // When the line being received must be complete: the timeout after its first byte, plus a
    // second for each MiB it has brought so far.
    Clock::time_point line_deadline(std::size_t bytes) const {
        return *m_line_started + m_timeout + std::chrono::seconds(bytes >> 20);
    }

    struct Ending {
        int status = -1;
        std::string said;  // the tail of what the far end wrote on stderr
    };

    // Ends the child: closes its input, gives it `grace` to exit, then kills its process group
    // (so a dying ssh never leaves this run waiting); reaps it and collects its stderr.
    Ending end_child(std::chrono::milliseconds grace) {
        m_ended = true;
        {
            std::lock_guard lock(m_write_mutex);
            m_child.close_stdin();
        }
        auto deadline = Clock::now() + grace;
        while (!exited() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!exited()) kill_group();
        Ending out;
        out.status = m_child.wait();
        m_child_reaped = true;
        if (m_stderr_thread.joinable()) m_stderr_thread.join();
        std::lock_guard lock(m_stderr_mutex);
        out.said = m_stderr_tail;
        return out;
    }

    // The far end is gone (its output ended, or it stopped reading).
    Error death_error(const std::string& op) {
        Ending end = end_child(k_exit_grace);
        return Error(ErrorCode::NODE_UNREACHABLE,
                     fmt::format("node '{}' closed the connection during '{}': exit status {}", m_name, op, end.status),
                     stderr_tail_hint(m_name, end.said));
    }

    // The far end said nothing for the whole timeout: it is killed, and the setting named.
    Error silence_error(const std::string& op) {
        Ending end = end_child(std::chrono::milliseconds(0));
        std::string setting = fmt::format("nodes.{}.timeout", m_name);
        std::string hint = fmt::format("check that node '{}' is reachable through its exec command; if it is only slow, raise {}",
                                       m_name, setting);
        if (std::string said = stderr_tail_hint(m_name, end.said); !said.empty()) hint = said + "\n" + hint;
        return Error(ErrorCode::NODE_UNREACHABLE,
                     fmt::format("node '{}' did not answer for {} during '{}' ({})", m_name,
                                 format_duration(m_timeout.count()), op, setting),
                     hint);
    }

    // What the far end sent, quoted: its first bytes, escaped.
    static std::string quoted(std::string_view bytes) {
        std::string text = torrent::printable(bytes.substr(0, k_quoted_bytes));
        if (bytes.size() > k_quoted_bytes) text += "\u2026";
        return text;
    }

    std::string exec_hint() const {
        return fmt::format("is nodes.{}.exec a command that runs 'archctl node serve'? Anything it prints on stdout "
                           "before the protocol (a login banner, a shell's greeting) must go to stderr or be turned off",
                           m_name);
    }

    // The far end sent bytes that are not the protocol: it is killed, and the bytes quoted.
    Error not_protocol_error(const std::string& op, std::string_view bytes) {
        Ending end = end_child(std::chrono::milliseconds(0));
        std::string hint = exec_hint();
        if (std::string said = stderr_tail_hint(m_name, end.said); !said.empty()) hint = said + "\n" + hint;
        return Error(ErrorCode::PROTOCOL,
                     fmt::format("node '{}' printed '{}' instead of the node protocol during '{}'", m_name, quoted(bytes), op), hint);
    }

    // A line longer than any the protocol carries.
    Error overlong_error(const std::string& op, std::string_view first_bytes) {
        (void)end_child(std::chrono::milliseconds(0));
        return Error(ErrorCode::PROTOCOL,
                     fmt::format("node '{}' sent a line longer than {} during '{}' (it begins '{}')", m_name,
                                 format_size(k_max_line_bytes), op, quoted(first_bytes)),
                     exec_hint());
    }

    // A line begun and not finished in time (bytes dripping in, each too soon for the silence timeout).
    Error slow_line_error(const std::string& op, std::string_view line) {
        const std::size_t bytes = line.size();
        Ending end = end_child(std::chrono::milliseconds(0));
        std::string setting = fmt::format("nodes.{}.timeout", m_name);
        std::string hint = fmt::format("a node sends each line whole; if the link to '{}' is only slow, raise {}", m_name, setting);
        if (std::string said = stderr_tail_hint(m_name, end.said); !said.empty()) hint = said + "\n" + hint;
        return Error(ErrorCode::NODE_UNREACHABLE,
                     fmt::format("node '{}' did not finish a line in {} during '{}' ({} received, beginning '{}'; {})", m_name,
                                 format_duration(std::chrono::duration_cast<std::chrono::seconds>(line_deadline(bytes) - *m_line_started).count()),
                                 op, format_size(bytes), quoted(line), setting),
                     hint);
    }

    // A stop (SIGINT, SIGTERM) while the far end had not greeted, had not answered the cancel in
    // time, or was not reading a request: it is killed. An outage to the job driver, which ends
    // the run as interrupted.
    Error stop_error(const std::string& op) {
        (void)end_child(std::chrono::milliseconds(0));
        if (m_current == 0 || !m_stop_seen_at)
            return Error(ErrorCode::NODE_UNREACHABLE, fmt::format("{} while waiting for node '{}' during '{}'", interrupt_text(), m_name, op));
        return Error(ErrorCode::NODE_UNREACHABLE,
                     fmt::format("{}: node '{}' did not stop '{}' within {} ms, so it was killed", interrupt_text(), m_name, op,
                                 k_stop_grace.count()),
                     "a rerun continues from what the node finished");
    }

    // The child and whatever it started in its process group.
    void kill_group() {
        ::kill(-static_cast<pid_t>(m_child.pid()), SIGKILL);
        ::kill(static_cast<pid_t>(m_child.pid()), SIGKILL);
    }

    Error fail(Error e) {
        m_dead = e;
        m_broken = true;
        return e;
    }

    // Keeps the last bytes of the child's stderr. Once the child is reaped it reads what is
    // left and stops, even if something outside the process group (a detached ssh control
    // master) still holds the pipe open.
    void drain_stderr() {
        int fd = m_child.stderr_fd();
        if (fd < 0) return;
        char chunk[4096];
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            int r = ::poll(&p, 1, m_child_reaped ? 50 : k_poll_ms);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return;
            if (r == 0) {
                if (m_child_reaped) return;
                continue;
            }
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
    std::chrono::seconds m_timeout;
    Hello m_hello;
    LineReader m_lines{k_max_line_bytes};
    std::optional<Clock::time_point> m_line_started;  // first byte of the line being received
    std::thread m_stderr_thread;
    std::mutex m_stderr_mutex;
    std::string m_stderr_tail;
    std::mutex m_call_mutex;
    std::mutex m_write_mutex;
    std::atomic<std::uint64_t> m_current{0};
    std::uint64_t m_next_id = 0;
    std::optional<Error> m_dead;
    std::atomic<bool> m_broken{false};
    std::atomic<bool> m_child_reaped{false};
    bool m_ended = false;
    std::optional<Clock::time_point> m_stop_seen_at;  // when this call (or the hello) first saw a stop
};

}  // namespace

std::string stderr_tail_hint(const std::string& node_name, std::string_view said, std::size_t max_lines,
                             std::size_t max_bytes) {
    if (said.size() > max_bytes) {
        said.remove_prefix(said.size() - max_bytes);
        if (auto nl = said.find('\n'); nl != std::string_view::npos) said.remove_prefix(nl + 1);  // a whole first line
    }
    std::vector<std::string_view> lines;
    while (!said.empty()) {
        auto nl = said.find('\n');
        std::string_view line = said.substr(0, nl);
        said.remove_prefix(nl == std::string_view::npos ? said.size() : nl + 1);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
        if (!line.empty()) lines.push_back(line);
    }
    if (lines.empty()) return "";
    if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(max_lines));
    if (lines.size() == 1) return fmt::format("node '{}' said: {}", node_name, lines.front());
    std::string out = fmt::format("node '{}' said:", node_name);
    for (auto line : lines) out += fmt::format("\n  {}", line);
    return out;
}

Result<std::unique_ptr<Transport>> connect_exec(const ExecOptions& options) {
    SpawnOptions spawn;
    spawn.stderr_mode = StderrMode::capture;
    spawn.extra_env = options.extra_env;
    spawn.own_process_group = true;
    auto child = Subprocess::spawn(options.argv, spawn);
    if (!child.ok())
        return Error(ErrorCode::NODE_UNREACHABLE, fmt::format("cannot reach node '{}': {}", options.node_name, child.error().message));
    auto t = std::make_unique<ExecTransport>(options.node_name, std::move(child).value(), options.timeout);
    ARCHCTL_TRY_STATUS(t->read_hello());
    if (!options.roots.empty()) ARCHCTL_TRY_STATUS(t->open_roots(options.roots));
    return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace archctl::node
