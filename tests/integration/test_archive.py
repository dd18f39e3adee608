#!/usr/bin/python3
"""archive / unarchive end to end on a lab of real qBittorrent + Syncthing nodes, driving the
built binary: new target, rerun, complementary selections, budgets and the JSON documents."""

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
archctl = LAB.archctl

LAYOUT = {"pay/big.bin": 3 * 1024 * 1024 + 17, "pay/sub/small.txt": 6, "pay/sub/dir/deep.dat": 1048576,
          "pay/empty.bin": 0, "pay/ünïcödé.txt": 16}


def make_resource(name, kind, seed, layout=LAYOUT):
    info, tid, save, _ = flows.seed_resource(LAB, name, layout, seed, kind=kind)
    return info, tid, save


class Archive(unittest.TestCase):
    def archive_new_target(self, kind, seed):
        info, tid, save = make_resource(f"res-{kind}", kind, seed)
        res = tid[:12]
        cache_file = os.path.join(save, "pay/big.bin")
        before = flows.stat_of(cache_file)

        rc, out, err = archctl("plan", "archive", res, "--json")
        self.assertEqual(rc, 0, err)
        plan = json.loads(out)
        self.assertEqual(plan["plan"]["delta"]["count"], len(LAYOUT))
        self.assertTrue(plan["token"])

        started = time.monotonic()
        rc, out, err = archctl("archive", res, "--confirm", plan["token"], "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        self.assertTrue(doc["ok"])
        self.assertEqual(doc["job"]["outcome"], "done")
        print(f"  {kind}: archive took {time.monotonic() - started:.1f} s", file=sys.stderr)

        archive = LAB.node("archive1")
        aq = LAB.qb("archive1")
        t = aq.info([tid])
        self.assertEqual(len(t), 1)
        self.assertEqual(t[0]["save_path"].rstrip("/"), os.path.join(archive["qb_root"], f"res-{kind}"))
        files = aq.files(tid)
        self.assertEqual(len(files), len(LAYOUT))
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in files), files)
        flows.wait(lambda: aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
        for rel in LAYOUT:
            placed = os.path.join(archive["qb_root"], f"res-{kind}", rel)
            self.assertTrue(os.path.isfile(placed), placed)
            self.assertTrue(os.stat(placed).st_mode & 0o004, f"{placed} not readable by others")
        # The cache copy is untouched: same inode, mode and mtime, still complete.
        self.assertEqual(flows.stat_of(cache_file), before)
        cq = LAB.qb("cache1")
        self.assertTrue(all(f["progress"] == 1 for f in cq.files(tid)))
        # Staging is gone on both sides (Syncthing propagates the deletes).
        flows.staging_empty(LAB, LAB.route)
        # Rerun: nothing to do, no new job.
        rc, out, err = archctl("archive", res, "--yes", "--json")
        self.assertEqual(rc, 0, err)
        self.assertTrue(json.loads(out).get("nothing_to_do"))
        return tid

    def test_a_hybrid(self):
        self.archive_new_target("hybrid", 11)

    def test_b_v1(self):
        self.archive_new_target("v1", 12)

    def test_c_v2(self):
        self.archive_new_target("v2", 13)

    def test_d_needs_confirmation_without_a_tty(self):
        info, tid, save = make_resource("res-confirm", "hybrid", 21)
        rc, out, err = archctl("archive", tid[:12], "--json")
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(out)["error"]["code"], "CONFIRM_REQUIRED")
        rc, out, err = archctl("archive", tid[:12], "--confirm", "abcdef", "--json")
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(out)["error"]["code"], "TOKEN_UNKNOWN")
        # A token shown for another torrent, or for another selection of this one, says what it
        # was shown for, not that the live state changed; it stays unspent for its own command.
        _, other, _ = make_resource("res-confirm-other", "v1", 22)
        rc, out, err = archctl("plan", "archive", other[:12], "--json")
        self.assertEqual(rc, 0, err)
        token = json.loads(out)["token"]
        jobs_before = json.loads(archctl("job", "list", "--all", "--json")[1])["jobs"]
        for argv in ([tid[:12]], [other[:12], "--files", "0"]):
            rc, out, err = archctl("archive", *argv, "--confirm", token, "--json")
            self.assertEqual(rc, 1, err + out)
            error = json.loads(out)["error"]
            self.assertEqual(error["code"], "TOKEN_MISMATCH")
            self.assertIn(f"was shown for 'archive {other[:12]} cache1 → archive1', not for this command", error["message"])
            self.assertNotIn("live state", error["message"])
        rc, out, err = archctl("job", "list", "--all", "--json")
        self.assertEqual(json.loads(out)["jobs"], jobs_before, "a refused confirmation creates no job")
        rc, out, err = archctl("archive", other[:12], "--confirm", token, "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)

    def test_e_complementary_selections_merge_into_one_placement(self):
        info, tid, save = make_resource("res-split", "hybrid", 31)
        n = len(LAYOUT)
        rc, out, err = archctl("archive", tid[:12], "--files", "0-1", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        archive = LAB.node("archive1")
        first = os.path.join(archive["qb_root"], "res-split")
        aq = LAB.qb("archive1")
        kept = {f["index"]: flows.stat_of(os.path.join(first, f["name"])) for f in aq.files(tid) if f["index"] in (0, 1)}
        rc, out, err = archctl("archive", tid[:12], "--files", f"2-{n - 1}", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        files = aq.files(tid)
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in files), files)
        for f in files:
            if f["index"] in kept:
                self.assertEqual(flows.stat_of(os.path.join(first, f["name"]))[0], kept[f["index"]][0])

    def test_f_budget_stop_then_resume_converges(self):
        info, tid, save = make_resource("res-budget", "hybrid", 41)
        # A deadline already passed: a clean stop at the first step boundary, exit 10.
        rc, out, err = archctl("archive", tid[:12], "--yes", "--max-minutes", "0.001", "--json", timeout=300)
        self.assertEqual(rc, 10, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["job"]["stop_reason"], "deadline")
        self.assertIn("hint: rerun", err)
        # The same command again refuses nothing: it continues the same job, here up to sync.
        rc, out, err = archctl("archive", tid[:12], "--yes", "--no-wait", "--json", timeout=300)
        self.assertIn(rc, (0, 10), err + out)
        if rc == 10:
            self.assertEqual(json.loads(out)["job"]["stop_reason"], "waiting")
        rc, out, err = archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        files = LAB.qb("archive1").files(tid)
        self.assertTrue(all(f["progress"] == 1 for f in files))

    def test_f_z_a_job_staged_flat_before_the_shards_still_lands(self):
        """A job whose definition predates the sharded staging layout (no payload_layout) is
        staged, carried, merged and cleaned up in the flat layout it was created with."""
        info, tid, save = make_resource("res-flat", "hybrid", 43)
        rc, out, err = archctl("archive", tid[:12], "--yes", "--max-minutes", "0.001", "--json", timeout=300)
        self.assertEqual(rc, 10, err + out)
        job = flows.job_of(LAB, tid)
        path = os.path.join(LAB.state_dir, "jobs", job, "definition.json")
        with open(path) as f:
            definition = json.load(f)
        self.assertEqual(definition["payload_layout"], "sharded")  # every new job
        shown = json.loads(archctl("job", "show", job, "--json")[1])
        self.assertFalse(shown["ledger"]["staged"], shown["ledger"])
        del definition["payload_layout"]
        with open(path, "w") as f:
            json.dump(definition, f, indent=2)
        release = flows.archctl_paused_at(LAB, "job.step.sync", "resume", job)
        staged = os.path.join(LAB.node("cache1")["sync_root"], LAB.route, job, "p")
        try:
            names = sorted(os.listdir(staged))
            self.assertEqual(names, sorted(str(f["index"]) for f in info["files"]))
            self.assertTrue(all(os.path.isfile(os.path.join(staged, n)) for n in names), names)
            with open(os.path.join(staged, "..", "manifest.json")) as f:
                self.assertNotIn("layout", json.load(f))
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err + out)
        files = LAB.qb("archive1").files(tid)
        self.assertTrue(all(f["progress"] == 1 for f in files), files)
        flows.staging_empty(LAB, LAB.route)

    def test_g_unarchive_into_an_empty_cache(self):
        info, tid, save = make_resource("res-back", "hybrid", 52)
        rc, out, err = archctl("archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err)
        # Empty the cache: drop the torrent and its files, as an eviction would.
        LAB.qb("cache1").delete(tid, delete_files=True)
        flows.wait(lambda: not os.path.exists(os.path.join(save, "pay", "big.bin")), what="cache emptied")
        rc, out, err = archctl("unarchive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        cq = LAB.qb("cache1")
        files = cq.files(tid)
        self.assertTrue(all(f["progress"] == 1 for f in files), files)
        self.assertTrue(os.path.isfile(os.path.join(save, "pay", "big.bin")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
