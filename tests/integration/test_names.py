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

    def test_d_escapes_in_a_name_never_reach_the_terminal(self):
        # A torrent renamed in qBittorrent to terminal escapes: setting the window title,
        # clearing the screen, turning text red. Every command shows them visibly.
        info, tid, save, _ = flows.seed_resource(LAB, "escape-name", {"pay/a.bin": 30000}, 604)
        evil = "evil\x1b]0;PWNED\x07\x1b[2J\x1b[31m\u009b2Jred"
        LAB.qb("cache1").post("torrents/rename", hash=tid, name=evil)
        flows.wait(lambda: LAB.qb("cache1").info([tid])[0]["name"] == evil, what="rename")
        for argv in (("status", tid[:12]), ("status",), ("plan", "archive", tid[:12]), ("job", "list")):
            rc, out, err = LAB.archctl(*argv)
            for text in (out, err):
                for control in ("\x1b", "\x07", "\u009b"):
                    self.assertNotIn(control, text, f"{argv}: {text!r}")
            if len(argv) > 1 and argv[0] != "job":
                self.assertIn("evil\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31m\\u009B2Jred", out + err, argv)

    def test_e_json_is_one_valid_document_for_an_argument_that_is_not_utf8(self):
        bad = "ab\udcff\udcfe"  # the bytes 'ab' 0xff 0xfe on the command line
        for argv in (("status", bad), ("job", "show", bad), ("plan", "archive", bad)):
            rc, out, err = LAB.archctl(*argv, "--json")
            self.assertEqual(rc, 1, f"{argv}: {err}{out}")
            doc = json.loads(out)
            self.assertFalse(doc["ok"])
            self.assertIn(b"ab\xff\xfe", doc["error"]["message"].encode("utf-8", "surrogateescape"), argv)
            self.assertNotIn("internal error", err)
            self.assertIn("ab\\xff\\xfe", err, "the person sees the bytes escaped")
        # A huge argument is not echoed back whole.
        for argv in (("status", "a" * 100000), ("job", "show", "f" * 100000), ("plan", "archive", "0" * 100000)):
            rc, out, err = LAB.archctl(*argv)
            self.assertEqual(rc, 1, argv)
            self.assertLess(len(out + err), 2000, f"{argv}: {err[:300]}")
            self.assertIn("(100000 bytes)", err, argv)


if __name__ == "__main__":
    unittest.main()
