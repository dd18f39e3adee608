#!/usr/bin/env bash
# Build one libFuzzer target with clang in its own build directory and run it for a bounded
# time on its seed corpus. Registered as ctest `fuzz.metainfo`, `fuzz.node` and
# `fuzz.line_reader` in GCC builds when clang++ is installed; any crash or sanitizer report fails
# it. Extra arguments go to libFuzzer (e.g. -jobs=1 -print_final_stats=1).
#   tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET: metainfo | node | line_reader] [LIBFUZZER_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$1"
seconds="${2:-60}"
target="${3:-metainfo}"
shift $(( $# < 3 ? $# : 3 ))
case "$target" in
  metainfo) seeds="$root/tests/fuzz/corpus"; max_len=65536 ;;
  node) seeds="$root/tests/fuzz/corpus-node"; max_len=16384 ;;
  line_reader) seeds="$root/tests/fuzz/corpus-line-reader"; max_len=16384 ;;
  *) echo "archctl: error: unknown fuzz target '$target'" >&2
     echo "hint: one of metainfo, node, line_reader" >&2
     exit 2 ;;
esac
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DARCHCTL_FUZZ=ON -DARCHCTL_TESTS=ON >/dev/null
# Quiet when it builds; the compiler's and linker's own words when it does not.
if ! cmake --build "$build" -j"${ARCHCTL_JOBS:-2}" --target "fuzz_$target" >"$build/fuzz-build-$target.log" 2>&1; then
  tail -n 40 "$build/fuzz-build-$target.log" >&2
  echo "archctl: error: building the fuzz target failed; the full log is $build/fuzz-build-$target.log" >&2
  exit 1
fi
corpus="$build/tests/fuzz/corpus-$target"
mkdir -p "$corpus"
exec "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=25 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" "$corpus" "$seeds"
