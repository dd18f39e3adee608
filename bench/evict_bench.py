#!/usr/bin/python3
"""Benchmark (not a test): what the live proof costs an eviction of a torrent with many files.

Archives a torrent of N small files (default 1000) from cache1 to archive1, then evicts it with
-vv and counts the HTTP requests each phase makes to the archive's qBittorrent: the proof in
`evict` (prepare) and each revalidation right before a deletion. Also times `plan evict` (one
full live check: qBittorrent's state and file list, one stat batch on the archive node) against
the eviction as a whole.

    ARCHCTL_BIN=build/cli/archctl bench/evict_bench.py [FILES]
"""

import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import flows  # noqa: E402
from lab.lab import Lab  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        flows.pair_route(lab, "cache1", "archive1")
        save = os.path.join(lab.node("cache1")["qb_root"], "bench")
        layout = {f"pay/d{i // 100:02d}/f{i:05d}.bin": 1024 + i for i in range(n)}
        flows.write_payload(save, layout, seed=9)
        tfile = os.path.join(lab.dir, "bench.torrent")
        flows.create_torrent(os.path.join(save, "pay"), tfile, kind="hybrid", piece_length=16384)
        tid = flows.seed_cache(lab, "cache1", tfile, save)
        rc, out, err = lab.archctl("archive", tid[:12], "--yes", timeout=1800)
        assert rc == 0, err

        t0 = time.monotonic()
        rc, out, err = lab.archctl("plan", "evict", tid[:12], "--from", "cache1", "-vv", timeout=600)
        t_plan = time.monotonic() - t0
        assert rc == 0, err
        plan_requests = [l for l in err.splitlines() if re.search(r"qbittorrent .?archive1.?", l, re.I)]

        t0 = time.monotonic()
        rc, out, err = lab.archctl("evict", tid[:12], "--from", "cache1", "--yes", "-vv", timeout=1800)
        t_evict = time.monotonic() - t0
        assert rc == 0, err
        archive_requests = [l for l in err.splitlines() if re.search(r"qbittorrent .?archive1.?", l, re.I)]
        print(f"evict of a hybrid torrent of {n} files ({sum(layout.values()) // 1024} KiB)")
        print(f"plan evict (one live check of the archive copy): {t_plan:.2f} s, "
              f"{len(plan_requests)} requests to the archive qBittorrent")
        print(f"evict (proof, hold, revalidation before the removal and before the unlink batch, release): {t_evict:.2f} s, "
              f"{len(archive_requests)} requests to the archive qBittorrent")
        for line in archive_requests:
            print("   ", line.split("archctl: ", 1)[-1])


if __name__ == "__main__":
    main()
