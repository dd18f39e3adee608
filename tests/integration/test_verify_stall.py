#!/usr/bin/python3
"""verify's recheck on real services: archctl killed right after it asked the target to recheck,
then `resume` alone converges; a Ctrl-C while it waits for the recheck stops the run at once (exit
10, nothing committed), and `resume` converges."""

import json
import os
import signal
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

    def test_b_ctrl_c_while_waiting_for_the_recheck_stops_the_run_and_resume_converges(self):
        _, tid, _, _ = flows.seed_resource(LAB, "stall-2", LAYOUT, 8)
        release = flows.archctl_paused_at(LAB, "recheck.asked", "archive", tid[:12], "--yes", "--json")
        rc, out, err = release(signo=signal.SIGINT)
        # Before, the wait went on to the check's end and the job committed.
        self.assertEqual(rc, 10, err + out)
        self.assertIn("interrupted (Ctrl-C) during the recheck on 'archive1'", err)
        doc = json.loads(out)
        self.assertEqual(doc["job"]["outcome"], "stopped")
        self.assertEqual(doc["job"]["step"], "verify")
        rc, out, err = LAB.archctl("resume", "--max-minutes", "3", timeout=300)
        self.assertEqual(rc, 0, err)
        aq = LAB.qb("archive1")
        self.assertEqual(aq.info([tid])[0]["progress"], 1)
        flows.wait(lambda: aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")


if __name__ == "__main__":
    unittest.main(verbosity=2)
