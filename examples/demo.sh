#!/usr/bin/env bash
# The local demo: two qBittorrent + Syncthing nodes on 127.0.0.1 and an archive job between them.
set -euo pipefail
echo "archctl: the demo is not available in this build yet: it arrives with the job engine (archive/unarchive)." >&2
echo "hint: tests/run.sh builds archctl and runs the test suite" >&2
exit 1
