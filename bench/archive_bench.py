#!/usr/bin/python3
"""End-to-end benchmark (not a test): `archctl archive` of a 1 GiB hybrid torrent between two
lab nodes, next to what a person would otherwise run for the same bytes — a plain Syncthing
transfer of the files plus qBittorrent's own recheck on the target.

    ARCHCTL_BIN=build/cli/archctl bench/archive_bench.py [SIZE_MIB]

bench/run.sh imports this file: seed_hybrid() makes and seeds a resource, archive_once() measures
one archive and its baseline (and archctl's own /proc/<pid>/io at its exit).
"""

import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import flows  # noqa: E402
import measure  # noqa: E402
from lab.lab import Lab  # noqa: E402


class Resource:
    """A seeded hybrid on a cache node: its qB id, .torrent, save path, top directory and files."""

    def __init__(self, tid, tfile, save, top, files):
        self.tid, self.tfile, self.save, self.top, self.files = tid, tfile, save, top, files

    @property
    def size(self):
        return sum(self.files.values())

    def paths(self):
        return [os.path.join(self.save, self.top, name) for name in self.files]


def seed_hybrid(lab, size, tag, node="cache1"):
    """A fresh hybrid of `size` bytes (two halves and a small file, new random bytes per tag, so
    Syncthing cannot reuse blocks of an earlier run) seeded on `node`."""
    top = f"pay-{tag}"
    save = os.path.join(lab.node(node)["qb_root"], f"bench-{tag}")
    files = {"a.bin": size // 2, "b.bin": size - size // 2 - 1000, "small.txt": 1000}
    seed = sum(ord(c) for c in tag)
    for i, (name, n) in enumerate(files.items()):
        measure.generate(os.path.join(save, top, name), n, seed * 10 + i)
    tfile = os.path.join(lab.dir, f"bench-{tag}.torrent")
    flows.create_torrent(os.path.join(save, top), tfile, kind="hybrid")
    tid = flows.seed_cache(lab, node, tfile, save)
    return Resource(tid, tfile, save, top, files)


def archive_once(lab, route, res, timeout=1800):
    """`archctl archive RES --yes` (measured with its /proc/<pid>/io), then the baseline on the
    same bytes: copy into the route folder, Syncthing carries it, qB rechecks it on the target.
    Returns {"archctl_s", "sync_s", "recheck_s", "baseline_s", "io"}."""
    cache, archive = lab.node("cache1"), lab.node("archive1")
    argv, env = lab.archctl_command("archive", res.tid[:12], "--yes")
    r = measure.run(argv, env=env, timeout=timeout).check("archctl archive")

    # Baseline: copy the files into the route folder, let Syncthing carry them, recheck on the
    # target with qBittorrent. (cp of a hard link costs what a person's copy would.)
    sub = f"baseline-{res.top}"
    base_src = os.path.join(cache["sync_root"], route, sub)
    dst = os.path.join(archive["sync_root"], route, sub, res.top)
    t0 = time.monotonic()
    shutil.copytree(os.path.join(res.save, res.top), os.path.join(base_src, res.top))
    lab.st("cache1").scan(route, sub=sub)
    flows.wait(lambda: all(os.path.exists(os.path.join(dst, n)) and os.path.getsize(os.path.join(dst, n)) == size
                           for n, size in res.files.items())
               and lab.st("archive1").db_status(route)["needTotalItems"] == 0,
               timeout=timeout, what="baseline sync", interval=0.05)
    t_sync = time.monotonic() - t0
    other = lab.qb("archive1")
    other.delete(res.tid, delete_files=False)
    flows.wait(lambda: not other.info([res.tid]), what="archived torrent removed from the target qB")
    with open(res.tfile, "rb") as f:
        other.add_torrent(f.read(), os.path.join(archive["sync_root"], route, sub), paused=True)
    flows.wait(lambda: other.info([res.tid]), what="listed")
    t_recheck = timed_recheck(other, res.tid, timeout)
    return {"archctl_s": r.wall, "sync_s": t_sync, "recheck_s": t_recheck, "baseline_s": t_sync + t_recheck,
            "io": r.io}


def timed_recheck(qb, tid, timeout=1800):
    """Seconds of qB's recheck of a just-added (stopped, unchecked) torrent until complete."""
    t0 = time.monotonic()
    qb.recheck(tid)
    flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP" and t[0]["progress"] == 1)(qb.info([tid])),
               timeout=timeout, what="recheck", interval=0.05)
    return time.monotonic() - t0


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        route = flows.pair_route(lab, "cache1", "archive1")
        res = seed_hybrid(lab, size * 1024 * 1024, "r1")
        m = archive_once(lab, route, res)
        print(f"payload {size} MiB hybrid")
        print(f"archctl archive (stage+sync+merge+verify+cleanup): {m['archctl_s']:.1f} s")
        print(f"plain: cp into Syncthing + sync {m['sync_s']:.1f} s + qB recheck {m['recheck_s']:.1f} s"
              f" = {m['baseline_s']:.1f} s")
        print(f"ratio archctl / plain: {m['archctl_s'] / m['baseline_s']:.2f}")
        print(f"archctl's own io: read_bytes {m['io']['read_bytes']}, rchar {m['io']['rchar']}")


if __name__ == "__main__":
    main()
