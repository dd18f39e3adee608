#!/usr/bin/python3
"""verify's recheck on real services: archctl killed right after it asked the target to recheck,
then `resume` alone converges."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
# Large enough that qBittorrent is still checking when the resume starts (about a second of
# hashing; 32 KiB pieces).
LAYOUT = {"pay/a.bin": 384 * 1024 * 1024 + 7, "pay/b.bin": 300001, "pay/c.txt": 12}


class CrashDuringRecheck(unittest.TestCase):
    def test_a_resume_alone_converges_after_a_kill_during_the_recheck(self):
        _, tid, _, _ = flows.seed_resource(LAB, "stall-1", LAYOUT, 7)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "recheck.asked"}, timeout=300)
        self.assertEqual(rc, 137, err)
        aq = LAB.qb("archive1")
        print(f"  target right after the kill: {aq.info([tid])[0]['state']}", file=sys.stderr)
        started = time.monotonic()
        # Before the fix the resume asked for a second recheck during the first one, and qBittorrent
        # left the torrent at checkingDL 0% for good.
        rc, out, err = LAB.archctl("resume", "--max-minutes", "3", timeout=300)
        print(f"  resume: rc {rc} in {time.monotonic() - started:.1f} s", file=sys.stderr)
        self.assertEqual(rc, 0, err)
        t = aq.info([tid])[0]
        self.assertEqual(t["progress"], 1, t)
        flows.wait(lambda: aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")


if __name__ == "__main__":
    unittest.main(verbosity=2)
