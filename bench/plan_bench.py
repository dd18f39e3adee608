#!/usr/bin/python3
"""Benchmark (not a test): `archctl plan archive` of one hybrid torrent of many small files
(default 100,000 files of 0.5-4.5 KiB, the tree of bench/archive_many_bench.py) seeded on one lab
node, with a route to another. The project's goal: plan of a 100,000-file torrent in <= 2 s with
archctl's own CPU <= 30%, and peak memory <= 500 B per file + 50 MB.

    ARCHCTL_BIN=build/rel/cli/archctl bench/plan_bench.py [FILES] [--runs=N] [--bin=OTHER ...] [--requests]

Each binary (ARCHCTL_BIN, then every --bin, all against the same lab and torrent) runs `plan
archive` --runs times (default 3); prints each run's wall time, archctl's user and system CPU, its
share of the wall time and its peak RSS (/usr/bin/time). With --requests, one more run with -vv
lists the HTTP requests the plan made (qBittorrent, Syncthing; one line each).
"""

import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import flows  # noqa: E402
from archive_many_bench import seeded_many  # noqa: E402
from lab.lab import Lab  # noqa: E402


def timed_plan(lab, binary, tid, timeout):
    """(wall s, user s, sys s, peak KiB) of one `plan archive` run by `binary`."""
    argv, env = lab.archctl_command("plan", "archive", tid[:12])
    argv[0] = binary
    argv = ["/usr/bin/time", "-f", "%e %U %S %M"] + argv
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        print(r.stderr[-3000:])
        raise SystemExit(f"{binary} plan archive exited {r.returncode}")
    _, user, system, peak = r.stderr.strip().splitlines()[-1].split()
    return wall, float(user), float(system), int(peak)


def requests(lab, binary, tid, timeout):
    """The -vv log of one `plan archive` run: one line per HTTP request."""
    argv, env = lab.archctl_command("-vv", "plan", "archive", tid[:12])
    argv[0] = binary
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return r.stderr.splitlines()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 100000
    runs = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--runs=")), 3)
    binaries = [os.environ["ARCHCTL_BIN"]] + [a.split("=", 1)[1] for a in sys.argv if a.startswith("--bin=")]
    timeout = 3600
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        flows.pair_route(lab, "cache1", "archive1")
        tid = seeded_many(lab, n, timeout)[0]
        for binary in binaries:
            timed_plan(lab, binary, tid, timeout)  # warm: page cache, qBittorrent's own caches
            for _ in range(runs):
                wall, user, system, peak = timed_plan(lab, binary, tid, timeout)
                print(f"{binary}: plan archive {wall:.2f} s, user {user:.2f} s + sys {system:.2f} s "
                      f"(CPU {100 * (user + system) / wall:.0f}%), peak {peak / 1024:.0f} MiB "
                      f"({peak * 1024 / n:.0f} B/file)", flush=True)
            if "--requests" in sys.argv:
                for line in requests(lab, binary, tid, timeout):
                    print("  " + line[:300])


if __name__ == "__main__":
    main()
