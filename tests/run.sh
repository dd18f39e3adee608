#!/usr/bin/env bash
# The test command: install dependencies, build with -Werror and ASan+UBSan, run every suite
# (unit, integration against real qbittorrent-nox and syncthing on 127.0.0.1, fuzz when clang is
# there). Ends with ctest's summary line.
#   tests/run.sh [ctest args...]     e.g. tests/run.sh -L unit
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/tests/deps.sh"
build="${ARCHCTL_BUILD_DIR:-$root/build/test}"
jobs="${ARCHCTL_JOBS:-2}"
# -O1 -g1 with assertions on: what the sanitizers want (readable stacks, Result misuse asserts),
# at about half the compile time of -O2 -g; precompiled headers save the rest of the parsing, and
# unity batches (ARCHCTL_UNITY=OFF to turn them off) share the heavy headers' instantiations.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DARCHCTL_WERROR=ON -DARCHCTL_SANITIZE=ON -DARCHCTL_PCH=ON -DARCHCTL_UNITY="${ARCHCTL_UNITY:-ON}" >/dev/null
cmake --build "$build" -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$build"
exec ctest --output-on-failure --timeout 900 -j"$jobs" "$@"
