#!/usr/bin/python3
"""Stale external state within one run, on real services: the run is paused between two steps
(ARCHCTL_TEST_PAUSE_AT), the source or the target is changed, and the run continues. Before the
commit every change is an explicit STALE_STATE failure with compensation (nothing committed, the
files the job placed removed, staging gone, reservation released, source intact); after the
commit a changed source does not undo it. Also a --max-minutes deadline that hits while the
engine waits on Syncthing (the target's folder paused), then resume."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
LAYOUT = {"pay/a.bin": 2 * 1024 * 1024 + 5, "pay/sub/b.bin": 300000, "pay/c.txt": 12}
COUNTER = [0]


def new_resource(kind="hybrid"):
    COUNTER[0] += 1
    name = f"stale-{COUNTER[0]}"
    _, tid, save, _ = flows.seed_resource(LAB, name, LAYOUT, 300 + COUNTER[0], kind=kind)
    return tid, name, save


def cache_stats(save):
    return {rel: flows.stat_of(os.path.join(save, rel)) for rel in LAYOUT}


def target_files(name):
    root = os.path.join(LAB.node("archive1")["qb_root"], name)
    if not os.path.isdir(root):
        return []
    return [p for p in flows.tree(root) if os.path.isfile(os.path.join(root, p))]


class StaleBeforeCommit(unittest.TestCase):
    def assert_compensated(self, tid, name, rc, out, err):
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "STALE_STATE", doc)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing may be committed")
        self.assertEqual(target_files(name), [], "the files this job placed must be removed")
        flows.staging_empty(LAB, LAB.route)
        job = flows.job_of(LAB, tid)
        with open(os.path.join(LAB.state_dir, "jobs", job, "ledger.json")) as f:
            ledger = json.load(f)
        self.assertEqual(ledger["state"], "failed")
        self.assertEqual(os.listdir(os.path.join(LAB.state_dir, "reservations")), [], "the reservation is released")

    def test_a_source_file_deselected_between_stage_and_sync(self):
        tid, name, save = new_resource()
        before = cache_stats(save)
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes", "--json")
        LAB.qb("cache1").file_prio(tid, [1], 0)
        flows.wait(lambda: LAB.qb("cache1").files(tid)[1]["priority"] == 0, what="source deselected")
        rc, out, err = release()
        self.assert_compensated(tid, name, rc, out, err)
        self.assertIn("source placement", json.loads(out)["error"]["message"])
        self.assertEqual(cache_stats(save), before, "the source files are untouched")
        LAB.qb("cache1").file_prio(tid, [1], 1)
        # With the source as planned again, a new job on the resource runs to the end.
        flows.wait(lambda: all(f["progress"] == 1 for f in LAB.qb("cache1").files(tid)), what="source complete again")
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)

    def test_b_source_torrent_removed_between_sync_and_merge(self):
        tid, name, save = new_resource()
        before = cache_stats(save)
        release = flows.archctl_paused_at(LAB, "job.step.sync", "archive", tid[:12], "--yes", "--json")
        LAB.qb("cache1").delete(tid, delete_files=False)
        flows.wait(lambda: LAB.qb("cache1").info([tid]) == [], what="source torrent removed")
        rc, out, err = release()
        self.assert_compensated(tid, name, rc, out, err)
        self.assertIn("is gone", json.loads(out)["error"]["message"])
        self.assertEqual(cache_stats(save), before, "the source files are untouched")

    def test_c_source_moved_between_merge_and_verify(self):
        tid, name, save = new_resource()
        release = flows.archctl_paused_at(LAB, "job.step.merge", "archive", tid[:12], "--yes", "--json")
        self.assertEqual(len(target_files(name)), len(LAYOUT), "merge placed the files")
        moved = save + "-moved"
        os.makedirs(moved, exist_ok=True)
        flows.set_location(LAB, "cache1", tid, moved)
        flows.wait(lambda: LAB.qb("cache1").info([tid])[0]["save_path"].rstrip("/") == moved, what="source moved")
        rc, out, err = release()
        self.assert_compensated(tid, name, rc, out, err)
        self.assertIn("moved", json.loads(out)["error"]["message"])
        flows.wait(lambda: all(f["progress"] == 1 for f in LAB.qb("cache1").files(tid)), what="source complete after the move")

    def test_d_existing_target_changed_between_sync_and_merge(self):
        tid, name, save = new_resource()
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        disk_before = sorted(target_files(name))
        release = flows.archctl_paused_at(LAB, "job.step.sync", "archive", tid[:12], "--yes", "--json")
        aq = LAB.qb("archive1")
        aq.file_prio(tid, [0], 0)  # someone deselects the file the target holds
        flows.wait(lambda: aq.files(tid)[0]["priority"] == 0, what="target deselected")
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "STALE_STATE", doc)
        self.assertIn("target placement", doc["error"]["message"])
        self.assertEqual(sorted(target_files(name)), disk_before, "no file of the job is left in the target")
        self.assertTrue(os.path.isfile(os.path.join(target_save, "pay/a.bin")), "the pre-existing file stays")
        flows.staging_empty(LAB, LAB.route)
        self.assertEqual(os.listdir(os.path.join(LAB.state_dir, "reservations")), [])
        aq.file_prio(tid, [0], 1)


class AfterCommit(unittest.TestCase):
    def test_a_source_changed_after_commit_keeps_the_commit(self):
        tid, name, save = new_resource()
        release = flows.archctl_paused_at(LAB, "verify.committed", "archive", tid[:12], "--yes", "--json")
        LAB.qb("cache1").file_prio(tid, [1], 0)
        rc, out, err = release()
        self.assertEqual(rc, 0, err + out)
        files = LAB.qb("archive1").files(tid)
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in files), files)
        self.assertEqual(len(target_files(name)), len(LAYOUT))
        flows.staging_empty(LAB, LAB.route)
        LAB.qb("cache1").file_prio(tid, [1], 1)


class Deadline(unittest.TestCase):
    def test_a_deadline_while_waiting_on_syncthing_then_resume(self):
        tid, name, save = new_resource()
        # Stage runs, then the target's Syncthing stops receiving: the engine waits in sync
        # until the deadline (12 s into the run) stops it cleanly.
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes", "--max-minutes", "0.2",
                                          "--json")
        flows.pause_folder(LAB, "archive1", LAB.route, True)
        try:
            released = time.monotonic()
            rc, out, err = release()
            waited = time.monotonic() - released
        finally:
            flows.pause_folder(LAB, "archive1", LAB.route, False)
        self.assertEqual(rc, 10, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["job"]["stop_reason"], "deadline")
        self.assertEqual(doc["job"]["step"], "sync")
        self.assertIn("deadline reached", err)
        self.assertIn("hint: rerun", err)
        self.assertGreater(waited, 5, "the stop came from the sync wait, not a step boundary")
        self.assertEqual(LAB.qb("archive1").info([tid]), [])
        flows.wait(lambda: LAB.st("archive1").db_status(LAB.route)["state"] in ("idle", "syncing", "sync-preparing", "scanning"),
                   what="target folder running again")
        rc, out, err = LAB.archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        files = LAB.qb("archive1").files(tid)
        self.assertTrue(all(f["progress"] == 1 for f in files), files)
        flows.staging_empty(LAB, LAB.route)


if __name__ == "__main__":
    unittest.main(verbosity=2)
