#!/usr/bin/python3
"""End-to-end benchmark (not a test): `archctl archive` of a 1 GiB hybrid torrent between two
lab nodes, next to what a person would otherwise run for the same bytes — a plain Syncthing
transfer of the files plus qBittorrent's own recheck on the target.

    ARCHCTL_BIN=build/cli/archctl bench/archive_bench.py [SIZE_MIB]
"""

import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import flows  # noqa: E402
from lab.lab import Lab  # noqa: E402


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        route = flows.pair_route(lab, "cache1", "archive1")
        cache, archive = lab.node("cache1"), lab.node("archive1")
        save = os.path.join(cache["qb_root"], "bench")
        flows.write_payload(save, {"pay/a.bin": size * 1024 * 1024 // 2, "pay/b.bin": size * 1024 * 1024 // 2,
                                   "pay/small.txt": 1000}, seed=5)
        tfile = os.path.join(lab.dir, "bench.torrent")
        flows.create_torrent(os.path.join(save, "pay"), tfile, kind="hybrid")
        tid = flows.seed_cache(lab, "cache1", tfile, save)

        t0 = time.monotonic()
        rc, out, err = lab.archctl("archive", tid[:12], "--yes", timeout=1800)
        t_archctl = time.monotonic() - t0
        assert rc == 0, err

        # Baseline: copy the files into the route folder, let Syncthing carry them, recheck on
        # the target with qBittorrent. (cp of a hard link costs what a person's copy would.)
        base_src = os.path.join(cache["sync_root"], route, "baseline")
        t0 = time.monotonic()
        shutil.copytree(os.path.join(save, "pay"), os.path.join(base_src, "pay"))
        lab.st("cache1").scan(route, sub="baseline")
        dst = os.path.join(archive["sync_root"], route, "baseline", "pay")
        flows.wait(lambda: all(os.path.exists(os.path.join(dst, n)) and
                               os.path.getsize(os.path.join(dst, n)) == os.path.getsize(os.path.join(save, "pay", n))
                               for n in ("a.bin", "b.bin", "small.txt"))
                   and lab.st("archive1").db_status(route)["needTotalItems"] == 0, timeout=1800, what="baseline sync")
        t_sync = time.monotonic() - t0
        other = lab.qb("archive1")
        other.delete(tid, delete_files=False)
        with open(tfile, "rb") as f:
            other.add_torrent(f.read(), os.path.join(archive["sync_root"], route, "baseline"), paused=True)
        flows.wait(lambda: other.info([tid]), what="listed")
        t0 = time.monotonic()
        other.recheck(tid)
        flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP")(other.info([tid])), timeout=1800, what="recheck")
        t_recheck = time.monotonic() - t0
        base = t_sync + t_recheck
        print(f"payload {size} MiB hybrid")
        print(f"archctl archive (stage+sync+merge+verify+cleanup): {t_archctl:.1f} s")
        print(f"plain: cp into Syncthing + sync {t_sync:.1f} s + qB recheck {t_recheck:.1f} s = {base:.1f} s")
        print(f"ratio archctl / plain: {t_archctl / base:.2f}")


if __name__ == "__main__":
    main()
