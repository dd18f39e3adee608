#pragma once
// Spawning programs without a shell: argv only, pipes for stdin/stdout, stderr inherited or
// captured. Used by the exec transport (`ssh nas archctl node serve`) and by tests.

#include <string>
#include <vector>

#include "lib/base/fs.hpp"
#include "lib/base/result.hpp"

namespace archctl {

enum class StderrMode { inherit, capture, discard };

struct SpawnOptions {
    StderrMode stderr_mode = StderrMode::inherit;
    std::vector<std::string> extra_env;  // "NAME=value" entries added to the environment
    // Start the child in a process group of its own (its pid): a Ctrl-C on the terminal then
    // reaches only archctl, which decides how the child ends.
    bool own_process_group = false;
};

class Subprocess {
public:
    // Start argv[0] (searched in PATH) with a pipe to its stdin and one from its stdout.
    static Result<Subprocess> spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

    Subprocess(Subprocess&& other) noexcept;
    Subprocess& operator=(Subprocess&& other) noexcept;
    Subprocess(const Subprocess&) = delete;
    Subprocess& operator=(const Subprocess&) = delete;
    ~Subprocess();  // closes pipes, waits (kills after a grace period if it lingers)

    int stdin_fd() const { return m_in.get(); }
    int stdout_fd() const { return m_out.get(); }
    int stderr_fd() const { return m_err.get(); }
    long pid() const { return m_pid; }

    void close_stdin() { m_in.reset(); }
    // Wait for exit; returns the exit status, or 128+signal.
    int wait();

private:
    Subprocess() = default;
    long m_pid = -1;
    UniqueFd m_in, m_out, m_err;
    bool m_waited = false;
    int m_status = -1;
    bool m_own_group = false;  // its group is tracked for kill_child_groups_for_exit()
};

// Kills (SIGKILL) the process group of every child started with own_process_group and not yet
// reaped. Async-signal-safe: the abort of a second interrupt (lib/base/signals.hpp) calls it
// before it exits, so no far end outlives archctl in a group of its own.
void kill_child_groups_for_exit();

// Run to completion, capturing stdout and stderr.
struct RunOutput {
    int exit_code = -1;
    std::string out;
    std::string err;
};
Result<RunOutput> run_capture(const std::vector<std::string>& argv, const std::string& stdin_data = {},
                              const SpawnOptions& options = {});

}  // namespace archctl
