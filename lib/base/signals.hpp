#pragma once
// Ctrl-C escalation (docs/design.md "Signals"): the first SIGINT (or SIGTERM) requests a clean stop — code
// polls stop_requested() at chunk and step boundaries, banks what it has and exits 10; the second
// aborts at once (every held lock is released, every child in a process group of its own is
// killed; state is durable anyway) with exit 10; the third hard-kills the process.

namespace archctl {

void install_interrupt_handlers();
// Number of interrupts received so far.
int interrupt_count();
// True once the first interrupt arrived (or request_stop() was called).
bool stop_requested();
// What stopped the run, for its message: "interrupted (Ctrl-C)" for SIGINT, "stopped by SIGTERM"
// for SIGTERM (a service manager, `timeout`, `kill`), "stopped" for request_stop().
const char* interrupt_text();
// Ask for a clean stop from inside the process (budgets, deadlines use their own paths; this is
// for tests and for the cancel command).
void request_stop();

}  // namespace archctl
