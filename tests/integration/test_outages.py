#!/usr/bin/python3
"""Outages are waits, on real services: the target's Syncthing or qBittorrent goes away in the
middle of a job and comes back. The run either waits it out (exit 0) or stops cleanly (exit 10)
with the job unfinished, and `archctl resume` — nothing else — finishes it. A compensation a
down service interrupts leaves the job 'compensating', and resume finishes that too."""

import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
LAYOUT = {"pay/a.bin": 3 * 1024 * 1024 + 7, "pay/sub/b.bin": 400000, "pay/c.txt": 12}
COUNTER = [0]


def new_resource(kind="hybrid"):
    COUNTER[0] += 1
    name = f"outage-{COUNTER[0]}"
    _, tid, save, _ = flows.seed_resource(LAB, name, LAYOUT, 300 + COUNTER[0], kind=kind)
    return tid, name


def later(seconds, fn):
    t = threading.Thread(target=lambda: (time.sleep(seconds), fn()), daemon=True)
    t.start()
    return t


def job_state(job):
    jobs = json.loads(LAB.archctl("job", "list", "--all", "--json")[1])["jobs"]
    return [j for j in jobs if j["id"] == job][0]


def assert_seeding_target(test, tid, name):
    """The archive's end state: the target holds every file verified and seeds it."""
    aq = LAB.qb("archive1")
    flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] not in ("checkingUP", "checkingDL",
                                                                             "checkingResumeData"),
               timeout=60, what="target torrent settled")
    t = aq.info([tid])[0]
    test.assertAlmostEqual(t["progress"], 1.0, msg=t)
    test.assertNotIn(t["state"], ("stoppedUP", "pausedUP", "stoppedDL", "pausedDL", "error", "missingFiles"), t)
    test.assertTrue(all(f["progress"] == 1 for f in aq.files(tid)))
    flows.staging_empty(LAB, LAB.route)


def resume_until_done(test, runs=5, env=None):
    """`archctl resume` until it exits 0; returns how many runs it took."""
    for n in range(1, runs + 1):
        rc, out, err = LAB.archctl("resume", env=env, timeout=300)
        if rc == 0:
            test.assertNotIn("failed", err)
            return n
        test.assertEqual(rc, 10, f"resume run {n}: {err}")
    test.fail(f"resume did not converge in {runs} runs")


