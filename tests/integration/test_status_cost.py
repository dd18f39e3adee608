#!/usr/bin/python3
"""The cost of `archctl status` over a large collection: two fresh qBittorrents with 2,000
torrents each, added stopped and without payload. status reads each node's torrent list once
(the probe counts it and the placements are found in it), so it makes at most 3 requests to each
qBittorrent (login, app/version, torrents/info: qBittorrent 4.5.2's WebAPI version is known from
its release), and its Syncthing requests do not grow with the torrents. With 100 placements
recorded of complete single-file torrents both nodes hold, status stays at those 3 requests once
each resource's file table is known (the first status reads it, one list per resource): the
torrent entries prove every file selected and complete (docs/status.md "What status reads").
Requests are counted from the -vv request log; the wall times (empty nodes, loaded) are printed,
never asserted."""

import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collection  # noqa: E402
import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
COUNT = 2000
PLACEMENTS = 100
EMPTY = {}  # the wall time of status on the empty nodes, per run
REQUEST = re.compile(r"^(qBittorrent|Syncthing) '([^']+)': (GET|POST) (\S+) -> ")


def setUpModule():
    LAB.set_up()
    for run in (1, 2):
        started = time.monotonic()
        rc, out, err = LAB.archctl("status", "--json", timeout=120)
        EMPTY[run] = time.monotonic() - started
        if rc != 0:
            raise RuntimeError(f"status on empty nodes: exit {rc}: {err}")
    for node in ("cache1", "archive1"):
        ids, seconds = collection.add_stopped_torrents(LAB, node, COUNT)
        print(f"  {node}: {len(ids)} stopped torrents added in {seconds:.1f} s", file=sys.stderr)


def requests_in(err):
    """{(service, node): [endpoint, ...]} from a -vv request log."""
    out = {}
    for line in err.splitlines():
        m = REQUEST.match(line)
        if m:
            out.setdefault((m.group(1), m.group(2)), []).append(m.group(4))
    return out


def record_placement(v1, node, job):
    """A placement record as a commit writes it (state/placements/<alias>/<node>.json)."""
    folder = os.path.join(LAB.state_dir, "placements", v1)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{node}.json"), "w") as f:
        json.dump({"generation": 1, "fingerprint": "f", "job_id": job, "committed_at": "2026-12-01T00:00:00Z",
                   "detail": {"qb_id": v1, "union": "0", "stamps": []}}, f)


def timed_status():
    started = time.monotonic()
    rc, out, err = LAB.archctl("-vv", "status", "--json", timeout=300)
    return rc, out, err, time.monotonic() - started


class StatusCost(unittest.TestCase):
    def test_status_over_2000_torrents_per_node(self):
        for run in (1, 2):  # the second run is the warm one
            started = time.monotonic()
            rc, out, err = LAB.archctl("-vv", "status", "--json", timeout=120)
            seconds = time.monotonic() - started
            self.assertEqual(rc, 0, err + out)
            doc = json.loads(out)
            self.assertEqual({n["name"]: n["qbittorrent"]["torrent_count"] for n in doc["nodes"]},
                             {"cache1": COUNT, "archive1": COUNT})
            seen = requests_in(err)
            counts = {f"{s} {n}": len(v) for (s, n), v in sorted(seen.items())}
            print(f"  status over 2 x {COUNT} torrents, run {run}: {seconds:.2f} s, requests {counts}", file=sys.stderr)
            for node in ("cache1", "archive1"):
                qb = seen.get(("qBittorrent", node), [])
                self.assertLessEqual(len(qb), 3, qb)
                self.assertEqual(qb.count("/api/v2/torrents/info"), 1, qb)
                self.assertNotIn("/api/v2/torrents/files", qb)
                self.assertNotIn("/api/v2/torrents/properties", qb)
                # Syncthing: the probe (version, status) and the routes' reads, none per torrent.
                self.assertLessEqual(len(seen.get(("Syncthing", node), [])), 12, seen.get(("Syncthing", node)))

    def test_status_of_one_resource_reads_one_list_per_node(self):
        tid = LAB.qb("cache1").info()[0]["hash"]
        rc, out, err = LAB.archctl("-vv", "status", tid, "--json", timeout=120)
        self.assertEqual(rc, 0, err + out)
        seen = requests_in(err)
        # Both nodes hold the same stubs (same seed): one list and the one file list each.
        for node in ("cache1", "archive1"):
            qb = seen.get(("qBittorrent", node), [])
            self.assertEqual(qb.count("/api/v2/torrents/info"), 1, qb)
            self.assertEqual(qb.count("/api/v2/torrents/files"), 1, qb)
            self.assertLessEqual(len(qb), 3, qb)

    def test_status_with_100_placements_of_complete_torrents(self):
        # Runs last (name order): the torrents it adds would change the counts above.
        ids = []
        for node in ("cache1", "archive1"):  # the same seed: the same torrents on both nodes
            ids, seconds = collection.add_complete_torrents(LAB, node, PLACEMENTS, category="placed")
            print(f"  {node}: {len(ids)} complete torrents added in {seconds:.1f} s", file=sys.stderr)
        for i, v1 in enumerate(ids):
            record_placement(v1, "archive1", f"20261201-000000-{i:04x}")
        runs = {}
        for run in (1, 2, 3):  # the first reads each resource's file table once
            rc, out, err, seconds = timed_status()
            self.assertEqual(rc, 0, err + out)
            doc = json.loads(out)
            runs[run] = (seconds, requests_in(err))
        counts = {run: {f"{s} {n}": len(v) for (s, n), v in sorted(seen.items())} for run, (_, seen) in runs.items()}
        print(f"  status on empty nodes: {', '.join(f'{t:.2f} s' for t in EMPTY.values())}; "
              f"2 x {COUNT + PLACEMENTS} torrents with {PLACEMENTS} placements: "
              f"{', '.join(f'{t:.2f} s' for t, _ in runs.values())}; requests {counts}", file=sys.stderr)
        placed = [r for r in doc["placements"] if r["resource"] in ids]
        self.assertEqual(len(placed), PLACEMENTS)
        for r in placed:
            by_node = {p["node"]: p for p in r["placements"]}
            for node in ("cache1", "archive1"):
                p = by_node[node]
                self.assertTrue(p["present"], p)
                self.assertEqual((p["files"], p["selected"], p["complete"], p["complete_files"]), (1, "0", "0", 1), p)
                self.assertEqual(p["selected_bytes"], p["complete_bytes"])
            # The record holds no stamps: the archive copy counts by evict's piece check, as it
            # does when every placement's file list is read.
            self.assertEqual([(c["cache"], c["files"], c["covered"], c["by_archive"]) for c in r["coverage"]],
                             [("cache1", 1, 1, {"archive1": 1})])
        first = runs[1][1]
        for node in ("cache1", "archive1"):
            # The first status: at most one file list per resource, never one per placement.
            self.assertLessEqual(first.get(("qBittorrent", node), []).count("/api/v2/torrents/files"), PLACEMENTS)
            for run in (2, 3):
                qb = runs[run][1].get(("qBittorrent", node), [])
                self.assertLessEqual(len(qb), 3, qb)
                self.assertNotIn("/api/v2/torrents/files", qb)


if __name__ == "__main__":
    unittest.main()
