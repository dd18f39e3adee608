#!/usr/bin/python3
"""End-to-end benchmark (not a test): `archctl archive` of one hybrid torrent of many small files
(default 100,000 files of 0.5-4.5 KiB, about 244 MiB) between two lab nodes, next to what a
person would otherwise run for the same bytes — the tree copied into the route folder, Syncthing
carrying it, and qBittorrent's own recheck on the target. The issue's goal is a ratio <= 1.3.

    ARCHCTL_BIN=build/rel/cli/archctl bench/archive_many_bench.py [FILES] [--resume]

With --resume: the job is staged and left to Syncthing (`archive --no-wait`), and once every file
is carried `resume` is timed — until the sync is confirmed (the sync step ends) and to the end.

Prints archctl's wall time and peak memory, the baseline's parts and the ratio. The baseline
copies the tree as it is (directories of 1,000 files), as a job's staging directory holds its
payload (shards of 1,000, docs/staging.md "Many files"), so the target Syncthing's check of each
received name against its directory listing (folder option caseSensitiveFS false, the default)
costs both the same.
"""

import os
import random
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import flows  # noqa: E402
from archive_bench import timed_recheck  # noqa: E402
from lab.lab import Lab  # noqa: E402


def make_tree(top, n, seed=7):
    """n files of 512..4608 bytes in directories of 1,000; returns the total size."""
    rng = random.Random(seed)
    total = 0
    for i in range(n):
        d = os.path.join(top, f"d{i // 1000:03d}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        size = rng.randint(512, 4608)
        with open(os.path.join(d, f"f{i:06d}.bin"), "wb") as f:
            f.write(rng.randbytes(size))
        total += size
    return total


def seed(lab, node, tfile, save, timeout):
    qb = lab.qb(node)
    with open(tfile, "rb") as f:
        data = f.read()
    qb.add_torrent(data, save, paused=True)
    tid = flows.qb_id_of(data)
    flows.wait(lambda: qb.info([tid]), what="torrent listed", timeout=timeout)
    qb.recheck(tid)
    flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP" and t[0]["progress"] == 1)(qb.info([tid])),
               what="cache recheck complete", timeout=timeout, interval=0.5)
    return tid


def seeded_many(lab, n, timeout):
    """The tree of n files under cache1's qB root, its hybrid torrent seeded on cache1, the time
    that took printed. Returns (qB id, .torrent path, save path, top directory)."""
    save = os.path.join(lab.node("cache1")["qb_root"], "many")
    top = os.path.join(save, "tree")
    t0 = time.monotonic()
    total = make_tree(top, n)
    tfile = os.path.join(lab.dir, "many.torrent")
    flows.create_torrent(top, tfile, kind="hybrid")
    tid = seed(lab, "cache1", tfile, save, timeout)
    print(f"{n} files, {total / 2**20:.1f} MiB hybrid; tree, torrent and seed in {time.monotonic() - t0:.0f} s", flush=True)
    return tid, tfile, save, top


def resume_in_sync(lab, route, tid, n, timeout):
    """The job staged and left to Syncthing (`archive --no-wait`), every file carried while archctl
    is not running, then `resume`: how long it takes to confirm the sync (until the sync step has
    ended: the driver's pause point job.step.<step> comes after its step) and to finish. Returns (no-wait run, Syncthing alone, confirmation, resume) seconds."""
    argv, env = lab.archctl_command("archive", tid[:12], "--yes", "--no-wait")
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    t_first = time.monotonic() - t0
    if r.returncode not in (0, 10):
        print(r.stderr[-3000:])
        raise SystemExit(f"archctl archive --no-wait exited {r.returncode}")

    def carried():
        st = lab.st("archive1").db_status(route)
        return st["needTotalItems"] == 0 and st["globalFiles"] >= n and st["state"] == "idle"
    t0 = time.monotonic()
    flows.wait(carried, timeout=timeout, what="the job carried by Syncthing", interval=0.5)
    t_carried = time.monotonic() - t0
    gate = os.path.join(lab.dir, "gate-synced")
    argv, env = lab.archctl_command("resume", env={"ARCHCTL_TEST_PAUSE_AT": f"job.step.sync:{gate}"})
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    flows.wait(lambda: os.path.exists(gate + ".paused") or proc.poll() is not None, timeout=timeout, what="sync step", interval=0.05)
    t_confirm = time.monotonic() - t0
    with open(gate, "w"):
        pass
    out, err = proc.communicate(timeout=timeout)
    t_resume = time.monotonic() - t0
    if proc.returncode != 0:
        print(err[-3000:])
        raise SystemExit(f"archctl resume exited {proc.returncode}")
    return t_first, t_carried, t_confirm, t_resume


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 100000
    resume = "--resume" in sys.argv
    timeout = 3600
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        route = flows.pair_route(lab, "cache1", "archive1")
        cache, archive = lab.node("cache1"), lab.node("archive1")
        tid, tfile, save, top = seeded_many(lab, n, timeout)

        if resume:
            t_first, t_carried, t_confirm, t_resume = resume_in_sync(lab, route, tid, n, timeout)
            print(f"archive --no-wait {t_first:.1f} s; Syncthing alone {t_carried:.1f} s; resume: sync confirmed in "
                  f"{t_confirm:.1f} s, done in {t_resume:.1f} s")
            return
        argv, env = lab.archctl_command("archive", tid[:12], "--yes")
        argv = ["/usr/bin/time", "-f", "%M"] + argv
        t0 = time.monotonic()
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        t_archctl = time.monotonic() - t0
        if r.returncode != 0:
            print(r.stderr[-3000:])
            raise SystemExit(f"archctl archive exited {r.returncode}")
        peak_kb = int(r.stderr.strip().splitlines()[-1])

        # Baseline: the same tree into the route folder, Syncthing carries it, qB rechecks it.
        sub = "baseline"
        base_src = os.path.join(cache["sync_root"], route, sub)
        dst = os.path.join(archive["sync_root"], route, sub)
        t0 = time.monotonic()
        shutil.copytree(top, os.path.join(base_src, "tree"))
        lab.st("cache1").scan(route, sub=sub)

        def arrived():
            st = lab.st("archive1").db_status(route)
            return st["needTotalItems"] == 0 and st["globalFiles"] >= n
        flows.wait(arrived, timeout=timeout, what="baseline sync", interval=0.5)
        t_sync = time.monotonic() - t0
        other = lab.qb("archive1")
        other.delete(tid, delete_files=False)
        flows.wait(lambda: not other.info([tid]), what="archived torrent removed from the target qB")
        with open(tfile, "rb") as f:
            other.add_torrent(f.read(), dst, paused=True)
        flows.wait(lambda: other.info([tid]), what="listed")
        t_recheck = timed_recheck(other, tid, timeout)
        base = t_sync + t_recheck
        print(f"archctl archive: {t_archctl:.1f} s, peak {peak_kb / 1024:.0f} MiB ({peak_kb * 1024 / n:.0f} B/file)")
        print(f"plain: cp into Syncthing + sync {t_sync:.1f} s + qB recheck {t_recheck:.1f} s = {base:.1f} s")
        print(f"ratio archctl / plain: {t_archctl / base:.2f}")


if __name__ == "__main__":
    main()