class Outages(unittest.TestCase):
    def tearDown(self):
        LAB.lab.start_st("archive1")
        LAB.lab.start_qb("archive1")

    def test_a_syncthing_down_for_seconds_mid_sync_is_waited_out(self):
        for kind in ("v1", "hybrid"):
            with self.subTest(kind=kind):
                tid, name = new_resource(kind)
                release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes")
                LAB.lab.stop_st("archive1")
                restart = later(3, lambda: LAB.lab.start_st("archive1"))
                rc, out, err = release()
                restart.join()
                self.assertEqual(rc, 0, err)
                self.assertIn("waiting:", err)
                self.assertIn("reachable again", err)
                assert_seeding_target(self, tid, name)

    def test_b_an_outage_longer_than_the_wait_stops_with_10_and_resume_finishes(self):
        tid, name = new_resource()
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes",
                                          env={"ARCHCTL_OUTAGE_WAIT": "3s"})
        LAB.lab.stop_st("archive1")
        started = time.monotonic()
        rc, out, err = release()
        self.assertEqual(rc, 10, err)
        self.assertLess(time.monotonic() - started, 60)
        self.assertIn("still unreachable after", err)
        job = flows.job_of(LAB, tid)
        self.assertEqual(job_state(job)["state"], "running")
        # Still down at the next cron run: another clean stop, not a failure.
        rc, out, err = LAB.archctl("resume", env={"ARCHCTL_OUTAGE_WAIT": "2s"}, timeout=120)
        self.assertEqual(rc, 10, err)
        self.assertNotIn("no unfinished jobs", err)
        LAB.lab.start_st("archive1")
        runs = resume_until_done(self)
        print(f"  syncthing down past the wait: archive exit 10, resume runs to converge: {runs}", file=sys.stderr)
        assert_seeding_target(self, tid, name)

    def test_c_qbittorrent_killed_and_restarted_during_verify(self):
        tid, name = new_resource()
        release = flows.archctl_paused_at(LAB, "verify.added", "archive", tid[:12], "--yes")
        LAB.lab.kill_qb("archive1")
        restart = later(3, lambda: LAB.lab.start_qb("archive1"))
        rc, out, err = release()
        restart.join()
        self.assertIn(rc, (0, 10), err)
        runs = 0 if rc == 0 else resume_until_done(self)
        print(f"  qBittorrent killed during verify: archive exit {rc}, resume runs: {runs}", file=sys.stderr)
        assert_seeding_target(self, tid, name)
        job = flows.job_of(LAB, tid)
        self.assertEqual(job_state(job)["state"], "done")

    def test_d_a_cancel_the_down_target_interrupts_is_finished_by_resume(self):
        tid, name = new_resource()
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "verify.added"}, timeout=300)
        self.assertEqual(rc, 137, err)
        job = flows.job_of(LAB, tid)
        LAB.lab.stop_qb("archive1")
        rc, out, err = LAB.archctl("job", "cancel", job, env={"ARCHCTL_OUTAGE_WAIT": "2s"}, timeout=120)
        self.assertEqual(rc, 1, err)
        self.assertIn("not cancelled yet", err)
        self.assertNotIn(f"job {job} cancelled", err)
        row = job_state(job)
        self.assertEqual(row["state"], "compensating", row)
        self.assertIn("archctl resume", row["status"])
        rc, out, err = LAB.archctl("resume", env={"ARCHCTL_OUTAGE_WAIT": "2s"}, timeout=120)
        self.assertEqual(rc, 10, err)
        LAB.lab.start_qb("archive1")
        rc, out, err = LAB.archctl("resume", timeout=300)
        self.assertEqual(rc, 0, err)
        self.assertIn("the job ended cancelled", err)
        self.assertEqual(job_state(job)["state"], "cancelled")
        self.assertEqual(LAB.qb("archive1").info([tid]), [])
        target_root = os.path.join(LAB.node("archive1")["qb_root"], name)
        self.assertEqual(flows.tree(target_root) if os.path.isdir(target_root) else [], [])
        flows.staging_empty(LAB, LAB.route)
        # The resource is free again: the same archive now runs to the end.
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err)
        assert_seeding_target(self, tid, name)

    def test_e_a_job_whose_definition_is_lost_shows_its_staging_and_job_rm_removes_it(self):
        tid, name = new_resource()
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "job.step.stage"}, timeout=300)
        self.assertEqual(rc, 137, err)
        job = flows.job_of(LAB, tid)
        staged = os.path.join(LAB.node("cache1")["sync_root"], LAB.route, job)
        self.assertTrue(os.path.isdir(staged))
        os.unlink(os.path.join(LAB.state_dir, "jobs", job, "definition.json"))
        row = job_state(job)
        self.assertEqual(row["state"], "damaged")
        self.assertIn(staged, row["status"])
        self.assertIn(f"archctl job rm {job}", row["status"])
        rc, out, err = LAB.archctl("resume", timeout=120)
        self.assertEqual(rc, 1, err)
        self.assertIn("damaged", err)
        rc, out, err = LAB.archctl("job", "rm", job, timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertIn("removed the staging", err)
        flows.staging_empty(LAB, LAB.route)
        rc, out, err = LAB.archctl("resume", timeout=120)
        self.assertEqual(rc, 0, err)

    def test_f_ledger_and_events_both_lost_after_the_add_resume_converges(self):
        tid, name = new_resource()
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "verify.added"}, timeout=300)
        self.assertEqual(rc, 137, err)
        job = flows.job_of(LAB, tid)
        for record in ("ledger.json", "events.jsonl"):
            os.unlink(os.path.join(LAB.state_dir, "jobs", job, record))
        runs = resume_until_done(self)
        print(f"  ledger and events lost after the add: resume runs to converge: {runs}", file=sys.stderr)
        assert_seeding_target(self, tid, name)
        self.assertEqual(job_state(job)["state"], "done")


if __name__ == "__main__":
    unittest.main(verbosity=2)
