#!/usr/bin/python3
"""A tier policy whose first archive node fills up under a staged job moves on, on real services
(docs/design.md "A job that cannot land"): one cache (cache1) and two archive nodes (archive1,
archive2). archive1's qb_root and sync_root are on a small loop-mounted ext4, so a user's file
can fill it; the cache's qb_root is a tmpfs, so the policy's goal is exact (see test_tier.py).
Root only (loop and tmpfs mounts); skipped otherwise.

The story, in order (one lab, the tests share it):
  a. the first run is paused right after its first job (the largest candidate, A, to archive1,
     which has room) made its staging directory; a user's file then fills archive1 below the
     floor. `plan tier` at that moment sends the other candidates to archive2 and says why
     archive1 was passed over. The run goes on: A's job stops for room, B and C go to archive2
     and are evicted; exit 10, the summary says what moved where and what waits and why.
  b. the second run: A's job waits again (a bounded wait, said with its bound); the summary's
     free space and goal come from a fresh read; `status` shows the job waiting for room.
  c. the condition first recorded a day ago (its record moved back, as nightly runs leave it):
     the third run undoes A's job (its staging gone on both nodes, its reservation freed, an
     event saying why), archives A to archive2 and evicts it; the goal holds, exit 0, and nothing
     needs attention."""

import datetime
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collection  # noqa: E402
import flows  # noqa: E402

MIB = 1 << 20
LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive"), ("archive2", "archive")])
archctl = LAB.archctl

IMAGE_SIZE = 32 * MIB   # archive1's filesystem
TMPFS_SIZE = 48 * MIB   # the cache's qb_root
FLOOR = 4 * MIB
ROUTE1, ROUTE2 = "route-a1", "route-a2"
CANDIDATES = [{"name": name, "category": "tv", "tags": [],
               "layout": {f"{name}/video.mkv": size, f"{name}/nfo.txt": 100 + i}}
              for i, (name, size) in enumerate((("full-a", 6 * MIB + 1), ("full-b", 5 * MIB + 2), ("full-c", 4 * MIB + 3)))]
STATE = {"mounts": []}  # ids (A, B, C), goal, first_job


def free_bytes(path):
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60)


def mount_unavailable():
    if os.geteuid() != 0:
        return "needs root to mount a loop filesystem and a tmpfs"
    if not shutil.which("mkfs.ext4"):
        return "mkfs.ext4 is not installed (e2fsprogs)"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices (/dev/loop-control is missing)"
    return None


def skip(reason):
    print(f"test_full_archive: skipped: {reason}", file=sys.stderr)  # ctest's SKIP_REGULAR_EXPRESSION
    raise unittest.SkipTest(reason)


def unmount():
    """After the lab stopped (registered before its cleanup): unmount, then remove what the lab's
    own removal could not."""
    for path in reversed(STATE["mounts"]):
        run("umount", "-l", path)
    if STATE["mounts"] and not LAB.keep:
        shutil.rmtree(LAB.dir, ignore_errors=True)
    STATE["mounts"] = []


def mount_small_ext4(mountpoint):
    image = os.path.join(LAB.dir, "archive1-fs.img")
    with open(image, "wb") as f:
        f.truncate(IMAGE_SIZE)
    made = run("mkfs.ext4", "-q", "-m", "0", "-F", image)
    if made.returncode != 0:
        skip(f"mkfs.ext4 failed: {made.stderr.strip()}")
    os.makedirs(mountpoint, exist_ok=True)
    mounted = run("mount", "-o", "loop", image, mountpoint)
    if mounted.returncode != 0:
        skip(f"mount -o loop failed: {mounted.stderr.strip()}")
    STATE["mounts"].append(mountpoint)
    os.rmdir(os.path.join(mountpoint, "lost+found"))


def mount_tmpfs(path):
    mounted = run("mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755", "archctl-test-cache", path)
    if mounted.returncode != 0:
        skip(f"mount -t tmpfs failed: {mounted.stderr.strip()}")
    STATE["mounts"].append(path)


