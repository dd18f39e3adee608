#!/usr/bin/python3
"""The free-space floor holds in a merge across filesystems, on real services: the archive node's
save path is a small loop-mounted ext4 (the sync root stays on the lab's own filesystem), so
merge must copy every file. A merge that would take the small filesystem below --min-free
stops cleanly (exit 10, reason and numbers said), leaves no temp file and nothing half-written
in the torrent folder, and `archctl resume` finishes once there is room again."""

import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

MIB = 1024 * 1024
IMAGE_SIZE = 32 * MIB
FLOOR = 8 * MIB
LAYOUT = {"pay/a.bin": 6 * MIB + 11, "pay/b.bin": 1 * MIB + 3}


def loop_mount_unavailable():
    """Why this machine cannot loop-mount a filesystem here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root to loop-mount a filesystem"
    if not shutil.which("mkfs.ext4"):
        return "mkfs.ext4 is not installed (e2fsprogs)"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices (/dev/loop-control is missing)"
    return None


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def files_below(root):
    """Every regular file below root, relative, except ext4's lost+found."""
    return [p for p in flows.tree(root) if os.path.isfile(os.path.join(root, p)) and not p.startswith("lost+found")]


class MergeFloor(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = loop_mount_unavailable()
        if why:
            raise unittest.SkipTest(f"merge floor on a small filesystem not tested: {why}")
        cls.lab = flows.class_lab(cls, nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
        cls.route = "archctl-test-route"

    def mount_small_fs(self, mountpoint):
        image = os.path.join(self.lab.dir, "small-fs.img")
        with open(image, "wb") as f:
            f.truncate(IMAGE_SIZE)
        self.addCleanup(lambda: os.path.exists(image) and os.remove(image))
        made = run("mkfs.ext4", "-q", "-m", "0", "-F", image)
        self.assertEqual(made.returncode, 0, made.stderr)
        os.makedirs(mountpoint, exist_ok=True)
        mounted = run("mount", "-o", "loop", image, mountpoint)
        if mounted.returncode != 0:
            self.skipTest(f"merge floor on a small filesystem not tested: mount -o loop failed: {mounted.stderr.strip()}")
        self.addCleanup(lambda: run("umount", "-l", mountpoint))
        os.rmdir(os.path.join(mountpoint, "lost+found"))

    def test_a_merge_stops_at_the_floor_and_resume_finishes(self):
        lab, name = self.lab, "floor-1"
        save_target = os.path.join(lab.node("archive1")["qb_root"], name)  # the new target's save path
        self.mount_small_fs(save_target)
        _, tid, _, _ = flows.seed_resource(lab, name, LAYOUT, 71)
        # Pause right after sync (every file received in the route folder, on the big filesystem),
        # then let something else take the small filesystem's space: a.bin no longer fits above
        # the floor, though the floor itself is not crossed yet.
        release = flows.archctl_paused_at(lab, "job.step.sync", "archive", tid[:12], "--yes", "--min-free", str(FLOOR))
        filler = os.path.join(save_target, "filler.bin")
        with open(filler, "wb") as f:
            f.write(b"\0" * (free_bytes(save_target) - FLOOR - 3 * MIB))
            f.flush()
            os.fsync(f.fileno())
        rc, out, err = release()
        self.assertEqual(rc, 10, err)
        self.assertIn("free-space floor", err)
        self.assertIn("8.0 MiB", err)
        self.assertIn("hint:", err)
        # Nothing half-written and no temp file in the torrent folder; the received files wait.
        self.assertEqual(files_below(save_target), ["filler.bin"])
        job = flows.job_of(lab, tid)
        received = os.path.join(lab.node("archive1")["sync_root"], self.route, job, "p", "0")  # the shard of files 0-999
        self.assertEqual(sorted(os.listdir(received)), ["0", "1"])
        shown = json.loads(lab.archctl("job", "show", job, "--json")[1])
        self.assertEqual(shown["ledger"]["step"], "merge")
        self.assertEqual(shown["ledger"]["sessions"][-1]["end_reason"], "disk")

        # Still no room: the next run stops the same clean way.
        rc, out, err = lab.archctl("resume", "--min-free", str(FLOOR), timeout=300)
        self.assertEqual(rc, 10, err)
        self.assertEqual(files_below(save_target), ["filler.bin"])

        # Room again: resume finishes, and the target seeds what the cache has.
        os.remove(filler)
        rc, out, err = lab.archctl("resume", "--min-free", str(FLOOR), timeout=300)
        self.assertEqual(rc, 0, err)
        aq = lab.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
        self.assertTrue(all(f["progress"] == 1 for f in aq.files(tid)))
        self.assertEqual(files_below(save_target), ["pay/a.bin", "pay/b.bin"])
        for rel, size in LAYOUT.items():
            self.assertEqual(os.path.getsize(os.path.join(save_target, rel)), size)
        flows.staging_empty(lab, self.route)
        # The torrent is removed from qB before the filesystem under it goes away.
        aq.post("torrents/delete", hashes=tid, deleteFiles="false")
        flows.wait(lambda: not aq.info([tid]), what="target torrent removed")

    def test_b_a_full_filesystem_without_a_floor_is_the_same_clean_stop(self):
        lab, name = self.lab, "floor-2"
        save_target = os.path.join(lab.node("archive1")["qb_root"], name)
        self.mount_small_fs(save_target)
        _, tid, _, _ = flows.seed_resource(lab, name, LAYOUT, 72)
        release = flows.archctl_paused_at(lab, "job.step.sync", "archive", tid[:12], "--yes", "--min-free", "0")
        filler = os.path.join(save_target, "filler.bin")
        with open(filler, "wb") as f:  # 3 MiB left: a.bin's copy runs into a full disk
            f.write(b"\0" * (free_bytes(save_target) - 3 * MIB))
            f.flush()
            os.fsync(f.fileno())
        rc, out, err = release()
        self.assertEqual(rc, 10, err)
        self.assertIn("is full", err)
        self.assertEqual(files_below(save_target), ["filler.bin"], "the partial copy must be gone")
        os.remove(filler)
        rc, out, err = lab.archctl("resume", "--min-free", "0", timeout=300)
        self.assertEqual(rc, 0, err)
        aq = lab.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
        self.assertEqual(files_below(save_target), ["pay/a.bin", "pay/b.bin"])
        flows.staging_empty(lab, self.route)
        aq.post("torrents/delete", hashes=tid, deleteFiles="false")
        flows.wait(lambda: not aq.info([tid]), what="target torrent removed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
