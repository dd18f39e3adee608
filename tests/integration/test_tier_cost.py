#!/usr/bin/python3
"""The cost of `archctl plan tier` over a large collection: a fresh qBittorrent with 2,000
torrents added stopped and without payload; plan tier reads the cache's torrent list once, so it
makes at most 3 requests to that qBittorrent (the client's request counter, reported as
"requests" in --json), and finishes in seconds. Prints the request counts and the wall time."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collection  # noqa: E402
import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
COUNT = 2000
STATE = {}


def setUpModule():
    LAB.set_up()
    ids, seconds = collection.add_stopped_torrents(LAB, "cache1", COUNT)
    print(f"  {len(ids)} stopped torrents added in {seconds:.1f} s", file=sys.stderr)
    config = os.path.join(LAB.dir, "tier.toml")
    with open(LAB.config_path) as f:
        base = f.read()
    with open(config, "w") as f:
        f.write(base + "\n" + "\n".join([
            "[tier.box]",
            'cache = "cache1"',
            'archive = ["archive1"]',
            'max_used = "1%"',  # never met: plan tier looks at every torrent
            'archive_when = { larger_than = "1B" }',
            'exclude = { categories = ["keep"] }',
            'order = "oldest"',
            'evict = "to_goal"', ""]))
    STATE["config"] = config


def requests_of(doc, name="box"):
    """qB requests per node of a plan tier --json document ({"tier": [{"policy": NAME, "requests": …}]})."""
    return [p for p in doc["tier"] if p["policy"] == name][0]["requests"]


class TierCost(unittest.TestCase):
    def test_plan_tier_over_2000_torrents(self):
        self.assertEqual(len(LAB.qb("cache1").info()), COUNT)
        for run in (1, 2):  # the second run is the warm one (page cache, qB's own caches)
            started = time.monotonic()
            rc, out, err = LAB.archctl("plan", "tier", "box", "--json", config=STATE["config"], timeout=120)
            seconds = time.monotonic() - started
            self.assertEqual(rc, 0, err + out)
            requests = requests_of(json.loads(out))
            print(f"  plan tier over {COUNT} torrents, run {run}: {seconds:.2f} s, qB requests {requests}",
                  file=sys.stderr)
            self.assertLessEqual(requests["cache1"], 3, requests)

    def test_a_plan_where_every_candidate_is_blocked_offers_no_run(self):
        # Every torrent here is stopped without its payload: each is blocked (still downloading),
        # so the plan moves nothing and must not end with a command that would do nothing.
        rc, out, err = LAB.archctl("plan", "tier", "box", config=STATE["config"], timeout=120)
        self.assertEqual(rc, 0, err + out)
        self.assertIn("blocked", out)
        self.assertNotIn("run with:", out, out.splitlines()[-1])
        self.assertIn("nothing to run now", out)


if __name__ == "__main__":
    unittest.main()