def setUpModule():
    why = mount_unavailable()
    if why:
        skip(why)
    unittest.addModuleCleanup(unmount)
    LAB.set_up()
    # archive1's roots move onto the small filesystem before any Syncthing folder is made there.
    small = os.path.join(LAB.dir, "nodes", "archive1", "small")
    mount_small_ext4(small)
    node = LAB.node("archive1")
    node["qb_root"], node["sync_root"] = os.path.join(small, "qb_root"), os.path.join(small, "sync_root")
    os.makedirs(node["qb_root"])
    os.makedirs(node["sync_root"])
    mount_tmpfs(LAB.node("cache1")["qb_root"])
    flows.pair_route(LAB.lab, "cache1", "archive1", ROUTE1)
    flows.pair_route(LAB.lab, "cache1", "archive2", ROUTE2)
    ids = collection.seed_collection(LAB, "cache1", CANDIDATES, seed=29)
    STATE["ids"] = ids
    sizes = [sum(c["layout"].values()) for c in CANDIDATES]
    # Every candidate must leave the cache for the goal to hold: A and B and half of C.
    STATE["goal"] = free_bytes(LAB.node("cache1")["qb_root"]) + sizes[0] + sizes[1] + sizes[2] // 2
    text = LAB.config_text().replace('min_free = "0"', f'min_free = "{FLOOR}B"')
    with open(LAB.config_path, "w") as f:
        f.write(text + "\n" + "\n".join([
            "[tier.box]",
            'cache = "cache1"',
            'archive = ["archive1", "archive2"]',
            f'keep_free = "{STATE["goal"]}B"',
            'archive_when = { larger_than = "1M" }',
            'order = "largest"',
            'evict = "to_goal"', ""]))


def policy_of(doc):
    return [p for p in doc["tier"] if p["policy"] == "box"][0]


def row_of(doc, tid):
    return [r for r in policy_of(doc)["rows"] if r["resource"] == tid][0]


def job_doc(job):
    rc, out, err = archctl("job", "show", job, "--json")
    assert rc == 0, err
    return json.loads(out)


def archived_on(node, tid):
    t = LAB.qb(node).info([tid])
    return bool(t) and t[0]["progress"] == 1


