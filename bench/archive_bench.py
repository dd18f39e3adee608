#!/usr/bin/python3
"""End-to-end benchmark (not a test): `archctl archive` of a 1 GiB hybrid torrent between two
lab nodes, next to what a person would otherwise run for the same bytes — a plain Syncthing
transfer of the files plus qBittorrent's own recheck on the target.

    ARCHCTL_BIN=build/cli/archctl bench/archive_bench.py [SIZE_MIB [PIECE_LENGTH]]

bench/run.sh imports this file: seed_hybrid() makes and seeds a resource, archive_once() measures
one archive and its baseline (and archctl's own /proc/<pid>/io at its exit, its torrents/export
requests, and how long the source qBittorrent's web interface took to answer meanwhile),
export_cost() measures what qBittorrent's own torrents/export of a torrent costs.
"""

import os
import shutil
import sys
import threading
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


def seed_hybrid(lab, size, tag, node="cache1", piece_length=None, timeout=1800):
    """A fresh hybrid of `size` bytes (two halves and a small file, new random bytes per tag, so
    Syncthing cannot reuse blocks of an earlier run) seeded on `node`; pieces of `piece_length`
    bytes, or archctl's default."""
    top = f"pay-{tag}"
    save = os.path.join(lab.node(node)["qb_root"], f"bench-{tag}")
    files = {"a.bin": size // 2, "b.bin": size - size // 2 - 1000, "small.txt": 1000}
    seed = sum(ord(c) for c in tag)
    for i, (name, n) in enumerate(files.items()):
        measure.generate(os.path.join(save, top, name), n, seed * 10 + i)
    tfile = os.path.join(lab.dir, f"bench-{tag}.torrent")
    flows.create_torrent(os.path.join(save, top), tfile, kind="hybrid", piece_length=piece_length)
    # Added stopped and rechecked, as a seeded torrent is; the wait scales with the size (an
    # 8 GiB hybrid's recheck takes longer than a minute on a small machine).
    qb = lab.qb(node)
    with open(tfile, "rb") as f:
        data = f.read()
    qb.add_torrent(data, save, paused=True)
    tid = flows.qb_id_of(data)
    flows.wait(lambda: qb.info([tid]), what="torrent listed")
    timed_recheck(qb, tid, timeout)
    return Resource(tid, tfile, save, top, files)


class UiProbe:
    """How long a qBittorrent web interface takes to answer while something else runs: a thread
    asks GET app/version every 0.25 s (the next ask waits for the answer) with its own login and
    cookie, and keeps the longest answer. The cheapest request there is: a long answer is a web
    interface that answered nothing for that long (as while qBittorrent builds a large export).
    An ask that fails (60 s without an answer) is asked again, and the wait counts from the first
    unanswered ask to the next answer, so a silence longer than the timeout is measured whole."""

    INTERVAL_S = 0.25
    TIMEOUT_S = 60

    def __init__(self, lab, node):
        self.qb = lab.qb(node)
        self.qb.login()  # before the clock runs: the asks measure answers, not a login
        self.max_s = 0.0
        self.asks = 0
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()  # an ask still waiting is counted when its answer comes
        return False

    def _loop(self):
        waiting_since = None  # when the first ask not answered yet was sent
        while not self._stop.is_set():
            t0 = time.monotonic()
            if waiting_since is None:
                waiting_since = t0
            try:
                self.qb.call("GET", "app/version", timeout=self.TIMEOUT_S)
                answered = True
            except Exception as e:
                self.errors.append(f"{type(e).__name__}: {e}")
                answered = False
            now = time.monotonic()
            self.asks += 1
            self.max_s = max(self.max_s, now - waiting_since)
            if answered:
                waiting_since = None
            self._stop.wait(max(0.0, self.INTERVAL_S - (now - t0)))


def archive_once(lab, route, res, timeout=1800, bt_backup=False):
    """`archctl -vv archive RES --yes` (measured with its /proc/<pid>/io, and the source
    qBittorrent's web interface probed meanwhile), then the baseline on the same bytes: copy into
    the route folder, Syncthing carries it, qB rechecks it on the target. With bt_backup the run
    has nodes.<name>.qbittorrent.bt_backup set on both nodes (archctl reads the .torrent from
    qBittorrent's BT_backup instead of asking torrents/export); the plain config is written back
    after it. Returns {"archctl_s", "sync_s", "recheck_s", "baseline_s", "io", "exports",
    "ui_max_s", "ui_asks", "ui_errors", "err" (archctl's -vv log), "archived_save" (the archived
    copy's save path on archive1)}."""
    cache, archive = lab.node("cache1"), lab.node("archive1")
    argv, env = lab.archctl_command("-vv", "archive", res.tid[:12], "--yes")
    if bt_backup:
        with open(lab.config_path, "w") as f:
            f.write(lab.config_text(bt_backup=("cache1", "archive1")))
    try:
        with UiProbe(lab, "cache1") as ui:
            r = measure.run(argv, env=env, timeout=timeout)
    finally:
        if bt_backup:
            with open(lab.config_path, "w") as f:
                f.write(lab.config_text())
    r.check("archctl archive")
    # -vv logs one line per qBittorrent request, its endpoint included.
    exports = sum(1 for line in r.err.splitlines() if "/api/v2/torrents/export" in line)

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
    archived_save = other.info([res.tid])[0]["save_path"]
    other.delete(res.tid, delete_files=False)
    flows.wait(lambda: not other.info([res.tid]), what="archived torrent removed from the target qB")
    with open(res.tfile, "rb") as f:
        other.add_torrent(f.read(), os.path.join(archive["sync_root"], route, sub), paused=True)
    flows.wait(lambda: other.info([res.tid]), what="listed")
    t_recheck = timed_recheck(other, res.tid, timeout)
    return {"archctl_s": r.wall, "sync_s": t_sync, "recheck_s": t_recheck, "baseline_s": t_sync + t_recheck,
            "io": r.io, "exports": exports, "ui_max_s": ui.max_s, "ui_asks": ui.asks, "ui_errors": ui.errors,
            "err": r.err, "archived_save": archived_save}


def remove_run(lab, route, res, m, timeout=600):
    """Takes away what one archive_once() of RES left on disk (the payload and its torrent on
    cache1, the archived copy, the baseline's copy on both nodes and its torrent on archive1), so
    the next run of a large payload has its disk space; waits for the route to be idle again."""
    for node in ("cache1", "archive1"):
        qb = lab.qb(node)
        qb.delete(res.tid, delete_files=False)
        flows.wait(lambda: not qb.info([res.tid]), what=f"torrent removed from {node}'s qB")
    archived = os.path.realpath(m["archived_save"])
    if not archived.startswith(os.path.realpath(lab.node("archive1")["qb_root"]) + os.sep):
        raise RuntimeError(f"the archived copy is not below archive1's qb_root: {archived}")
    sub = f"baseline-{res.top}"
    for path in (res.save, archived, os.path.join(lab.node("cache1")["sync_root"], route, sub),
                 os.path.join(lab.node("archive1")["sync_root"], route, sub)):
        shutil.rmtree(path)
    os.unlink(res.tfile)
    for node in ("cache1", "archive1"):
        lab.st(node).scan(route)
    flows.wait(lambda: all((lambda d: d["state"] == "idle" and d["needTotalItems"] == 0)(lab.st(n).db_status(route))
                           for n in ("cache1", "archive1")),
               timeout=timeout, what="route idle after the run's removal", interval=0.5)


def export_cost(lab, res, node="cache1", timeout=1800):
    """What one torrents/export of RES costs on `node`'s qBittorrent: the seconds until its
    answer (one GET, with its own login, waited for up to `timeout`), the size of the .torrent it
    gave, and the web interface's longest answer to the probe meanwhile. Returns {"export_s",
    "bytes", "ui_max_s", "ui_asks", "ui_errors"}."""
    qb = lab.qb(node)
    qb.login()
    with UiProbe(lab, node) as ui:
        t0 = time.monotonic()
        data = qb.call("GET", "torrents/export", query={"hash": res.tid}, timeout=timeout)
        took = time.monotonic() - t0
    return {"export_s": took, "bytes": len(data), "ui_max_s": ui.max_s, "ui_asks": ui.asks, "ui_errors": ui.errors}


def timed_recheck(qb, tid, timeout=1800):
    """Seconds of qB's recheck of a just-added (stopped, unchecked) torrent until complete."""
    t0 = time.monotonic()
    qb.recheck(tid)
    flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP" and t[0]["progress"] == 1)(qb.info([tid])),
               timeout=timeout, what="recheck", interval=0.05)
    return time.monotonic() - t0


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    piece_length = int(sys.argv[2]) if len(sys.argv) > 2 else None
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        route = flows.pair_route(lab, "cache1", "archive1")
        res = seed_hybrid(lab, size * 1024 * 1024, "r1", piece_length=piece_length)
        m = archive_once(lab, route, res, bt_backup=True)
        e = export_cost(lab, res)
        print(f"payload {size} MiB hybrid" + (f", {piece_length}-byte pieces" if piece_length else ""))
        print(f"archctl archive with bt_backup (stage+sync+merge+verify+cleanup): {m['archctl_s']:.1f} s")
        print(f"plain: cp into Syncthing + sync {m['sync_s']:.1f} s + qB recheck {m['recheck_s']:.1f} s"
              f" = {m['baseline_s']:.1f} s")
        print(f"ratio archctl / plain: {m['archctl_s'] / m['baseline_s']:.2f}")
        print(f"archctl's own io: read_bytes {m['io']['read_bytes']}, rchar {m['io']['rchar']}")
        print(f"archctl's torrents/export requests: {m['exports']}; source web interface's longest answer "
              f"during the run: {m['ui_max_s']:.2f} s")
        print(f"qBittorrent's own torrents/export: {e['export_s']:.1f} s ({e['bytes']} bytes); web interface's "
              f"longest answer meanwhile: {e['ui_max_s']:.2f} s")


if __name__ == "__main__":
    main()
