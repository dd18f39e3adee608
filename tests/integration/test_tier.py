#!/usr/bin/python3
"""archctl tier end to end on real services: a keep_free goal on the cache that exactly three
evictions reach. plan tier lists the candidates in order with rule and action; a run with a
budget stops with 10, the next reaches the goal (0), a third is a no-op (0, no new job); the
excluded category is untouched and nothing leaves the cache without a proven archive copy.

The goal must not depend on the free space of the machine's shared filesystem (other processes
write there, and the archive's copies would land on the same filesystem), so the cache's qb_root
is a 64 MiB tmpfs mounted for this suite (root only; the suite is skipped otherwise): its free
space changes only by what qBittorrent and archctl put there. Candidates are 4, 4.5, 5, 5.5 and
6 MiB (order = "largest"); keep_free = free space after seeding + 6 + 5.5 + 2.5 MiB, so two
evictions leave it 2.5 MiB short and three exceed it by 2.5 MiB."""

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

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
archctl = LAB.archctl

MIB = 1 << 20
TMPFS_SIZE = 64 * MIB
CANDIDATES = [{"name": f"box-{i}", "category": "tv", "tags": ["hd"] if i % 2 else [],
               "layout": {f"box-{i}/video.mkv": 4 * MIB + i * MIB // 2, f"box-{i}/nfo.txt": 300 + i}}
              for i in range(5)]
EXCLUDED = {"name": "kept-0", "category": "keep", "tags": [], "layout": {"kept-0/big.bin": 7 * MIB}}
SPEC = CANDIDATES + [EXCLUDED]
STATE = {}  # ids, by_id, goal, config, mounted


def free_bytes(path):
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize


def mount_tmpfs(path):
    """Mount a fresh tmpfs on `path`; False when this process may not (not root, no mount)."""
    if os.geteuid() != 0:
        return False
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755", "archctl-test-cache", path],
                          capture_output=True, text=True)
    return proc.returncode == 0


def unmount():
    """After the lab stopped: unmount the tmpfs and remove what the lab's own removal could not
    (the mount point kept its parents)."""
    if not STATE.get("mounted"):
        return
    subprocess.run(["umount", "-l", STATE["qb_root"]], capture_output=True)
    STATE["mounted"] = False
    if not LAB.keep:
        shutil.rmtree(LAB.dir, ignore_errors=True)


def setUpModule():
    # Registered before the lab's own cleanup, so it runs after the lab is stopped.
    unittest.addModuleCleanup(unmount)
    LAB.set_up()
    qb_root = STATE["qb_root"] = LAB.node("cache1")["qb_root"]
    if not mount_tmpfs(qb_root):
        reason = "the cache's qb_root needs its own filesystem (a tmpfs mounted as root)"
        print(f"test_tier: skipped: {reason}", file=sys.stderr)  # ctest's SKIP_REGULAR_EXPRESSION
        raise unittest.SkipTest(reason)
    STATE["mounted"] = True
    ids = collection.seed_collection(LAB, "cache1", SPEC, seed=17)
    STATE["ids"] = ids
    STATE["by_id"] = dict(zip(ids, SPEC))
    sizes = sorted((size_of(e) for e in CANDIDATES), reverse=True)
    free = free_bytes(qb_root)
    STATE["goal"] = free + sizes[0] + sizes[1] + sizes[2] // 2
    assert STATE["goal"] < TMPFS_SIZE, "the goal must be reachable on the tmpfs"
    config = os.path.join(LAB.dir, "tier.toml")
    with open(LAB.config_path) as f:
        base = f.read()
    with open(config, "w") as f:
        f.write(base + "\n" + "\n".join([
            "[tier.box]",
            'cache = "cache1"',
            'archive = ["archive1"]',
            f'keep_free = "{STATE["goal"]}B"',
            'archive_when = { larger_than = "1M" }',
            'exclude = { categories = ["keep"] }',
            'order = "largest"',
            'evict = "to_goal"',
            # A goal no candidate can reach, in the mode that evicts whatever is proven.
            "[tier.far]",
            'cache = "cache1"',
            'archive = ["archive1"]',
            'keep_free = "900T"',
            'archive_when = { larger_than = "1T" }',
            'evict = "always"', ""]))
    STATE["config"] = config


def size_of(entry):
    return sum(entry["layout"].values())


def tier(*args, timeout=900):
    return archctl(*args, config=STATE["config"], timeout=timeout)


def candidates_by_size():
    """Candidate qB ids, largest first (the policy's order)."""
    return sorted((tid for tid, e in STATE["by_id"].items() if e in CANDIDATES),
                  key=lambda tid: size_of(STATE["by_id"][tid]), reverse=True)


def excluded_id():
    return [tid for tid, e in STATE["by_id"].items() if e is EXCLUDED][0]


def policy_of(doc, name="box"):
    """The policy's part of a plan tier --json document: {"tier": [{"policy": NAME, ...}, ...]}."""
    return [p for p in doc["tier"] if p["policy"] == name][0]


def requests_of(doc, name="box"):
    """qB requests per node of a plan tier --json document."""
    return policy_of(doc, name)["requests"]


def jobs():
    rc, out, err = archctl("job", "list", "--all", "--json")
    assert rc == 0, err
    return json.loads(out)["jobs"]


class Tier(unittest.TestCase):
    def assert_no_loss(self):
        """Every candidate gone from the cache is complete on the archive; the excluded torrent
        stays on the cache with its files and never reaches the archive."""
        cq, aq = LAB.qb("cache1"), LAB.qb("archive1")
        for tid in candidates_by_size():
            if not cq.info([tid]):
                t = aq.info([tid])
                self.assertEqual(len(t), 1, f"{tid[:12]} left the cache without an archive copy")
                self.assertEqual(t[0]["progress"], 1, f"{tid[:12]} left the cache before its copy was complete")
        kept = excluded_id()
        self.assertEqual(cq.info([kept])[0]["progress"], 1)
        self.assertTrue(os.path.isfile(os.path.join(STATE["qb_root"], "kept-0", "kept-0", "big.bin")))
        self.assertEqual(aq.info([kept]), [], "the excluded category is never archived")

    def evicted(self):
        cq = LAB.qb("cache1")
        return [tid for tid in candidates_by_size() if not cq.info([tid])]

    def test_a_plan_lists_candidates_in_order(self):
        before = jobs()
        rc, out, err = tier("plan", "tier", "box", "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        policy = policy_of(doc)
        order = candidates_by_size()
        listed = [c for c in policy["rows"] if c["resource"] in order]
        self.assertEqual([c["resource"] for c in listed], order, "candidates largest first")
        for c in listed:
            self.assertTrue(c["rule"], c)
        self.assertTrue(all("archive" in c["action"] for c in listed[:3]), listed)
        to_evict = [c["resource"] for c in listed if "evict" in c["action"]]
        self.assertEqual(to_evict, order[:3], "exactly the three largest reach the goal")
        for c in policy["rows"]:
            if c["resource"] == excluded_id():  # listed at most as skipped
                self.assertNotIn("evict", c["action"], c)
                self.assertFalse(c["action"].startswith("archive"), c)
        self.assertGreaterEqual(requests_of(doc)["cache1"], 1)
        self.assertEqual(jobs(), before, "plan tier is read-only")
        rc, text, err = tier("plan", "tier", "box")
        self.assertEqual(rc, 0, err)
        for tid in order:
            self.assertIn(tid[:12], text + err)

    def test_b_budget_stops_with_10(self):
        budget = size_of(STATE["by_id"][candidates_by_size()[0]])
        rc, out, err = tier("tier", "box", "--max-bytes", str(budget), "--yes")
        self.assertEqual(rc, 10, err + out)
        self.assertLess(free_bytes(STATE["qb_root"]), STATE["goal"], "a budget stop leaves the goal unmet")
        self.assert_no_loss()

    def test_c_second_run_reaches_the_goal(self):
        rc, out, err = tier("tier", "box", "--yes")
        self.assertEqual(rc, 0, err + out)
        self.assertGreaterEqual(free_bytes(STATE["qb_root"]), STATE["goal"])
        self.assertEqual(self.evicted(), candidates_by_size()[:3], "the three largest evicted, no more")
        self.assert_no_loss()

    def test_d_third_run_is_a_no_op(self):
        before = jobs()
        free = free_bytes(STATE["qb_root"])
        rc, out, err = tier("tier", "box", "--yes")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(len(jobs()), len(before), "no new job")
        self.assertEqual(self.evicted(), candidates_by_size()[:3])
        self.assertEqual(free_bytes(STATE["qb_root"]), free)
        self.assert_no_loss()

    def test_e_status_and_config_show_the_policy(self):
        rc, out, err = tier("status", "--json")
        self.assertEqual(rc, 0, err + out)
        policy = [p for p in json.loads(out)["policies"] if p["policy"] == "box"][0]
        self.assertEqual(policy["cache"], "cache1")
        self.assertTrue(policy["goal_met"], policy)
        self.assertEqual(policy["want_free"], STATE["goal"])
        self.assertGreaterEqual(policy["free"], STATE["goal"])
        self.assertEqual(policy["candidates_left"], {"archive": 0, "evict": 0}, policy)
        self.assertEqual(policy["last_run"]["outcome"], "done", policy)
        rc, text, err = tier("status")
        self.assertIn("policies", text)
        self.assertIn("box", text)
        rc, text, err = tier("config")
        self.assertEqual(rc, 0, err)
        self.assertRegex(text, r"tier\.box\.keep_free\s+\d+(\.\d)? MiB\s+user:")
        self.assertRegex(text, r"tier\.box\.order\s+largest")

    def test_f_unreachable_cache_is_a_wait(self):
        """The cache's qBittorrent down: tier cannot read its torrents, which is a clean stop
        (exit 10, cron tries again), never a failure, and nothing moves."""
        before = jobs()
        LAB.stop_qb("cache1")
        try:
            rc, out, err = tier("tier", "box", "--yes", "--json")
            self.assertEqual(rc, 10, err + out)
            self.assertIn("waiting", json.loads(out)["tier"][0]["stop"])
        finally:
            LAB.start_qb("cache1")
        self.assertEqual(len(jobs()), len(before))
        rc, out, err = tier("tier", "box", "--yes")
        self.assertEqual(rc, 0, err + out)
        self.assert_no_loss()

    def test_g_a_goal_is_held_only_when_the_free_space_meets_it(self):
        """evict = "always" with a goal nothing reaches: the run never says the goal holds; it
        fails TIER_GOAL_UNREACHABLE (exit 1) naming what a person can do, as plan tier says."""
        rc, out, err = tier("plan", "tier", "far", "--json")
        self.assertEqual(rc, 0, err)
        self.assertFalse(policy_of(json.loads(out), "far")["goal_met_after"])
        rc, out, err = tier("tier", "far", "--yes", "--json")
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        run = policy_of(doc, "far")
        self.assertFalse(run["goal_met"], run)
        self.assertEqual(run["error"]["code"], "TIER_GOAL_UNREACHABLE", run)
        self.assertGreater(run["free_after"], 0, run)
        self.assertNotIn("goal holds", err)
        self.assertIn("hint:", err)


if __name__ == "__main__":
    unittest.main()