class FullArchive(unittest.TestCase):
    def assert_no_loss(self):
        """Every candidate gone from the cache is complete on an archive node."""
        cq = LAB.qb("cache1")
        for tid in STATE["ids"]:
            if not cq.info([tid]):
                self.assertTrue(archived_on("archive1", tid) or archived_on("archive2", tid), f"{tid[:12]} lost")

    def test_a_a_full_archive_node_is_passed_over(self):
        a, b, c = STATE["ids"]
        rc, out, err = archctl("plan", "tier", "box", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual([row_of(json.loads(out), t)["archive_to"] for t in (a, b, c)], ["archive1"] * 3, out)

        release = flows.archctl_paused_at(LAB.lab, "stage.job_dir", "tier", "box", "--yes", "--json")
        try:
            STATE["first_job"] = flows.job_of(LAB.lab, a)
            small = LAB.node("archive1")["qb_root"]
            with open(os.path.join(os.path.dirname(small), "user-file.bin"), "wb") as f:  # a user's file
                f.write(b"\0" * (free_bytes(small) - MIB))
                f.flush()
                os.fsync(f.fileno())
            planned = archctl("plan", "tier", "box", "--json")
            planned_text = archctl("plan", "tier", "box")[1]
        finally:
            rc, out, err = release()
        # The plan sees what the run will see: archive1 has no room above its floor.
        self.assertEqual(planned[0], 0, planned[2])
        doc = json.loads(planned[1])
        for tid in (b, c):
            row = row_of(doc, tid)
            self.assertEqual(row["archive_to"], "archive2", row)
            passed = {p["node"]: p["why"] for p in row["passed_over"]}
            self.assertIn("archive1", passed, row)
            self.assertIn("floor", passed["archive1"])
        self.assertIn("archive to archive2", planned_text)

        self.assertEqual(rc, 10, err + out)
        doc = policy_of(json.loads(out))
        # A's job waits for room on archive1; B and C went to archive2 and left the cache.
        self.assertTrue(archived_on("archive2", b) and archived_on("archive2", c), err)
        cq = LAB.qb("cache1")
        self.assertEqual(cq.info([b]) + cq.info([c]), [], err)
        self.assertEqual(doc["archived"], 2, doc)
        self.assertEqual(doc["evicted"], 2, doc)
        self.assertEqual(doc["archived_to"], {"archive2": 2}, doc)
        waiting = [s for s in doc["steps"] if s["job"] == STATE["first_job"]]
        self.assertEqual([s["outcome"] for s in waiting], ["stopped"], doc)
        self.assertIn("archive1", waiting[0]["message"])
        self.assertIn("floor", waiting[0]["message"])
        # A service's error text (Syncthing's carries its own newline) is folded into one line.
        self.assertNotIn("\n", waiting[0]["message"])
        self.assertFalse([ln for ln in err.splitlines() if ln.lstrip().startswith(") (and")], err)
        self.assertIn("archive2", err)
        self.assert_no_loss()

    def test_b_the_wait_is_bounded_and_said(self):
        job = STATE["first_job"]
        rc, out, err = archctl("tier", "box", "--yes", "--json")
        self.assertEqual(rc, 10, err + out)
        doc = policy_of(json.loads(out))
        # The summary's figures are read fresh, whatever stopped the run.
        self.assertGreater(doc["free_after"], 0, doc)
        self.assertEqual(doc["want_free"], STATE["goal"], doc)
        self.assertRegex(err, r"tier box: .*\d+(\.\d)? MiB free \(goal keep ")
        self.assertNotIn("(goal )", err)
        steps = [s for s in doc["steps"] if s["job"] == job]
        self.assertEqual([s["outcome"] for s in steps], ["stopped"], doc)  # driven once, not once more as a candidate
        self.assertIn("(2 runs)", steps[0]["message"])
        self.assertIn("undoes and releases the job", steps[0]["message"])
        ledger = job_doc(job)["ledger"]
        self.assertEqual(ledger["state"], "running")
        self.assertEqual(ledger["target_blocked"]["runs"], 2, ledger)
        self.assertEqual(ledger["target_blocked"]["node"], "archive1", ledger)
        rc, out, err = archctl("status", "--json")
        status = json.loads(out)
        policy = [p for p in status["policies"] if p["policy"] == "box"][0]
        self.assertEqual([w["job"] for w in policy["waiting_for_room"]], [job], policy)
        # Waiting for room is not "needs attention … archctl resume": status says what it waits
        # for, since when, and that a run undoes and releases it after the bound.
        self.assertEqual([a["job"] for a in status["attention"]], [], status["attention"])
        waiting = [w for w in status["waiting"] if w["job"] == job]
        self.assertEqual(len(waiting), 1, status["waiting"])
        room = waiting[0]["waiting_for_room"]
        self.assertEqual((room["node"], room["runs"], room["release_runs"]), ("archive1", 2, 3), room)
        self.assertEqual(room["since"], ledger["target_blocked"]["since"])
        self.assertTrue(room["release_from"], room)
        rc, text, err = archctl("status")
        self.assertEqual(rc, 0, err)
        self.assertNotIn(f"archctl resume {job}", text.split("needs attention")[-1] if "needs attention" in text else "")
        self.assertIn("waiting for room: 1 job", text)
        self.assertRegex(text, rf"  {job}  waiting for room on 'archive1' since {room['since']} \(2 runs ended on it\): .*floor.*; "
                               rf"the first run from {room['release_from']} on, once 3 runs have ended on it \(the next one from "
                               rf"cron, or 'archctl resume {job}'\), undoes and releases it")
        # The plan says what the run will do: A waits with its job, so the goal is not met now.
        rc, out, err = archctl("plan", "tier", "box", "--json")
        self.assertEqual(rc, 0, err)
        plan = json.loads(out)
        row = row_of(plan, STATE["ids"][0])
        self.assertEqual((row["action"], row["job"]), ("blocked", job), row)
        self.assertIn("undoes and releases the job", row["why"])
        self.assertFalse(policy_of(plan)["goal_met_after"])

    def test_c_the_job_is_undone_and_the_candidate_moves_on(self):
        a = STATE["ids"][0]
        job = STATE["first_job"]
        # A day of nightly runs: the condition was first recorded 25 hours ago.
        path = os.path.join(LAB.state_dir, "jobs", job, "ledger.json")
        with open(path) as f:
            ledger = json.load(f)
        first = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=25)
        ledger["target_blocked"]["since"] = first.strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(path, "w") as f:
            json.dump(ledger, f)
        rc, out, err = archctl("tier", "box", "--yes", "--json")
        self.assertEqual(rc, 0, err + out)
        doc = policy_of(json.loads(out))
        self.assertTrue(doc["goal_met"], doc)
        self.assertIn("goal holds", err)
        self.assertEqual(doc["released"], 1, doc)
        self.assertEqual(doc["archived_to"], {"archive2": 1}, doc)
        self.assertTrue(archived_on("archive2", a))
        self.assertEqual(LAB.qb("cache1").info([a]), [])
        self.assertEqual(LAB.qb("archive1").info([a]), [])
        self.assertGreaterEqual(free_bytes(LAB.node("cache1")["qb_root"]), STATE["goal"])
        # The job is undone and says why; its staging is gone on both nodes.
        shown = job_doc(job)
        self.assertEqual(shown["ledger"]["state"], "cancelled", shown["ledger"])
        types = [e["type"] for e in shown["events"]]
        self.assertIn("released", types)
        released = [e for e in shown["events"] if e["type"] == "released"][0]
        self.assertEqual(released["node"], "archive1")
        self.assertIn("floor", released["reason"])
        flows.staging_empty(LAB.lab, ROUTE1)
        flows.staging_empty(LAB.lab, ROUTE2, nodes=("cache1", "archive2"))
        rc, out, err = archctl("status", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["attention"], [], out)
        self.assert_no_loss()


if __name__ == "__main__":
    unittest.main(verbosity=2)
