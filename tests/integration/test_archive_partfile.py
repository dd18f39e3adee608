#!/usr/bin/python3
"""v1 boundary pieces (docs/design.md "Partfiles and piece boundaries"): a genuinely partial cache
copy — a third qBittorrent seeds,
the cache downloads with the middle file skipped, so libtorrent writes a real part file — is
archived to a new target that reaches 100% on the selected files by carrying the part file; an
unusable part file fails with PARTFILE_UNSUPPORTED, never a download. Also a budget stop during
copy staging."""

import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")],
                     extra_qb=1)
setUpModule = LAB.set_up
# docs/torrent-format.md "The three-file v1 torrent": piece 6 holds a|b, piece 9 holds b|c, pieces 7–8 only b.
LAYOUT = {"pay1/a.bin": 100001, "pay1/b.bin": 50001, "pay1/c.bin": 70001}


def partial_cache_copy(name, seed):
    """Seeder extra1 has everything; cache1 downloads a.bin and c.bin only."""
    seeder = LAB.info["extra_qb"][0]
    src = os.path.join(seeder["save_path"], name)
    flows.write_payload(src, LAYOUT, seed=seed)
    tfile = os.path.join(LAB.dir, f"{name}.torrent")
    info = flows.create_torrent(os.path.join(src, "pay1"), tfile, kind="v1", piece_length=16384)
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
    LAB.qb("extra1").pause(tid)
    flows.wait(lambda: cq.info([tid])[0]["state"] == "pausedUP", what="cache paused")
    parts = os.path.join(save, f".{tid}.parts")
    flows.wait(lambda: os.path.exists(parts), what="a real part file")
    return tid, save, parts


class Partfile(unittest.TestCase):
    def test_a_new_target_reaches_100_percent_by_carrying_the_part_file(self):
        tid, save, parts = partial_cache_copy("pf-ok", 61)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err)
        plan = json.loads(out)["plan"]
        self.assertEqual(plan["partfile"]["need"], "carry_source")
        self.assertEqual(plan["partfile"]["boundary_pieces"], [6, 9])
        # b.bin was never downloaded: its boundary bytes come from the cache's part file.
        self.assertEqual(plan["partfile"]["from_partfile"], [1])
        self.assertEqual(plan["partfile"]["from_disk"], [])
        self.assertEqual(plan["partfile"]["bytes"], [{"piece": 6, "file": 1, "from": "partfile"},
                                                     {"piece": 9, "file": 1, "from": "partfile"}])
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        files = {f["index"]: f for f in aq.files(tid)}
        self.assertEqual(files[0]["progress"], 1)
        self.assertEqual(files[2]["progress"], 1)
        self.assertEqual(files[1]["priority"], 0)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], "pf-ok")
        self.assertTrue(os.path.exists(os.path.join(target_save, f".{tid}.parts")), "the target keeps the part file")
        self.assertFalse(os.path.exists(os.path.join(target_save, "pay1", "b.bin")), "a skipped file is never created")
        t = aq.info([tid])[0]
        self.assertEqual(t["amount_left"], 0)
        self.assertTrue(os.path.exists(parts), "the source part file is untouched")

    def test_b_an_unusable_part_file_fails_with_partfile_unsupported(self):
        tid, save, parts = partial_cache_copy("pf-bad", 62)
        with open(parts, "r+b") as f:  # piece count in the header no longer matches the torrent
            f.write((999).to_bytes(4, "big"))
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertIn("PARTFILE_UNSUPPORTED", doc["error"]["message"])
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing committed, nothing added")

    def test_c_budget_stop_during_copy_staging_then_resume(self):
        name = "pf-budget"
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        flows.write_payload(save, {"pay/x.bin": 8 * 1024 * 1024, "pay/y.bin": 8 * 1024 * 1024}, seed=63)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        flows.create_torrent(os.path.join(save, "pay"), tfile, kind="hybrid")
        tid = flows.seed_cache(LAB, "cache1", tfile, save)
        env = {"ARCHCTL_TEST_STAGE_METHOD": "copy"}
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--max-bytes", "4M", "--json", env=env, timeout=300)
        self.assertEqual(rc, 10, err + out)
        self.assertEqual(json.loads(out)["job"]["stop_reason"], "budget")
        rc, out, err = LAB.archctl("resume", "--json", env=env, timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertTrue(all(f["progress"] == 1 for f in LAB.qb("archive1").files(tid)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
