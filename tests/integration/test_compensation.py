#!/usr/bin/python3
"""Compensation never removes a used file, on real services (docs/design.md
"Failure before commit"). An archive killed after merge leaves placed files that someone else may then use: the
user adds the same torrent over them on the archive qBittorrent, or a second state directory
(a root cron beside a user shell) archives the same resource, reuses them as pre-existing and
commits. When the first job is then cancelled or found stale, compensation reads every path the
target qBittorrent references right before unlinking, keeps each used file with its reason
(events, ledger, `job show`, `status`), never removes a torrent this job did not add, and the
other torrent stays at 100% after a fresh recheck with byte-identical files. Files nobody
references are still removed, and the job's own torrent with them."""

import hashlib
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
STATE_B = None
LAYOUT = {"pay/a.bin": 300007, "pay/sub/b.bin": 70001, "pay/c.txt": 12}
COUNTER = [0]
REFERENCED = "referenced by another torrent"


def setUpModule():
    global STATE_B
    LAB.set_up()
    STATE_B = os.path.join(LAB.dir, "state-b")


def archctl_in(state, *args, env=None, timeout=300):
    """archctl with the lab's config and the state directory `state` (None: the lab's own)."""
    return LAB.archctl(*args, env=env, timeout=timeout, state=state)


def new_resource():
    COUNTER[0] += 1
    name = f"comp-{COUNTER[0]}"
    _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 500 + COUNTER[0])
    return tid, name, tfile


def target_save(name):
    return os.path.join(LAB.node("archive1")["qb_root"], name)


def placed(name):
    """The payload files at the target save path: relative path → (size, inode, sha256)."""
    out = {}
    for rel in LAYOUT:
        p = os.path.join(target_save(name), rel)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            st = os.stat(p)
            out[rel] = (st.st_size, st.st_ino, digest)
    return out


def newest_job(tid, state=None):
    rc, out, err = archctl_in(state, "job", "list", "--all", "--json")
    assert rc == 0, err
    return [j for j in json.loads(out)["jobs"] if j["resource"] == tid][-1]["id"]


def crash_at(point, tid, state=None):
    rc, out, err = archctl_in(state, "archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": point})
    assert rc == 137, f"expected the crash at {point}: rc {rc}: {err}"
    return newest_job(tid, state)


def fresh_recheck(tid):
    """Force a recheck on the archive qBittorrent, wait for its result and return the torrent and
    its files. A small payload can be checked before the first poll: the wait for the checking
    state is bounded, the read after it is not taken before qBittorrent had time to start."""
    q = LAB.qb("archive1")
    q.recheck(tid)
    began = time.monotonic()
    try:
        flows.wait(lambda: q.info([tid])[0]["state"].startswith("checking"), timeout=2, interval=0.05, what="recheck begun")
    except AssertionError:
        pass
    flows.wait(lambda: not q.info([tid])[0]["state"].startswith("checking") and time.monotonic() - began > 1.0,
               timeout=120, what="recheck finished")
    time.sleep(0.3)
    return q.info([tid])[0], q.files(tid)


def assert_complete(test, tid, what):
    t, files = fresh_recheck(tid)
    test.assertEqual(t["progress"], 1, f"{what}: {t['state']} {t['progress']}")
    test.assertTrue(all(f["progress"] == 1 for f in files), files)
    test.assertNotIn(t["state"], ("missingFiles", "downloading", "stalledDL", "pausedDL", "stoppedDL", "error"), t["state"])


def user_adds_torrent(test, tid, tfile, name):
    """The user adds the same torrent on the archive over the placed files and rechecks it."""
    aq = LAB.qb("archive1")
    with open(tfile, "rb") as f:
        aq.add_torrent(f.read(), target_save(name), paused=True)
    flows.wait(lambda: aq.info([tid]), what="the user's torrent listed")
    assert_complete(test, tid, "the user's torrent after its first recheck")


