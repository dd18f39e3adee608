#!/usr/bin/python3
"""File names as real torrents spell them, on real services: a decomposed (NFD) name such as
macOS writes ("cafe" + U+0301) is archived byte for byte under that very name — staging is by
file index, so Syncthing's NFC normalisation never touches it — and a torrent that holds the same
name twice, once NFC and once NFD, is refused naming both (docs/torrent-format.md "Path safety" rule 5)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
import placed  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

NFD = "cafe\u0301.txt"
NFC = "caf\u00e9.txt"


class Names(unittest.TestCase):
    def archive_nfd(self, kind, seed):
        name = f"nfd-{kind}"
        layout = {f"pay/{NFD}": 40000, "pay/plain.bin": 70001, f"pay/d\u0131r/Ju\u0308rgen.dat": 3}
        info, tid, save, _ = flows.seed_resource(LAB, name, layout, seed, kind=kind)
        qb_names = [f["name"] for f in LAB.qb("cache1").files(tid)]
        self.assertIn(f"pay/{NFD}", qb_names, "qBittorrent keeps the NFD name")
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["job"]["outcome"], "done")
        target = placed.assert_archived(self, LAB, tid, save, name, list(layout))
        on_disk = os.listdir(os.path.join(target, "pay"))
        self.assertIn(NFD, on_disk, "the archive copy keeps the NFD bytes")
        self.assertNotIn(NFC, on_disk, "no NFC twin appeared")
        self.assertTrue(all(f["progress"] == 1 for f in LAB.qb("archive1").files(tid)))

    def test_a_nfd_name_hybrid(self):
        self.archive_nfd("hybrid", 601)

    def test_b_nfd_name_v1(self):
        self.archive_nfd("v1", 602)

    def test_c_nfc_and_nfd_together_refused_naming_both(self):
        name = "nfc-nfd-pair"
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        flows.write_payload(save, {f"pay/{NFC}": 5000, f"pay/{NFD}": 6000}, seed=603)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        tid = placed.lt_create(os.path.join(save, "pay"), [f"pay/{NFC}", f"pay/{NFD}"], tfile)
        # libtorrent on Linux keeps both files (distinct bytes), so qB seeds them.
        cq = LAB.qb("cache1")
        with open(tfile, "rb") as f:
            cq.add_torrent(f.read(), save, paused=True)
        flows.wait(lambda: cq.info([tid]), what="torrent listed")
        cq.recheck(tid)
        flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP" and t[0]["progress"] == 1)(cq.info([tid])),
                   what="cache recheck complete")
        self.assertEqual(sorted(f["name"] for f in LAB.qb("cache1").files(tid)), sorted([f"pay/{NFC}", f"pay/{NFD}"]))
        for argv in (("plan", "archive", tid[:12]), ("archive", tid[:12], "--yes")):
            rc, out, err = LAB.archctl(*argv)
            self.assertEqual(rc, 1, err + out)
            self.assertIn(f"file 'pay/{NFD}': same path as 'pay/{NFC}' after case folding and Unicode NFC "
                          "normalisation", err)
        rc, out, err = LAB.archctl("torrent", "show", tfile)
        self.assertNotEqual(rc, 0, err + out)
        self.assertIn(NFC, err)
        self.assertIn(NFD, err)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing reached the archive")
        flows.staging_empty(LAB, LAB.route)


if __name__ == "__main__":
    unittest.main()
