#!/usr/bin/python3
"""Merging into an existing target that then fails before the commit, on real services: the
target's baseline (selection, per-file progress, run state, save path, tags, the files on disk
and the part file) is recorded before the job touches it, and compensation restores exactly
that. A hybrid target, and a v1 target whose skipped middle file lives in its part file."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")],
                     extra_qb=1)
setUpModule = LAB.set_up
# docs/torrent-format.md "The three-file v1 torrent": piece 6 holds a|b, piece 9 holds b|c, pieces 7–8 only b.
V1_LAYOUT = {"pay1/a.bin": 100001, "pay1/b.bin": 50001, "pay1/c.bin": 70001}
HYBRID_LAYOUT = {"pay/a.bin": 2 * 1024 * 1024 + 5, "pay/sub/b.bin": 300000, "pay/c.txt": 12}


def flip_received(job, index, offset):
    """One byte of a received job file on the target, flipped before merge."""
    received = flows.staged_path(os.path.join(LAB.node("archive1")["sync_root"], LAB.route, job), index)
    with open(received, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def settled_snapshot(tid, save):
    aq = LAB.qb("archive1")
    flows.wait(lambda: not aq.info([tid])[0]["state"].startswith("checking"), what="target settled")
    return flows.placement_snapshot(LAB, "archive1", tid, save)


class ExistingTarget(unittest.TestCase):
    def fail_and_compare(self, tid, name, files, index, offset):
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        before = settled_snapshot(tid, target_save)
        self.assertTrue(before["present"])
        release = flows.archctl_paused_at(LAB, "job.step.sync", "archive", tid[:12], "--files", files, "--yes", "--json")
        flip_received(flows.job_of(LAB, tid), index, offset)
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        self.assertIn("VERIFY_FAILED", out)
        self.assertNotIn("compensation incomplete", err)
        after = settled_snapshot(tid, target_save)
        self.assertEqual(after, before, "the target is exactly as before")
        jobs_dir = os.path.join(LAB.state_dir, "jobs", flows.job_of(LAB, tid))
        with open(os.path.join(jobs_dir, "events.jsonl")) as f:
            events = [json.loads(line).get("type") for line in f if line.strip()]
        self.assertIn("baseline_recorded", events)
        self.assertIn("baseline_restored", events)
        print(f"  compensation: {[e for e in events if e in ('unmerged', 'partfile_restored', 'partfile_removed', 'baseline_restored')]}",
              file=sys.stderr)
        archctl_dir = os.path.join(LAB.node("archive1")["qb_root"], ".archctl")
        leftovers = [n for n in os.listdir(archctl_dir) if n.startswith("baseline-")] if os.path.isdir(archctl_dir) else []
        self.assertEqual(leftovers, [], "the job's copy of the baseline part file is dropped")
        return before

    def test_a_hybrid_target_restored_after_a_failed_merge(self):
        name = "exist-hybrid"
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        flows.write_payload(save, HYBRID_LAYOUT, seed=401)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        flows.create_torrent(os.path.join(save, "pay"), tfile, kind="hybrid", piece_length=32768)
        tid = flows.seed_cache(LAB, "cache1", tfile, save)
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        big = max((f for f in LAB.qb("cache1").files(tid) if f["index"] != 0), key=lambda f: f["size"])
        before = self.fail_and_compare(tid, name, "1-2", big["index"], 1000)
        self.assertTrue(before["running"], "the target was seeding before and after")
        self.assertFalse(any(n.startswith(f".{tid}.parts") for n in before["disk"]))
        # The same delta without the corruption commits.
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "1-2", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in LAB.qb("archive1").files(tid)))

    def test_b_v1_target_with_a_part_file_restored_after_a_failed_merge(self):
        # A genuine partial copy: the seeder has everything, the cache downloads a.bin and c.bin.
        name = "exist-v1"
        seeder = LAB.info["extra_qb"][0]
        src = os.path.join(seeder["save_path"], name)
        flows.write_payload(src, V1_LAYOUT, seed=402)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        flows.create_torrent(os.path.join(src, "pay1"), tfile, kind="v1", piece_length=16384)
        tid = flows.seed_cache(LAB, "extra1", tfile, src)
        LAB.qb("extra1").resume(tid)
        cq = LAB.qb("cache1")
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        os.makedirs(save, exist_ok=True)
        with open(tfile, "rb") as f:
            cq.add_torrent(f.read(), save, paused=True)
        flows.wait(lambda: cq.info([tid]), what="cache lists the torrent")
        cq.file_prio(tid, [1], 0)
        cq.resume(tid)
        cq.add_peers(tid, [f"127.0.0.1:{seeder['bt_port']}"])
        flows.wait(lambda: (lambda fs: fs and fs[0]["progress"] == 1 and fs[2]["progress"] == 1)(cq.files(tid)),
                   timeout=60, what="cache downloaded a.bin and c.bin")
        cq.pause(tid)
        flows.wait(lambda: cq.info([tid])[0]["state"] == "pausedUP", what="cache paused")
        # The archive holds a.bin and c.bin, and b.bin's boundary bytes in its part file.
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        self.assertTrue(os.path.exists(os.path.join(target_save, f".{tid}.parts")))
        # The cache completes b.bin; archiving it into the existing target fails on a flipped byte
        # in piece 7 (b.bin only).
        cq.file_prio(tid, [1], 1)
        cq.resume(tid)
        cq.add_peers(tid, [f"127.0.0.1:{seeder['bt_port']}"])
        flows.wait(lambda: all(f["progress"] == 1 for f in cq.files(tid)), timeout=60, what="cache downloaded b.bin")
        cq.pause(tid)
        LAB.qb("extra1").pause(tid)
        flows.wait(lambda: cq.info([tid])[0]["state"] == "pausedUP", what="cache paused")
        before = self.fail_and_compare(tid, name, "1", 1, 20000)
        self.assertIn(f".{tid}.parts", before["disk"], "the part file is part of what is compared")
        self.assertNotIn("pay1/b.bin", before["disk"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
