#!/usr/bin/python3
"""The exec transport over a real sshd: the archive node is reached as `ssh ... archctl node
serve --root ...` through an sshd this suite starts on 127.0.0.1 (its own host key, config and
authorized key). An archive over ssh completes; a killed ssh child, a Ctrl-C, an endpoint that
never answers and an sshd that is down are each a bounded stop that `resume` finishes — never
a hang, never a permanent failure."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab.lab import _children as children  # noqa: E402
from lab.sshd import Sshd  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
SMALL = {"pay/a.bin": 600 * 1024 + 3, "pay/sub/b.bin": 70000, "pay/c.txt": 12}
SLOW = {"pay/big.bin": 4 * 1024 * 1024 + 11, "pay/d.txt": 40}  # ~4 s at the suite's rate limit
RATE_KIB = 1024  # cache1's Syncthing send limit while a test interrupts a sync
COUNTER = [0]
SSHD = None
SKIP = None


def setUpModule():
    global SSHD, SKIP
    LAB.set_up()
    SSHD = Sshd(os.path.join(LAB.dir, "sshd"))
    unittest.addModuleCleanup(SSHD.stop)
    SKIP = SSHD.prepare()


def proc_info(pid):
    """(comm, state) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.find("(") + 1:text.rfind(")")], text[text.rfind(")") + 2:].split()[0]


def ssh_children(pid):
    return [c for c in children(pid) if (proc_info(c) or ("", ""))[0] == "ssh"]


def config(timeout=None, command=None):
    """A config file where archive1 is reached over the suite's sshd."""
    node = LAB.node("archive1")
    command = command or [os.environ["ARCHCTL_BIN"], "node", "serve", "--root", node["qb_root"], "--root", node["sync_root"]]
    text = LAB.lab.config_text(node_exec={"archive1": SSHD.ssh() + command},
                               node_timeout={"archive1": timeout} if timeout else None)
    COUNTER[0] += 1
    path = os.path.join(LAB.dir, f"ssh-{COUNTER[0]}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def new_resource(layout=SMALL):
    COUNTER[0] += 1
    name = f"ssh-{COUNTER[0]}"
    _, tid, save, _ = flows.seed_resource(LAB, name, layout, 300 + COUNTER[0])
    return tid, name


def seeding_target(test, tid):
    aq = LAB.qb("archive1")
    flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), timeout=60,
               what="target seeding")
    test.assertTrue(all(f["progress"] == 1 for f in aq.files(tid)))


def limit_send(kib):
    """cache1's Syncthing sends at most `kib` KiB/s, also on the LAN (0: no limit)."""
    LAB.st("cache1").request("PATCH", "config/options", {"maxSendKbps": kib, "limitBandwidthInLan": kib > 0})


def start(cfg, *args):
    argv, env = LAB.lab.archctl_command(*args, config=cfg)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=env)


def wait_for_sync_to_begin(proc):
    """Until bytes of a job arrive in archive1's route folder (the job is in its sync step)."""
    folder = os.path.join(LAB.node("archive1")["sync_root"], LAB.route)

    def arriving():
        if proc.poll() is not None:
            return True
        return any(not p.startswith(".") for p in flows.tree(folder))
    flows.wait(arriving, timeout=120, what="the sync to begin", interval=0.05)
    if proc.poll() is not None:
        out, err = proc.communicate()
        raise AssertionError(f"archctl ended (rc {proc.returncode}) before the sync began: {err}{out}")


def resume_until_done(test, cfg, runs=5):
    """`archctl resume` and nothing else, each run exit 0 or 10, until one exits 0."""
    codes = []
    test.resume_output = []  # what each run said, for an assertion about the codes
    for _ in range(runs):
        rc, out, err = LAB.archctl("resume", config=cfg, timeout=300)
        codes.append(rc)
        test.resume_output.append(err + out)
        test.assertIn(rc, (0, 10), f"resume: {err}{out}")
        if rc == 0:
            return codes
    test.fail(f"resume did not converge in {runs} runs: exit codes {codes}")


