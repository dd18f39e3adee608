#!/usr/bin/python3
"""Torrents as other tools make them, archived end to end on real services: mktorrent (2^15-byte
pieces), transmission-create, python3-libtorrent v1 with BEP 47 pad files, a single-file torrent
and a 2,000-file tree of small files. Each: the archive copy is byte-identical to the cache's,
complete and seeding, nothing downloaded, the route folders empty again."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
import placed  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

LAYOUT = {"pay/a.bin": 100001, "pay/sub/b.txt": 17, "pay/sub/deep/c.dat": 65536, "pay/empty.bin": 0,
          "pay/z.bin": 40000}


class Creators(unittest.TestCase):
    def archive_made_by(self, name, make, layout=LAYOUT, seed=1, timeout=300, skips_empty=False):
        """Write `layout` below <cache qb_root>/<name>, make the .torrent with make(source, out),
        seed it on the cache and archive all of it."""
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        flows.write_payload(save, layout, seed=seed)
        top = sorted({rel.split("/")[0] for rel in layout})
        self.assertEqual(len(top), 1)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        make(os.path.join(save, top[0]), tfile)
        tid = flows.seed_cache(LAB, "cache1", tfile, save)
        started = time.monotonic()
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=timeout)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["job"]["outcome"], "done")
        print(f"  {name}: archive took {time.monotonic() - started:.1f} s", file=sys.stderr)
        # Every file of the torrent (transmission-create leaves out empty files).
        names = [f["name"] for f in LAB.qb("cache1").files(tid)]
        self.assertEqual(set(names), {rel for rel, size in layout.items() if size or not skips_empty})
        placed.assert_archived(self, LAB, tid, save, name, names)
        self.assertTrue(all(f["progress"] == 1 for f in LAB.qb("archive1").files(tid)))
        return tid

    def test_a_mktorrent(self):
        self.archive_made_by("mk", lambda src, out: subprocess.run(
            ["mktorrent", "-l", "15", "-c", "made by mktorrent", "-o", out, src], check=True, capture_output=True), seed=801)

    def test_b_transmission_create(self):
        self.archive_made_by("tr", lambda src, out: subprocess.run(
            ["transmission-create", "-s", "16", "-o", out, src], check=True, capture_output=True), seed=802,
            skips_empty=True)

    def test_c_libtorrent_v1_pad_files(self):
        def make(src, out):
            rels = sorted(rel for rel in LAYOUT)
            placed.lt_create(src, rels, out, piece_length=16384, pad_files=True)
            import libtorrent as lt
            fs = lt.torrent_info(out).files()
            pads = [fs.file_path(i) for i in range(fs.num_files()) if fs.file_flags(i) & lt.file_storage.flag_pad_file]
            self.assertGreaterEqual(len(pads), 3, "the torrent has pad files")
        self.archive_made_by("ltpad", make, seed=803)

    def test_d_single_file(self):
        layout = {"single.iso": 300001}
        self.archive_made_by("single", lambda src, out: subprocess.run(
            ["mktorrent", "-l", "16", "-o", out, src], check=True, capture_output=True), layout=layout, seed=804)

    def test_e_two_thousand_small_files(self):
        layout = {f"many/d{i % 20:02d}/f{i:04d}.txt": 1 + (i * 37) % 300 for i in range(2000)}
        self.archive_made_by("many", lambda src, out: subprocess.run(
            ["transmission-create", "-s", "32", "-o", out, src], check=True, capture_output=True),
            layout=layout, seed=805, timeout=600)


if __name__ == "__main__":
    unittest.main()
