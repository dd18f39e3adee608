#include "lib/base/process.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

extern char** environ;

namespace archctl {
namespace {

bool make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    return true;
}

// The process groups of unreaped children started with own_process_group, for
// kill_child_groups_for_exit(): a fixed table of lock-free atomics, which a signal handler may
// read. More children than slots at once are not tracked (archctl runs one per exec node).
constexpr std::size_t k_group_slots = 64;
std::atomic<pid_t> g_child_groups[k_group_slots];

void track_group(pid_t group) {
    for (auto& slot : g_child_groups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, group)) return;
    }
}

void untrack_group(pid_t group) {
    for (auto& slot : g_child_groups) {
        pid_t held = group;
        if (slot.compare_exchange_strong(held, 0)) return;
    }
}

int decode_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

}  // namespace

Result<Subprocess> Subprocess::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
    if (argv.empty()) return Error(ErrorCode::USAGE, "cannot start a program: empty command");
    UniqueFd in_r, in_w, out_r, out_w, err_r, err_w;
    if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w)) return errno_error("cannot create pipe for", argv[0], errno);
    if (options.stderr_mode == StderrMode::capture && !make_pipe(err_r, err_w))
        return errno_error("cannot create pipe for", argv[0], errno);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
    if (options.stderr_mode == StderrMode::capture) posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
    if (options.stderr_mode == StderrMode::discard) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);

    std::vector<std::string> env_storage;
    for (char** e = environ; e && *e; ++e) env_storage.emplace_back(*e);
    for (const auto& extra : options.extra_env) env_storage.push_back(extra);
    std::vector<char*> envp;
    for (auto& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (auto& a : args) argp.push_back(a.data());
    argp.push_back(nullptr);

    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (options.own_process_group) {
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    }
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, argp[0], &actions, &attr, argp.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return errno_error("cannot start", argv[0], rc);

    if (options.own_process_group) track_group(pid);
    Subprocess p;
    p.m_pid = pid;
    p.m_own_group = options.own_process_group;
    p.m_in = std::move(in_w);
    p.m_out = std::move(out_r);
    p.m_err = std::move(err_r);
    return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : m_pid(other.m_pid), m_in(std::move(other.m_in)), m_out(std::move(other.m_out)), m_err(std::move(other.m_err)),
      m_waited(other.m_waited), m_status(other.m_status), m_own_group(other.m_own_group) {
    other.m_pid = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
    if (this != &other) {
        this->~Subprocess();
        new (this) Subprocess(std::move(other));
    }
    return *this;
}

Subprocess::~Subprocess() {
    if (m_pid <= 0 || m_waited) return;
    m_in.reset();
    m_out.reset();
    m_err.reset();
    for (int i = 0; i < 50; ++i) {
        int status = 0;
        if (::waitpid(static_cast<pid_t>(m_pid), &status, WNOHANG) == static_cast<pid_t>(m_pid)) {
            if (m_own_group) untrack_group(static_cast<pid_t>(m_pid));
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(static_cast<pid_t>(m_pid), SIGKILL);
    int status = 0;
    ::waitpid(static_cast<pid_t>(m_pid), &status, 0);
    if (m_own_group) untrack_group(static_cast<pid_t>(m_pid));
}

int Subprocess::wait() {
    if (m_waited) return m_status;
    int status = 0;
    while (::waitpid(static_cast<pid_t>(m_pid), &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (m_own_group) untrack_group(static_cast<pid_t>(m_pid));
    m_waited = true;
    m_status = decode_status(status);
    return m_status;
}

void kill_child_groups_for_exit() {
    for (auto& slot : g_child_groups)
        if (pid_t group = slot.load(); group > 0) ::kill(-group, SIGKILL);
}

Result<RunOutput> run_capture(const std::vector<std::string>& argv, const std::string& stdin_data,
                              const SpawnOptions& options) {
    SpawnOptions opts = options;
    opts.stderr_mode = StderrMode::capture;
    ARCHCTL_TRY_ASSIGN(Subprocess p, Subprocess::spawn(argv, opts));
    RunOutput out;
    size_t written = 0;
    if (stdin_data.empty()) p.close_stdin();
    bool out_open = true, err_open = true;
    char buf[65536];
    while (out_open || err_open) {
        std::vector<pollfd> fds;
        if (out_open) fds.push_back({p.stdout_fd(), POLLIN, 0});
        if (err_open) fds.push_back({p.stderr_fd(), POLLIN, 0});
        if (p.stdin_fd() >= 0) fds.push_back({p.stdin_fd(), POLLOUT, 0});
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (auto& f : fds) {
            if (!f.revents) continue;
            if (f.fd == p.stdin_fd()) {
                ssize_t n = ::write(f.fd, stdin_data.data() + written, stdin_data.size() - written);
                if (n > 0) written += static_cast<size_t>(n);
                if (n < 0 || written >= stdin_data.size()) p.close_stdin();
                continue;
            }
            ssize_t n = ::read(f.fd, buf, sizeof buf);
            bool is_out = f.fd == p.stdout_fd();
            if (n <= 0) {
                (is_out ? out_open : err_open) = false;
            } else {
                (is_out ? out.out : out.err).append(buf, static_cast<size_t>(n));
            }
        }
    }
    out.exit_code = p.wait();
    return out;
}

}  // namespace archctl