class Ssh(unittest.TestCase):
    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)
        if SSHD.proc is None or SSHD.proc.poll() is not None:
            self.assertTrue(SSHD.start(), SSHD.log_tail())

    def test_a_archive_over_ssh_completes(self):
        tid, name = new_resource()
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", config=config(), timeout=300)
        self.assertEqual(rc, 0, err)
        seeding_target(self, tid)
        flows.staging_empty(LAB, LAB.route)

    def test_b_ssh_killed_mid_sync_then_resume_converges(self):
        tid, name = new_resource(SLOW)
        cfg = config()
        limit_send(RATE_KIB)
        self.addCleanup(limit_send, 0)
        proc = start(cfg, "archive", tid[:12], "--yes")
        try:
            wait_for_sync_to_begin(proc)
            killed = ssh_children(proc.pid)
            self.assertTrue(killed, "archctl has no ssh child while it syncs to archive1")
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
            # The dead ssh is reaped at once, whether or not the run goes on.
            time.sleep(2)
            zombies = [c for c in ssh_children(proc.pid) if (proc_info(c) or ("", ""))[1] == "Z"]
            self.assertEqual(zombies, [], "a killed ssh stays <defunct>")
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertIn(proc.returncode, (0, 10), err)
        limit_send(0)
        if proc.returncode == 10:
            resume_until_done(self, cfg)
        seeding_target(self, tid)
        self.assertEqual([p for p in killed if (proc_info(p) or ("", ""))[1] == "Z"], [])

    def test_c_ctrl_c_mid_sync_stops_within_5s_and_frees_the_lock(self):
        tid, name = new_resource(SLOW)
        cfg = config()
        limit_send(RATE_KIB)
        self.addCleanup(limit_send, 0)
        proc = start(cfg, "archive", tid[:12], "--yes")
        try:
            wait_for_sync_to_begin(proc)
            self.assertTrue(ssh_children(proc.pid), "archctl has no ssh child while it syncs to archive1")
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 10, err)
        self.assertLess(took, 5.0, f"Ctrl-C took {took:.1f}s to stop the run")
        self.assertIn("hint:", err)
        limit_send(0)
        codes = resume_until_done(self, cfg)
        self.assertEqual(codes[0], 0, "the first resume after a Ctrl-C finishes (the job lock was free): "
                         + self.resume_output[0])
        seeding_target(self, tid)

    def test_d_an_endpoint_that_never_answers_is_a_bounded_error(self):
        tid, name = new_resource()
        cfg = config(timeout="3s", command=["sleep", "60"])
        begun = time.monotonic()
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], config=cfg, timeout=60)
        took = time.monotonic() - begun
        self.assertEqual(rc, 1, err)
        self.assertLess(took, 12, f"the unanswered node cost {took:.1f}s")
        errors = [line for line in err.splitlines() if line.startswith("archctl: error:")]
        self.assertEqual(len(errors), 1, err)
        self.assertIn("'archive1'", errors[0])
        self.assertIn("did not answer for 3s", errors[0])
        self.assertIn("nodes.archive1.timeout", errors[0])
        # ... and the far end it gave up on is gone: no sleeping ssh left behind.
        time.sleep(0.5)
        leftover = subprocess.run(["pgrep", "-f", f"-p {SSHD.port} .* sleep 60"], capture_output=True, text=True)
        self.assertEqual(leftover.stdout.strip(), "", "the ssh of a timed-out call still runs")

    def test_d2_a_bad_timeout_is_a_one_line_config_error(self):
        cfg = config(timeout="soon")
        rc, out, err = LAB.archctl("config", config=cfg)
        self.assertEqual(rc, 1, err)
        errors = [line for line in err.splitlines() if line.startswith("archctl: error:")]
        self.assertEqual(len(errors), 1, err)
        self.assertIn("nodes.archive1.timeout", errors[0])
        self.assertIn("expected a duration", errors[0])

    def test_f_a_long_silent_operation_is_kept_alive_past_the_timeout(self):
        # The node's merge stops for 5 s at its first placed file (a test pause on the far end),
        # with a 2 s timeout: `node serve` keeps the call alive with keepalive lines.
        tid, name = new_resource()
        node = LAB.node("archive1")
        gate = os.path.join(LAB.dir, f"merge-gate-{COUNTER[0]}")
        serve = ["env", f"ARCHCTL_TEST_PAUSE_AT=merge.placed:{gate}", os.environ["ARCHCTL_BIN"], "node", "serve",
                 "--root", node["qb_root"], "--root", node["sync_root"]]
        cfg = config(timeout="2s", command=serve)
        proc = start(cfg, "archive", tid[:12], "--yes")
        try:
            flows.wait(lambda: os.path.exists(gate + ".paused") or proc.poll() is not None, timeout=120,
                       what="the far end's merge to pause")
            if proc.poll() is not None:
                self.fail(f"archctl ended before the merge paused: {proc.communicate()[1]}")
            time.sleep(5)
            with open(gate, "w"):
                pass
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("did not answer", err)
        seeding_target(self, tid)

    def test_e_sshd_down_at_resume_is_a_wait_not_a_failure(self):
        tid, name = new_resource()
        cfg = config(timeout="5s")
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", config=cfg, timeout=300,
                                   env={"ARCHCTL_TEST_CRASH_AT": "job.step.stage"})
        self.assertEqual(rc, 137, err)
        SSHD.stop()
        try:
            # As cron runs it, with a short outage window: the run waits, then stops cleanly.
            rc, out, err = LAB.archctl("resume", "--max-minutes", "1", config=cfg, timeout=300,
                                       env={"ARCHCTL_OUTAGE_WAIT": "5s"})
            self.assertIn("still unreachable after", err)
            self.assertEqual(rc, 10, f"an unreachable node must leave the job resumable: {err}")
            self.assertIn("archive1", err)
            jobs = json.loads(LAB.archctl("job", "list", "--all", "--json")[1])["jobs"]
            job = [j for j in jobs if j["resource"] == tid][-1]
            self.assertNotIn(job["state"], ("failed", "cancelled", "cleanup_required", "damaged"), job)
        finally:
            self.assertTrue(SSHD.start(), SSHD.log_tail())
        resume_until_done(self, cfg)
        seeding_target(self, tid)


if __name__ == "__main__":
    unittest.main(verbosity=2)
