#!/usr/bin/python3
"""Batch selection end to end on real services: a cache with 12 torrents in three categories
(tv ×5, film ×4, keep ×3; tags on some), one archive. plan over a category lists exactly its
torrents with one token; archive with that token archives exactly them; one failing resource
does not stop the others (exit 1, per-resource outcomes); a shared --max-bytes stops with 10 and
reruns converge; evict by category; usage errors."""

import json
import os
import re
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collection  # noqa: E402
import flows  # noqa: E402
import placed  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
archctl = LAB.archctl

CATEGORIES = ["tv"] * 5 + ["film"] * 4 + ["keep"] * 3
TAGS = {1: ["hd"], 3: ["hd"], 6: ["hd"], 10: ["pinned"]}  # index -> tags; keep #10 is pinned


def spec_entry(i, category):
    name = f"{category}-{i:02d}"
    return {"name": name, "category": category, "tags": TAGS.get(i, []),
            "layout": {f"{name}/main.bin": 8192 + 13331 * i, f"{name}/info.txt": 100 + i}}


SPEC = [spec_entry(i, c) for i, c in enumerate(CATEGORIES)]
IDS = []  # qB ids in SPEC order
BY_ID = {}


def setUpModule():
    LAB.set_up()
    IDS.extend(collection.seed_collection(LAB, "cache1", SPEC, seed=16))
    BY_ID.update(zip(IDS, SPEC))


def ids_of(category, tag_not=None):
    return [tid for tid, e in BY_ID.items() if e["category"] == category and tag_not not in e["tags"]]


def payload_bytes(tid):
    return sum(BY_ID[tid]["layout"].values())


def cache_save(tid):
    return os.path.join(LAB.node("cache1")["qb_root"], BY_ID[tid]["name"])


def rels(tid):
    """The torrent's files relative to its save path (the layout's top directory first)."""
    return list(BY_ID[tid]["layout"])


