#!/usr/bin/python3
"""The sync step on real services when Syncthing does not deliver, and what a stop leaves moving:
a paused receiver folder and a full receiver disk end the run with exit 10 naming the cause (not
a silent 0 B/s until --max-minutes) and `resume` converges once it is fixed; after a budget stop
Syncthing's own bytes on the target stand still until the next run, which completes the job.

The archive node's route folder is a tmpfs mounted by this suite (CI runs as root), so that the
disk-full case can shrink it; the suite is skipped, saying why, where mounting is not allowed."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

ROUTE = "archctl-test-waits"
MOUNT = {"path": None, "lab_dir": None}
LAB = None
COUNTER = [0]
BIG = "96m"


def umount():
    """After the lab stopped: its removal of the lab directory stops at the mount point, so the
    rest of the directory goes here."""
    if MOUNT["path"]:
        subprocess.run(["umount", "-l", MOUNT["path"]], capture_output=True)
        MOUNT["path"] = None
    if MOUNT["lab_dir"]:
        shutil.rmtree(MOUNT["lab_dir"], ignore_errors=True)


def setUpModule():
    global LAB
    unittest.addModuleCleanup(umount)  # runs after the lab's own cleanup (LIFO)
    LAB, _ = flows.start_lab([("cache1", "cache"), ("archive1", "archive")])
    if LAB._own_dir and not LAB.keep:  # the lab removes its directory: finish that
        MOUNT["lab_dir"] = LAB.dir
    folder = os.path.join(LAB.node("archive1")["sync_root"], ROUTE)
    os.makedirs(folder, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={BIG}", "archctl-test", folder], capture_output=True, text=True)
    if mounted.returncode != 0:
        raise unittest.SkipTest(f"cannot mount a tmpfs for the route folder: {mounted.stderr.strip()}")
    MOUNT["path"] = folder
    flows.pair_route(LAB, "cache1", "archive1", ROUTE)


def remount(size):
    subprocess.run(["mount", "-o", f"remount,size={size}", MOUNT["path"]], check=True)


def new_resource(layout):
    COUNTER[0] += 1
    name = f"waits-{COUNTER[0]}"
    _, tid, save, _ = flows.seed_resource(LAB, name, layout, 300 + COUNTER[0])
    return tid, name


def job_bytes_on_target(job):
    """Bytes Syncthing has written for the job on the target: allocated blocks of every file in
    the job's directory, its temp files included (they are sparse until written)."""
    total = 0
    for dirpath, _, files in os.walk(os.path.join(MOUNT["path"], job)):
        for f in files:
            try:
                total += os.stat(os.path.join(dirpath, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def target_complete(tid):
    t = LAB.qb("archive1").info([tid])
    return bool(t) and all(f["progress"] == 1 for f in LAB.qb("archive1").files(tid))


def last_error_line(err):
    lines = [line for line in err.splitlines() if "archctl:" in line]
    return lines[-1] if lines else err.strip()[-200:]


class SlowIntoArchive:
    """2 MiB/s into the archive node while active, so that a stop comes while most of a job is
    still to be carried (loopback counts as LAN, unlimited unless limitBandwidthInLan)."""

    def __enter__(self):
        self.st = LAB.st("archive1")
        self.cache_id = LAB.st("cache1").my_id()
        self.st.request("PATCH", "config/options", {"limitBandwidthInLan": True})
        self.st.request("PATCH", f"config/devices/{self.cache_id}", {"maxRecvKbps": 2000})
        return self

    def __exit__(self, *exc):
        self.st.request("PATCH", f"config/devices/{self.cache_id}", {"maxRecvKbps": 0})
        self.st.request("PATCH", "config/options", {"limitBandwidthInLan": False})


def ignores_of_target():
    return LAB.st("archive1").get("db/ignores", folder=ROUTE).get("ignore") or []


def archive_paused_at_stage(tid, *args):
    """Start `archive` paused where stage created the job's directory; returns (job, release)."""
    release = flows.archctl_paused_at(LAB, "stage.job_dir", "archive", tid[:12], "--yes", "--json", *args)
    return flows.job_of(LAB, tid), release


class SyncWaits(unittest.TestCase):
    def test_a_a_paused_receiver_folder_is_a_named_wait_and_resume_converges(self):
        tid, name = new_resource({"pay/a.bin": 3 * 1024 * 1024, "pay/b.txt": 100})
        job, release = archive_paused_at_stage(tid)
        flows.pause_folder(LAB, "archive1", ROUTE, True)
        started = time.monotonic()
        try:
            rc, out, err = release()
        finally:
            flows.pause_folder(LAB, "archive1", ROUTE, False)
        took = time.monotonic() - started
        self.assertEqual(rc, 10, err)
        self.assertIn("waiting for Syncthing on 'archive1': folder paused", err)
        self.assertLess(took, 90, "the stall limit ends the wait, not --max-minutes")
        print(f"  paused: exit 10 after {took:.0f} s: {last_error_line(err)}", file=sys.stderr)
        doc = json.loads(out)
        self.assertIn("folder paused", json.dumps(doc))
        with open(os.path.join(LAB.state_dir, "jobs", job, "ledger.json")) as f:
            ledger = json.load(f)
        self.assertEqual(ledger["sessions"][-1]["end_reason"], "waiting")
        self.resume_completes(tid, job)

    def test_b_a_full_receiver_disk_is_a_named_wait_and_resume_converges(self):
        tid, name = new_resource({"pay/big.bin": 12 * 1024 * 1024})
        job, release = archive_paused_at_stage(tid)
        remount("4m")
        try:
            rc, out, err = release()
            self.assertEqual(rc, 10, err)
            self.assertIn("waiting for Syncthing on 'archive1': receiver out of disk space", err)
            print(f"  disk full: exit 10: {last_error_line(err)}", file=sys.stderr)
        finally:
            remount(BIG)
        self.resume_completes(tid, job)

    def assert_nothing_moves(self, job, what):
        """The job holds on the target, and Syncthing's bytes of it stand still for 10 s."""
        self.assertTrue(any(line.startswith(f"// archctl hold {job}:") for line in ignores_of_target()), ignores_of_target())
        time.sleep(1.0)
        before = job_bytes_on_target(job)
        self.assertLess(before, 20 * 1024 * 1024, "the stop came too late to measure anything")
        samples = []
        for _ in range(10):
            time.sleep(1.0)
            samples.append(job_bytes_on_target(job))
        self.assertEqual(samples, [before] * 10, f"Syncthing went on carrying the stopped job: {before} then {samples}")
        self.assertFalse(LAB.st("archive1").get("config/folders/" + ROUTE)["paused"], "the hold leaves the route folder running")
        rc, out, err = LAB.archctl("route", "check", ROUTE, "--json", timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertTrue(json.loads(out)["check"]["ok"], "a hold is not route breakage")
        print(f"  {what}: {before} bytes of the job on the target, unchanged for 10 s", file=sys.stderr)

    def resume_completes(self, tid, job):
        rc, out, err = LAB.archctl("resume", timeout=300)
        self.assertEqual(rc, 0, err)
        self.assertTrue(target_complete(tid))
        self.assertFalse(any(job in line for line in ignores_of_target()), ignores_of_target())
        flows.staging_empty(LAB, ROUTE)

    def test_c_after_a_budget_stop_no_byte_of_the_job_moves_until_resume(self):
        with SlowIntoArchive():
            tid, name = new_resource({f"pay/f{i}.bin": 3 * 1024 * 1024 for i in range(8)})
            rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--max-bytes", "6M", timeout=300)
            self.assertEqual(rc, 10, err)
            self.assertIn("budget reached", err)
            job = flows.job_of(LAB, tid)
            self.assert_nothing_moves(job, "budget stop")
        self.resume_completes(tid, job)

    def test_d_the_floor_counts_what_syncthing_will_still_write_and_holds_it(self):
        # The route folder has ~96 MiB free; the job's 24 MiB would leave ~72 MiB, below a
        # 80 MiB floor, although the free space is above the floor when the sync step starts.
        with SlowIntoArchive():
            tid, name = new_resource({f"pay/f{i}.bin": 3 * 1024 * 1024 for i in range(8)})
            rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--min-free", "80M", timeout=300)
            self.assertEqual(rc, 10, err)
            self.assertIn("would fall below the floor", err)
            job = flows.job_of(LAB, tid)
            self.assert_nothing_moves(job, "floor stop")
        rc, out, err = LAB.archctl("resume", "--min-free", "0", timeout=300)
        self.assertEqual(rc, 0, err)
        self.assertTrue(target_complete(tid))
        self.assertFalse(any(job in line for line in ignores_of_target()), ignores_of_target())
        flows.staging_empty(LAB, ROUTE)

    def test_e_after_a_ctrl_c_stop_no_byte_of_the_job_moves_until_resume(self):
        with SlowIntoArchive():
            tid, name = new_resource({f"pay/f{i}.bin": 3 * 1024 * 1024 for i in range(8)})
            argv, env = LAB.archctl_command("archive", tid[:12], "--yes")
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    stdin=subprocess.DEVNULL)
            job = flows.wait(lambda: (lambda jobs: jobs[-1]["id"] if jobs else None)(
                [j for j in json.loads(LAB.archctl("job", "list", "--all", "--json")[1])["jobs"] if j["resource"] == tid]),
                what="the job exists")
            flows.wait(lambda: job_bytes_on_target(job) >= 3 * 1024 * 1024, timeout=60, what="the first bytes on the target")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 10, err)
            self.assertIn("interrupted", err)
            self.assert_nothing_moves(job, "Ctrl-C stop")
        self.resume_completes(tid, job)


if __name__ == "__main__":
    unittest.main(verbosity=2)