def events_of(job, state=None):
    with open(os.path.join(state or LAB.state_dir, "jobs", job, "events.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if "type" in r]  # the journal's version line has none


class Compensation(unittest.TestCase):
    def assert_kept_for_other_torrent(self, tid, name, job, files, end_state, state=None):
        """The job ended, its compensation kept every placed file for the other torrent, said so
        everywhere, and that torrent is complete on byte-identical files."""
        assert_complete(self, tid, "the other torrent after compensation")
        self.assertEqual(placed(name), files, "the placed files are byte-identical (size, inode, hash)")
        with open(os.path.join(state or LAB.state_dir, "jobs", job, "ledger.json")) as f:
            ledger = json.load(f)
        self.assertEqual(ledger["state"], end_state)
        expected = {os.path.join(target_save(name), rel) for rel in LAYOUT}
        ledger_kept = {k["path"]: k["reason"] for k in ledger.get("kept", [])}
        self.assertEqual({p: ledger_kept.get(p) for p in expected}, {p: REFERENCED for p in expected}, ledger_kept)
        events = events_of(job, state)
        types = [e["type"] for e in events]
        self.assertIn("compensated", types)
        unmerged = [e for e in events if e["type"] == "unmerged"]
        self.assertEqual(len(unmerged), 1, types)
        self.assertEqual({k["path"] for k in unmerged[0]["kept"] if k["reason"] == REFERENCED}, expected)
        self.assertEqual([p for p in unmerged[0]["removed"] if p in expected], [])
        # job show: the JSON field and the text.
        rc, out, err = archctl_in(state, "job", "show", job, "--json")
        self.assertEqual(rc, 0, err)
        shown = json.loads(out)["job"]
        self.assertEqual({k["path"] for k in shown["kept"]}, expected)
        rc, out, err = archctl_in(state, "job", "show", job)
        self.assertEqual(rc, 0, err)
        self.assertIn("compensation kept 3 files used by other torrents", out)
        for p in expected:
            self.assertIn(p, out)
        print("  job show:\n" + "\n".join("    " + line for line in out.splitlines() if "kept" in line or REFERENCED in line),
              file=sys.stderr)
        # status: the jobs section names the job and what it kept.
        rc, out, err = archctl_in(state, "status")
        self.assertIn(job, out, out + err)
        self.assertIn("compensation kept 3 files used by other torrents", out)
        rc, out, err = archctl_in(state, "status", "--json")
        rows = [j for j in json.loads(out)["jobs"] if j["id"] == job]
        self.assertEqual(len(rows), 1)
        self.assertEqual(len(rows[0]["kept"]), 3)
        flows.staging_empty(LAB, LAB.route)
        self.assertEqual(os.listdir(os.path.join(state or LAB.state_dir, "reservations")), [], "the reservation is released")


class UserTorrentOverPlacedFiles(Compensation):
    """(a) the user adds the same torrent over the files of a job killed after merge."""

    def arrange(self, point="job.step.merge"):
        tid, name, tfile = new_resource()
        job = crash_at(point, tid)
        self.assertEqual(len(placed(name)), len(LAYOUT), "merge placed the files")
        if point != "job.step.merge":
            # The job's own torrent was added: the user replaces it by their own.
            LAB.qb("archive1").delete(tid, delete_files=False)
            flows.wait(lambda: LAB.qb("archive1").info([tid]) == [], what="the job's torrent removed by the user")
        user_adds_torrent(self, tid, tfile, name)
        return tid, name, job, placed(name)

    def test_a_cancel_keeps_the_users_torrent_and_its_files(self):
        tid, name, job, files = self.arrange()
        rc, out, err = LAB.archctl("job", "cancel", job, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertIn("compensation kept 3 files used by other torrents (see 'archctl job show", err)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "the user's torrent stays")
        self.assert_kept_for_other_torrent(tid, name, job, files, "cancelled")

    def test_b_a_resume_that_finds_the_job_stale_keeps_them(self):
        tid, name, job, files = self.arrange()
        rc, out, err = LAB.archctl("resume", job, "--json")
        self.assertEqual(rc, 1, err + out)
        self.assertIn("STALE_STATE", out)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "the user's torrent stays")
        self.assert_kept_for_other_torrent(tid, name, job, files, "failed")

    def test_c_a_torrent_this_job_did_not_add_is_never_removed(self):
        # Killed right after its own add: the ledger says the job added a torrent. The user
        # replaced that torrent by their own; cancel proves from qBittorrent that the torrent
        # there now is not the job's and leaves it, and its files, alone.
        tid, name, job, files = self.arrange(point="verify.added")
        rc, out, err = LAB.archctl("job", "cancel", job, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "the user's torrent stays")
        self.assert_kept_for_other_torrent(tid, name, job, files, "cancelled")
        types = [e["type"] for e in events_of(job)]
        self.assertNotIn("target_removed", types)


class TwoStateDirectories(Compensation):
    """(b) state B reuses the files state A's killed job placed, and commits; A compensates."""

    def arrange(self):
        tid, name, tfile = new_resource()
        job_a = crash_at("job.step.merge", tid)
        placed_by_a = placed(name)
        self.assertEqual(len(placed_by_a), len(LAYOUT))
        rc, out, err = archctl_in(STATE_B, "archive", tid[:12], "--yes", "--json")
        self.assertEqual(rc, 0, err + out)
        job_b = newest_job(tid, STATE_B)
        rc, out, err = archctl_in(STATE_B, "job", "show", job_b, "--json")
        provenance = json.loads(out)["ledger"]["merge_provenance"]
        self.assertEqual({p["provenance"] for p in provenance}, {"preexisting"}, provenance)
        self.assertEqual(placed(name), placed_by_a, "B committed A's files as they were")
        assert_complete(self, tid, "B's committed torrent")
        return tid, name, job_a, placed(name)

    def test_a_resume_in_a_keeps_the_files_b_committed(self):
        tid, name, job_a, files = self.arrange()
        rc, out, err = LAB.archctl("resume", job_a, "--json")
        self.assertEqual(rc, 1, err + out)
        self.assertIn("STALE_STATE", out)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "B's torrent stays")
        self.assert_kept_for_other_torrent(tid, name, job_a, files, "failed")

    def test_b_cancel_in_a_keeps_the_files_b_committed(self):
        tid, name, job_a, files = self.arrange()
        rc, out, err = LAB.archctl("job", "cancel", job_a, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "B's torrent stays")
        self.assert_kept_for_other_torrent(tid, name, job_a, files, "cancelled")