def batch_run(*args, timeout=600):
    """A batch run with --json: (rc, {qB id: resource entry}, whole document, stderr)."""
    rc, out, err = archctl(*args, "--json", timeout=timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        raise AssertionError(f"rc {rc}, no JSON document: {err}{out}") from None
    if "batch" not in doc:
        raise AssertionError(f"rc {rc}, not a batch document: {err}{out}")
    return rc, {r["resource"]: r for r in doc["batch"]["resources"]}, doc, err


def on_archive(tid):
    return bool(LAB.qb("archive1").info([tid]))


class Batch(unittest.TestCase):
    def assert_archived(self, tid):
        placed.assert_archived(self, LAB, tid, cache_save(tid), BY_ID[tid]["name"], rels(tid))

    def assert_untouched(self, tids):
        for tid in tids:
            self.assertFalse(on_archive(tid), f"{BY_ID[tid]['name']} must not be on the archive")
            t = LAB.qb("cache1").info([tid])
            self.assertEqual(len(t), 1, f"{BY_ID[tid]['name']} must stay on the cache")
            self.assertEqual(t[0]["progress"], 1)

    def test_a_plan_lists_exactly_the_category(self):
        tv = ids_of("tv")
        rc, out, err = archctl("plan", "archive", "--category", "tv", "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        batch = doc["batch"]
        self.assertEqual(batch["op"], "archive")
        self.assertEqual(batch["source"], "cache1")
        listed = {r["resource"]: r for r in batch["resources"]}
        self.assertEqual(set(listed), set(tv), "exactly the five tv torrents")
        for tid, r in listed.items():
            self.assertEqual(r["short_id"], tid[:12])
            self.assertEqual(r["name"], BY_ID[tid]["name"])
            self.assertEqual(r["files"], len(BY_ID[tid]["layout"]))
            self.assertEqual(r["bytes"], payload_bytes(tid))
            self.assertEqual(r["action"], "archive", r)
        totals = batch["totals"]
        self.assertEqual(totals["resources"], 5)
        self.assertEqual(totals["bytes"], sum(payload_bytes(t) for t in tv))
        self.assertTrue(batch["digest"])
        self.assertTrue(doc["token"])

        rc, text, err = archctl("plan", "archive", "--category", "tv")
        self.assertEqual(rc, 0, err)
        lines = (text + err).splitlines()
        for tid in tv:
            self.assertEqual(len([ln for ln in lines if tid[:12] in ln]), 1, f"one line for {tid[:12]}:\n{text}{err}")
        for tid in ids_of("film") + ids_of("keep"):
            self.assertNotIn(tid[:12], text + err)
        totals_line = re.compile(r"\btotals?\b|\b5 (resources|torrents)\b", re.I)
        self.assertTrue(any(totals_line.search(ln) for ln in lines), f"a totals line:\n{text}{err}")
        self.assertRegex(text + err, r"--confirm \S+", "the text plan ends with the confirmation")

    def test_b_archive_the_category_with_the_plan_token(self):
        tv = ids_of("tv")
        rc, out, err = archctl("plan", "archive", "--category", "tv", "--json")
        self.assertEqual(rc, 0, err)
        token = json.loads(out)["token"]
        # The token is for this selection: another one refuses it, unspent, naming the plan it
        # was shown for, and starts nothing.
        rc, _, doc, err = batch_run("archive", "--category", "film", "--confirm", token)
        self.assertEqual(rc, 1, err)
        self.assertEqual(doc["error"]["code"], "TOKEN_MISMATCH")
        self.assertIn("was shown for 'archive --category tv', not for this command ('archive --category film')", doc["error"]["message"])
        self.assert_untouched(ids_of("film"))
        rc, outcomes, doc, err = batch_run("archive", "--category", "tv", "--confirm", token)
        self.assertEqual(rc, 0, err)
        self.assertEqual(set(outcomes), set(tv))
        self.assertEqual({r["outcome"] for r in outcomes.values()}, {"done"}, outcomes)
        self.assertTrue(all(r["job"] for r in outcomes.values()), "one job per resource")
        self.assertEqual(len({r["job"] for r in outcomes.values()}), 5, "one job per resource")
        self.assertEqual(doc["batch"]["totals"]["done"], 5)
        for tid in tv:
            self.assert_archived(tid)
        self.assert_untouched(ids_of("film") + ids_of("keep"))

    def test_c_a_failing_resource_does_not_stop_the_others(self):
        film = ids_of("film")
        broken = film[1]
        # One byte of the cache's copy flipped behind qBittorrent's back (size and mtime kept):
        # the archive's recheck of that torrent cannot complete, the job fails cleanly.
        path = os.path.join(cache_save(broken), BY_ID[broken]["name"], "main.bin")
        st = os.stat(path)
        with open(path, "r+b") as f:
            f.seek(5000)
            b = f.read(1)
            f.seek(5000)
            f.write(bytes([b[0] ^ 0xFF]))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        rc, outcomes, doc, err = batch_run("archive", "--category", "film", "--yes")
        self.assertEqual(rc, 1, err)
        self.assertEqual(set(outcomes), set(film))
        self.assertEqual(outcomes[broken]["outcome"], "failed", outcomes[broken])
        self.assertTrue(outcomes[broken]["error"]["code"], outcomes[broken])
        for tid in film:
            if tid != broken:
                self.assertEqual(outcomes[tid]["outcome"], "done", outcomes[tid])
                self.assert_archived(tid)
        totals = doc["batch"]["totals"]
        self.assertEqual((totals["done"], totals["failed"]), (3, 1), totals)
        self.assertFalse(on_archive(broken), "nothing of the failed resource may be committed")
        self.assertEqual(len(LAB.qb("cache1").info([broken])), 1, "the cache keeps the failed resource")

    def test_d_shared_budget_stops_with_10_and_reruns_converge(self):
        keep = ids_of("keep", tag_not="pinned")
        pinned = [tid for tid in ids_of("keep") if tid not in keep]
        self.assertEqual((len(keep), len(pinned)), (2, 1))
        sizes = sorted(payload_bytes(t) for t in keep)
        budget = sizes[1] + sizes[0] // 2  # either one fits, both do not
        self.assertLess(budget, sum(sizes))
        select = ["--category", "keep", "--exclude-tag", "pinned"]
        rc, outcomes, doc, err = batch_run("archive", *select, "--max-bytes", str(budget), "--yes")
        self.assertEqual(rc, 10, err)
        self.assertEqual(set(outcomes), set(keep), "the pinned torrent is excluded")
        got = sorted(r["outcome"] for r in outcomes.values())
        self.assertIn("done", got, outcomes)
        self.assertTrue(set(got) - {"done"} <= {"stopped", "not_run"} and len(set(got)) == 2, outcomes)

        rc, outcomes, doc, err = batch_run("archive", *select, "--yes")
        self.assertEqual(rc, 0, err)
        self.assertEqual(set(outcomes), set(keep))
        self.assertTrue({r["outcome"] for r in outcomes.values()} <= {"done", "nothing_to_do"}, outcomes)
        self.assertIn("done", {r["outcome"] for r in outcomes.values()})
        for tid in keep:
            self.assert_archived(tid)

        rc, outcomes, doc, err = batch_run("archive", *select, "--yes")
        self.assertEqual(rc, 0, err)
        self.assertEqual({r["outcome"] for r in outcomes.values()}, {"nothing_to_do"}, outcomes)
        self.assertEqual(doc["batch"]["totals"]["nothing_to_do"], 2)
        self.assertTrue(all(r["job"] is None for r in outcomes.values()), "no new job on a converged batch")
        self.assert_untouched(pinned)

    def test_e_evict_the_category(self):
        tv = ids_of("tv")
        for tid in tv:
            if not on_archive(tid):  # test_b ran first in the suite; alone, archive them here
                rc, out, err = archctl("archive", tid[:12], "--yes", timeout=300)
                self.assertEqual(rc, 0, err)
        rc, outcomes, doc, err = batch_run("evict", "--category", "tv", "--yes")
        self.assertEqual(rc, 0, err)
        self.assertEqual(set(outcomes), set(tv))
        self.assertEqual({r["outcome"] for r in outcomes.values()}, {"done"}, outcomes)
        aq = LAB.qb("archive1")
        for tid in tv:
            self.assertEqual(LAB.qb("cache1").info([tid]), [], "the cache torrent is gone")
            for rel in rels(tid):
                self.assertFalse(os.path.exists(os.path.join(cache_save(tid), rel)), rel)
                target = os.path.join(LAB.node("archive1")["qb_root"], BY_ID[tid]["name"], rel)
                self.assertTrue(os.path.isfile(target), target)
            self.assertTrue(all(f["progress"] == 1 for f in aq.files(tid)), "the archive copy is intact")
        for tid in ids_of("film") + ids_of("keep"):
            self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "other categories stay on the cache")

    def test_f_usage_errors(self):
        rc, out, err = archctl("archive", "--files", "0", IDS[0][:12], IDS[1][:12], "--yes")
        self.assertEqual(rc, 2, err)
        rc, out, err = archctl("archive", "--yes")
        self.assertEqual(rc, 2, err)
        rc, out, err = archctl("plan", "archive")
        self.assertEqual(rc, 2, err)
        rc, out, err = archctl("archive", "--larger-than", "lots", "--yes")
        self.assertEqual(rc, 2, err)
        self.assertIn("--larger-than", err)
        # No [tier.*] policy in this lab's config: tier says how to write one.
        rc, out, err = archctl("tier", "--yes")
        self.assertEqual(rc, 1, err)
        self.assertIn("no tier policy is configured", err)
        self.assertIn("[tier.seedbox]", err)

    def test_g_evict_never_removes_an_unproven_copy(self):
        """The pinned keep torrent is complete on the archive, placed there outside archctl, and
        then one of its files grew on the archive's disk (qBittorrent still says 100%): its copy
        is unproven — no piece check can prove a file of the wrong size — so a batch evict refuses
        it (exit 1) and evicts the proven ones."""
        keep = ids_of("keep")
        pinned = [tid for tid in keep if "pinned" in BY_ID[tid]["tags"]][0]
        for tid in keep:
            if tid != pinned and not on_archive(tid):
                rc, out, err = archctl("archive", tid[:12], "--yes", timeout=300)
                self.assertEqual(rc, 0, err)
        name = BY_ID[pinned]["name"]
        target = os.path.join(LAB.node("archive1")["qb_root"], name)
        shutil.copytree(cache_save(pinned), target)
        aq = LAB.qb("archive1")
        aq.add_torrent(LAB.qb("cache1").export(pinned), target, paused=True)
        flows.wait(lambda: aq.info([pinned]), what="listed on the archive")
        aq.recheck(pinned)
        flows.wait(lambda: (lambda t: t and t[0]["progress"] == 1 and t[0]["state"] == "pausedUP")(aq.info([pinned])),
                   what="archive recheck complete")
        largest = max(rels(pinned), key=lambda rel: BY_ID[pinned]["layout"][rel])
        with open(os.path.join(target, largest), "ab") as f:
            f.write(b"x")
        rc, outcomes, doc, err = batch_run("evict", "--category", "keep", "--yes")
        self.assertEqual(rc, 1, err)
        self.assertEqual(set(outcomes), set(keep))
        self.assertEqual(outcomes[pinned]["outcome"], "failed", outcomes[pinned])
        self.assertEqual(outcomes[pinned]["action"], "refused", outcomes[pinned])
        self.assertIsNone(outcomes[pinned]["job"])
        for tid in keep:
            if tid != pinned:
                self.assertEqual(outcomes[tid]["outcome"], "done", outcomes[tid])
                self.assertEqual(LAB.qb("cache1").info([tid]), [])
        self.assertEqual(len(LAB.qb("cache1").info([pinned])), 1, "the unproven one stays on the cache")
        for rel in rels(pinned):
            self.assertTrue(os.path.isfile(os.path.join(cache_save(pinned), rel)), rel)

    def test_h_not_chosen_lists_the_torrents_still_downloading(self):
        """A tv torrent whose second half is missing is still downloading (50%): the plan of
        --category tv lists it under "not chosen" with its percent, as its JSON does."""
        qb = LAB.qb("cache1")
        save = os.path.join(LAB.node("cache1")["qb_root"], "tv-half")
        flows.write_payload(save, {"pay/a.bin": 65536, "pay/b.bin": 65536}, seed=77)
        tfile = os.path.join(LAB.dir, "tv-half.torrent")
        info = flows.create_torrent(os.path.join(save, "pay"), tfile, kind="v1", piece_length=32768)
        os.remove(os.path.join(save, "pay", "b.bin"))
        with open(tfile, "rb") as f:
            collection.add_with(qb, f.read(), save, "tv")
        tid = info["qb_id"]
        self.addCleanup(qb.post, "torrents/delete", hashes=tid, deleteFiles="false")
        flows.wait(lambda: qb.info([tid]), what="torrent listed")
        qb.recheck(tid)
        flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedDL" and t[0]["progress"] == 0.5)(qb.info([tid])),
                   what="recheck: half of it present")
        rc, out, err = archctl("plan", "archive", "--category", "tv", "--json")
        self.assertEqual(rc, 0, err + out)
        batch = json.loads(out)["batch"]
        self.assertNotIn(tid, [r["resource"] for r in batch["resources"]])
        self.assertIn({"resource": tid, "short_id": tid[:12], "name": "pay", "reason": "still downloading (50%)"},
                      batch["not_chosen"])
        rc, text, err = archctl("plan", "archive", "--category", "tv")
        self.assertEqual(rc, 0, err)
        self.assertRegex(text, r"not chosen  \d+ torrents? on cache1, passed over by the filters:\n(    .*\n)*"
                               rf"    {tid[:12]}\s+pay\s+still downloading \(50%\)")


if __name__ == "__main__":
    unittest.main()
