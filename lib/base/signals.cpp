#include "lib/base/signals.hpp"

#include <csignal>
#include <unistd.h>

#include "lib/base/lock_file.hpp"
#include "lib/base/process.hpp"

namespace archctl {
namespace {

volatile sig_atomic_t g_interrupts = 0;
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_first_signal = 0;  // the signal that asked for the stop; 0: request_stop()

void on_interrupt(int signo) {
    g_interrupts = g_interrupts + 1;
    g_stop = 1;
    if (g_interrupts == 1) {
        g_first_signal = signo;
        if (signo == SIGINT) {
            const char msg[] = "\narchctl: stopping after the current chunk (press Ctrl-C again to abort now)\n";
            (void)!::write(2, msg, sizeof msg - 1);
        } else {
            const char msg[] = "\narchctl: SIGTERM: stopping after the current chunk (a second signal aborts now)\n";
            (void)!::write(2, msg, sizeof msg - 1);
        }
    } else if (g_interrupts == 2) {
        const char msg[] = "\narchctl: aborted; state on disk is durable, rerun to continue\n";
        (void)!::write(2, msg, sizeof msg - 1);
        kill_child_groups_for_exit();  // exec far ends live in groups of their own: none outlives the abort
        release_all_locks_for_exit();
        ::_exit(10);
    } else {
        ::signal(SIGKILL, SIG_DFL);
        ::kill(::getpid(), SIGKILL);
    }
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR so loops notice the stop
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

int interrupt_count() { return g_interrupts; }
bool stop_requested() { return g_stop != 0; }
void request_stop() { g_stop = 1; }

const char* interrupt_text() {
    switch (g_first_signal) {
        case SIGINT: return "interrupted (Ctrl-C)";
        case SIGTERM: return "stopped by SIGTERM";
        default: return "stopped";
    }
}

}  // namespace archctl
