#!/usr/bin/python3
"""The cost of `archctl status` over a large collection: two fresh qBittorrents with 2,000
torrents each, added stopped and without payload. status reads each node's torrent list once
(the probe counts it and the placements are found in it), so it makes at most 3 requests to each
qBittorrent (login, app/version, torrents/info: qBittorrent 4.5.2's WebAPI version is known from
its release), and its Syncthing requests do not grow with the torrents. Requests are counted from
the -vv request log; the wall time is printed, never asserted."""

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
REQUEST = re.compile(r"^(qBittorrent|Syncthing) '([^']+)': (GET|POST) (\S+) -> ")


def setUpModule():
    LAB.set_up()
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


if __name__ == "__main__":
    unittest.main()
