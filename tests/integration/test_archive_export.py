#!/usr/bin/python3
"""One export per job, on real services: qBittorrent's torrents/export costs seconds for a large
hybrid torrent, so `archive --yes` asks for it once (while planning) and the run uses the copy
kept in the job's directory (resource.torrent). A run that finds that copy missing or damaged
(a job from before, a crash) exports it again, once, keeps it again and finishes; an intact copy
is used as it is. Counted from the -vv request log."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
LAYOUT = {"pay/a.bin": 1024 * 1024 + 7, "pay/sub/b.bin": 200000, "pay/c.txt": 12}
COUNTER = [0]


def new_resource():
    COUNTER[0] += 1
    name = f"export-{COUNTER[0]}"
    _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 700 + COUNTER[0])
    return tid, tfile


def exports(err):
    return sum(1 for line in err.splitlines() if "/api/v2/torrents/export" in line)


def kept_copy(tid):
    return os.path.join(LAB.state_dir, "jobs", flows.job_of(LAB, tid), "resource.torrent")


def crashed_after_stage(tid):
    rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "job.step.stage"}, timeout=300)
    assert rc == 137, err + out
    assert exports(err) == 1, err


class ExportOnce(unittest.TestCase):
    def test_a_archive_exports_once(self):
        tid, tfile = new_resource()
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(exports(err), 1, err)
        with open(kept_copy(tid), "rb") as kept, open(tfile, "rb") as added:
            self.assertEqual(kept.read(), added.read(), "the job keeps the exported torrent")

    def test_b_resume_uses_the_kept_copy(self):
        tid, _ = new_resource()
        crashed_after_stage(tid)
        rc, out, err = LAB.archctl("-vv", "resume", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(exports(err), 0, err)
        self.assertEqual(len(LAB.qb("archive1").info([tid])), 1)

    def test_c_a_damaged_copy_is_exported_again(self):
        tid, tfile = new_resource()
        crashed_after_stage(tid)
        with open(kept_copy(tid), "wb") as f:
            f.write(b"d4:infoi1e")  # truncated bencode
        rc, out, err = LAB.archctl("-vv", "resume", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(exports(err), 1, err)
        self.assertIn("exporting the torrent from 'cache1' again", err)
        with open(kept_copy(tid), "rb") as kept, open(tfile, "rb") as added:
            self.assertEqual(kept.read(), added.read(), "the copy is kept again")
        self.assertEqual(len(LAB.qb("archive1").info([tid])), 1)

    def test_d_a_missing_copy_is_exported_again(self):
        tid, tfile = new_resource()
        crashed_after_stage(tid)
        os.unlink(kept_copy(tid))
        rc, out, err = LAB.archctl("-vv", "resume", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(exports(err), 1, err)
        self.assertTrue(os.path.exists(kept_copy(tid)))
        self.assertEqual(len(LAB.qb("archive1").info([tid])), 1)

    def test_e_another_torrents_copy_is_replaced(self):
        other, other_file = new_resource()
        tid, tfile = new_resource()
        crashed_after_stage(tid)
        with open(other_file, "rb") as src, open(kept_copy(tid), "wb") as dst:
            dst.write(src.read())
        rc, out, err = LAB.archctl("-vv", "resume", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(exports(err), 1, err)
        self.assertIn("is another torrent", err)
        with open(kept_copy(tid), "rb") as kept, open(tfile, "rb") as added:
            self.assertEqual(kept.read(), added.read())
        self.assertEqual(LAB.qb("archive1").info([other]), [], "the other torrent is never added")


if __name__ == "__main__":
    unittest.main()