class NobodyElse(unittest.TestCase):
    """The old good path: what nobody else references goes, the job's own torrent with it."""

    def assert_removed(self, tid, name, job):
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "no torrent is left on the target")
        self.assertEqual(placed(name), {}, "the files this job placed are removed")
        with open(os.path.join(LAB.state_dir, "jobs", job, "ledger.json")) as f:
            ledger = json.load(f)
        self.assertEqual(ledger["state"], "cancelled")
        self.assertEqual(ledger.get("kept", []), [])
        rc, out, err = LAB.archctl("job", "show", job)
        self.assertNotIn("compensation kept", out)
        flows.staging_empty(LAB, LAB.route)

    def test_a_cancel_after_merge_removes_the_placed_files(self):
        tid, name, tfile = new_resource()
        job = crash_at("job.step.merge", tid)
        self.assertEqual(len(placed(name)), len(LAYOUT))
        rc, out, err = LAB.archctl("job", "cancel", job, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assert_removed(tid, name, job)

    def test_b_cancel_after_the_add_removes_the_jobs_torrent_and_files(self):
        tid, name, tfile = new_resource()
        job = crash_at("verify.added", tid)
        self.assertIsNotNone(LAB.qb("archive1").torrent(tid), "the job added its torrent")
        rc, out, err = LAB.archctl("job", "cancel", job, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assert_removed(tid, name, job)
        self.assertIn("target_removed", [e["type"] for e in events_of(job)])
        tags = LAB.qb("archive1").json("torrents/tags")
        self.assertEqual([t for t in tags if t.startswith("archctl-job-")], [], "no job tag is left in qBittorrent")


if __name__ == "__main__":
    unittest.main(verbosity=2)
