#pragma once
// Crash points: named places, at every durable write and step boundary, where a test can kill
// the process to prove that a rerun converges from there.
//
//   ARCHCTL_TEST_CRASH_AT=<name>[:<n>]  _exit(137) at the n-th pass (default 1) of point <name>
//   ARCHCTL_TEST_CRASH_LIST=1           print "archctl: crash-point <name>" on stderr at each pass
//   ARCHCTL_TEST_PAUSE_AT=<name>:<file> at the first pass of point <name>, create <file>.paused
//                                       and wait (at most 10 minutes) until <file> exists, so a
//                                       test can change external state between two steps of a run
//
// They are read once per process. Without them a crash point costs one branch.

#include <string_view>

namespace archctl {

void crash_point(std::string_view name);

}  // namespace archctl
