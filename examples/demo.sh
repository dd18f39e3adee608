#!/usr/bin/env bash
# The local demo: two qBittorrent + Syncthing nodes on 127.0.0.1 (fully offline), a sample
# torrent seeded on the cache node, then `archctl plan`, `archctl archive` and `archctl status`.
# Everything is torn down at the end; set ARCHCTL_DEMO_KEEP=1 to keep the lab directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/tests/deps.sh"
build="${ARCHCTL_BUILD_DIR:-$root/build/demo}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARCHCTL_TESTS=OFF >/dev/null
cmake --build "$build" -j"${ARCHCTL_JOBS:-2}" --target archctl
exec /usr/bin/python3 "$root/examples/demo.py" "$build/cli/archctl"
