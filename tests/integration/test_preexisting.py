#!/usr/bin/python3
"""A file already on the archive at a delta path with the torrent file's size, on real services:
merge keeps it as it is and the recheck judges its bytes. Plan names it; with the torrent's bytes
the archive commits; with other bytes the job fails saying the file was pre-existing, the file is
left exactly as it was and nothing else remains."""

import json
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
import placed  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

LAYOUT = {"pay/a.bin": 70001, "pay/x.bin": 50000, "pay/sub/c.txt": 12}


def seed_with_preexisting(name, seed, same_bytes):
    info, tid, save, _ = flows.seed_resource(LAB, name, LAYOUT, seed)
    target = os.path.join(LAB.node("archive1")["qb_root"], name)
    dest = os.path.join(target, "pay/x.bin")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(os.path.join(save, "pay/x.bin"), "rb") as f:
        data = f.read()
    if not same_bytes:
        data = random.Random(seed).randbytes(len(data))
    with open(dest, "wb") as f:
        f.write(data)
    return tid, save, target, dest, data


class Preexisting(unittest.TestCase):
    def plan_names_it(self, tid):
        rc, out, err = LAB.archctl("plan", "archive", tid[:12])
        self.assertEqual(rc, 0, err + out)
        self.assertIn("pre-existing file 'pay/x.bin' on 'archive1' (50000 bytes) will be kept and checked by the recheck",
                      out + err)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        pre = json.loads(out)["preexisting"]
        self.assertEqual([(p["path"], p["size"]) for p in pre], [("pay/x.bin", 50000)])

    def test_a_same_bytes_commits(self):
        tid, save, target, dest, data = seed_with_preexisting("pre-same", 901, same_bytes=True)
        ino = os.stat(dest).st_ino
        self.plan_names_it(tid)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        placed.assert_archived(self, LAB, tid, save, "pre-same", list(LAYOUT))
        self.assertEqual(os.stat(dest).st_ino, ino, "the pre-existing file was kept, not replaced")

    def test_b_other_bytes_fail_naming_the_preexisting_file(self):
        tid, save, target, dest, data = seed_with_preexisting("pre-other", 902, same_bytes=False)
        self.plan_names_it(tid)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "VERIFY_FAILED")
        self.assertRegex(doc["error"]["message"], r"pay/x\.bin \([0-9.]+%, a pre-existing file on the target that merge kept: "
                                                  r"its bytes are not the torrent's\)")
        with open(dest, "rb") as f:
            self.assertEqual(f.read(), data, "the pre-existing file is exactly as it was")
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "the new target was taken back")
        self.assertEqual(sorted(os.listdir(target)), ["pay"])
        self.assertEqual(sorted(os.listdir(os.path.join(target, "pay"))), ["x.bin"], "only the pre-existing file remains")
        flows.staging_empty(LAB, LAB.route)


if __name__ == "__main__":
    unittest.main()
