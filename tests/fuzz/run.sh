#!/usr/bin/env bash
# Build the libFuzzer targets with clang in their own build directory and run each for a
# bounded time. Registered as ctest `fuzz.metainfo` in GCC builds when clang++ is installed;
# any crash or sanitizer report fails it.
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$1"
seconds="${2:-60}"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DARCHCTL_FUZZ=ON -DARCHCTL_TESTS=ON >/dev/null
# Quiet when it builds; the compiler's and linker's own words when it does not.
if ! cmake --build "$build" -j"${ARCHCTL_JOBS:-2}" --target fuzz_metainfo >"$build/fuzz-build.log" 2>&1; then
  tail -n 40 "$build/fuzz-build.log" >&2
  echo "archctl: error: building the fuzz target failed; the full log is $build/fuzz-build.log" >&2
  exit 1
fi
corpus="$build/tests/fuzz/corpus-metainfo"
mkdir -p "$corpus"
exec "$build/tests/fuzz/fuzz_metainfo" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" "$root/tests/fuzz/corpus"
