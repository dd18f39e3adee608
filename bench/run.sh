#!/usr/bin/env bash
# Issue 18's benchmark in one command (not a test, not part of the pass/fail gate): builds a
# Release archctl in build/bench (or takes ARCHCTL_BIN=/path and builds nothing), starts one lab
# (cache1 and archive1 with a route, real qbittorrent-nox and syncthing on 127.0.0.1), runs every
# row side by side with the tool a user would run instead, prints a table of ratios and writes it
# as JSON to bench/results/<YYYY-MM-DD>[-HHMM].json (not committed).
#
#   bench/run.sh [--quick] [--only ROW[,ROW]] [--repeat N]
#   ARCHCTL_BIN=/tmp/before/archctl bench/run.sh        measure another binary
#   bench/run.sh --only 9      the 8 GiB hybrid of 1 MiB pieces (not in the default rows: ~40 GB
#                              of disk, 15-25 minutes; archive with bt_backup set, the source
#                              qBittorrent's web interface probed, and its own torrents/export timed)
#   python3 bench/torrent_memory.py ARCHCTL_BIN 100000,1000000 --kind v2   torrent commands' peak memory
#
# Needs what tests/deps.sh installs. Exit 0 whether the goals are met or not; 1 when a row could
# not be measured. See bench/runner.py for the rows (row 1 runs with bt_backup set; goal <= 1.10x).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
for tool in python3 qbittorrent-nox syncthing openssl; do
  command -v "$tool" >/dev/null || { echo "bench: error: '$tool' is missing; run tests/deps.sh first" >&2; exit 2; }
done
if [ -z "${ARCHCTL_BIN:-}" ]; then
  build="$root/build/bench"
  echo "bench: building a Release archctl in $build" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARCHCTL_SANITIZE=OFF -DARCHCTL_TESTS=OFF \
    >/dev/null
  cmake --build "$build" --target archctl -j"$(nproc)" >&2
  ARCHCTL_BIN="$build/cli/archctl"
fi
export ARCHCTL_BIN
exec python3 "$root/bench/runner.py" "$@"
