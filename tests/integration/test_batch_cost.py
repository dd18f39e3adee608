#!/usr/bin/python3
"""The cost of planning a batch over many torrents: a cache with 300 complete tiny torrents
(category "few": 60 of them, "bulk": 240), one archive that already holds the 60 of "few"
complete. `plan archive --all` and `plan archive --category bulk` read each node's torrent list
once (the filters choose from the source's list and every resource is resolved in it), ask the
cache per new job only for its file list and its metainfo, the archive per resource it holds only
for its file list (nothing to do), and Syncthing about the route once. Requests are counted from
the -vv request log; wall times and the cost per resource are printed, never asserted."""

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
    for node, category, count, seed in (("cache1", "few", FEW, 21), ("cache1", "bulk", BULK, 22), ("archive1", "few", FEW, 21)):
        ids, seconds = collection.add_complete_torrents(LAB, node, count, category=category, seed=seed)
        print(f"  {node}: {len(ids)} complete torrents in '{category}' added in {seconds:.1f} s", file=sys.stderr)


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

    def check(self, selection, new, held):
        doc, seen, seconds = self.plan(*selection)
        actions = sorted(r["action"] for r in doc["batch"]["resources"])
        self.assertEqual(actions, ["archive"] * new + ["nothing_to_do"] * held, doc["batch"]["resources"][:3])
        counts = {f"{s} {n}": len(v) for (s, n), v in sorted(seen.items())}
        resources = new + held
        print(f"  plan archive {' '.join(selection)}: {resources} resources ({new} new jobs) in {seconds:.2f} s "
              f"({1000 * seconds / resources:.1f} ms each), requests {counts}", file=sys.stderr)
        for node in ("cache1", "archive1"):
            qb = seen.get(("qBittorrent", node), [])
            self.assertLessEqual(qb.count("/api/v2/torrents/info"), 3, f"{node}: {qb.count('/api/v2/torrents/info')} lists")
        cache = seen.get(("qBittorrent", "cache1"), [])
        archive = seen.get(("qBittorrent", "archive1"), [])
        # Per new job: its file list and its metainfo; per resource the archive holds: its file list.
        self.assertEqual(cache.count("/api/v2/torrents/files"), new)
        self.assertEqual(cache.count("/api/v2/torrents/export"), new)
        self.assertEqual(archive.count("/api/v2/torrents/files"), held)
        # Syncthing: the route looked up once, not once per resource.
        for node in ("cache1", "archive1"):
            self.assertLessEqual(len(seen.get(("Syncthing", node), [])), 20, seen.get(("Syncthing", node)))

    def test_plan_archive_all(self):
        self.check(["--all"], BULK, FEW)

    def test_plan_archive_category(self):
        self.check(["--category", "bulk"], BULK, 0)

    def test_plan_archive_category_held(self):
        self.check(["--category", "few"], 0, FEW)


if __name__ == "__main__":
    unittest.main()
