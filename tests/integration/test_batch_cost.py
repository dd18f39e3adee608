#!/usr/bin/python3
"""The cost of planning a batch over many torrents: a cache with 300 complete tiny torrents
(category "few": 60 of them, "bulk": 240), one archive. `plan archive --all` and `plan archive
--category few` read each node's torrent list once (the filters choose from the source's list and
every resource is resolved in it), ask each qBittorrent per resource only for its file list and
its metainfo, and Syncthing about the route once. Requests are counted from the -vv request log;
wall times and the cost per resource are printed, never asserted."""

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
FEW, BULK = 60, 240
REQUEST = re.compile(r"^(qBittorrent|Syncthing) '([^']+)': (GET|POST) (\S+) -> ")


def setUpModule():
    LAB.set_up()
    for category, count, seed in (("few", FEW, 21), ("bulk", BULK, 22)):
        ids, seconds = collection.add_complete_torrents(LAB, "cache1", count, category=category, seed=seed)
        print(f"  cache1: {len(ids)} complete torrents in '{category}' added in {seconds:.1f} s", file=sys.stderr)


def requests_in(err):
    """{(service, node): [endpoint, ...]} from a -vv request log."""
    out = {}
    for line in err.splitlines():
        m = REQUEST.match(line)
        if m:
            out.setdefault((m.group(1), m.group(2)), []).append(m.group(4))
    return out


class BatchPlanCost(unittest.TestCase):
    def plan(self, *selection):
        started = time.monotonic()
        rc, out, err = LAB.archctl("-vv", "plan", "archive", *selection, "--from", "cache1", "--json", timeout=600)
        seconds = time.monotonic() - started
        self.assertEqual(rc, 0, err[-4000:] + out[-2000:])
        return json.loads(out), requests_in(err), seconds

    def check(self, selection, expected):
        doc, seen, seconds = self.plan(*selection)
        actions = [r["action"] for r in doc["batch"]["resources"]]
        self.assertEqual(actions, ["archive"] * expected, doc["batch"]["resources"][:3])
        counts = {f"{s} {n}": len(v) for (s, n), v in sorted(seen.items())}
        print(f"  plan archive {' '.join(selection)}: {expected} resources in {seconds:.2f} s "
              f"({1000 * seconds / expected:.1f} ms each), requests {counts}", file=sys.stderr)
        for node in ("cache1", "archive1"):
            qb = seen.get(("qBittorrent", node), [])
            self.assertLessEqual(qb.count("/api/v2/torrents/info"), 3, f"{node}: {qb.count('/api/v2/torrents/info')} lists")
        cache = seen.get(("qBittorrent", "cache1"), [])
        # Per resource: its file list and its metainfo; the archive holds none of them.
        self.assertEqual(cache.count("/api/v2/torrents/files"), expected)
        self.assertEqual(cache.count("/api/v2/torrents/export"), expected)
        self.assertNotIn("/api/v2/torrents/files", seen.get(("qBittorrent", "archive1"), []))
        # Syncthing: the route looked up once, not once per resource.
        for node in ("cache1", "archive1"):
            self.assertLessEqual(len(seen.get(("Syncthing", node), [])), 20, seen.get(("Syncthing", node)))

    def test_plan_archive_all(self):
        self.check(["--all"], FEW + BULK)

    def test_plan_archive_category(self):
        self.check(["--category", "few"], FEW)


if __name__ == "__main__":
    unittest.main()
