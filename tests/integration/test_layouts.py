#!/usr/bin/python3
"""Content layouts on real qBittorrent: a placement whose files qBittorrent keeps at other paths
than the metainfo's (contentLayout NoSubfolder or Subfolder at add, libtorrent's cut of an
over-long name) is archived and evicted like any other, each file read and written at its path
on that node's disk; the new target is added with the same layout. Only a real rename (a file
renamed in qBittorrent) is refused, and only by a command that touches that file."""

import hashlib
import json
import os
import shutil
import sys
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

MULTI = {"pay/a.bin": 100001, "pay/sub/b.bin": 50001, "pay/c.txt": 70001}
# Piece-aligned (16 KiB pieces): no piece is shared by two files, so any --files needs no part file.
ALIGNED = {"pay/a.bin": 16384 * 3, "pay/sub/b.bin": 16384 * 2, "pay/c.txt": 16384}
LONG_STEM = "n" * 246
LONG = {f"pay/{LONG_STEM}.bin": 40000, "pay/b.bin": 30001}


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def seed_layout(name, payload, layout, single=None):
    """The payload written outside qBittorrent, a v1 torrent made of it, added to cache1's qB with
    contentLayout `layout`; each file's bytes then put where qBittorrent says the file is, and a
    recheck. `single`: the payload's one file (a single-file torrent). Returns (tid, save,
    {index: qB name}, {index: metainfo path})."""
    src = os.path.join(LAB.dir, f"src-{name}")
    flows.write_payload(src, payload, seed=zlib.crc32(name.encode()))
    tfile = os.path.join(LAB.dir, f"{name}.torrent")
    info = flows.create_torrent(os.path.join(src, single or "pay"), tfile, kind="v1", piece_length=16384)
    tid = info["qb_id"]
    meta = {f["index"]: f["path"] for f in info["files"]}
    save = os.path.join(LAB.node("cache1")["qb_root"], name)
    os.makedirs(save, exist_ok=True)
    qb = LAB.qb("cache1")
    with open(tfile, "rb") as f:
        qb.add_torrent(f.read(), save, paused=True, layout=layout)
    flows.wait(lambda: qb.info([tid]) and len(qb.files(tid) or []) == len(meta), what="cache lists the files")
    names = {f["index"]: f["name"] for f in qb.files(tid)}
    for i, path in meta.items():
        from_path = os.path.join(src, path) if not single else os.path.join(src, single)
        to_path = os.path.join(save, names[i])
        os.makedirs(os.path.dirname(to_path), exist_ok=True)
        shutil.copyfile(from_path, to_path)
    qb.recheck(tid)
    flows.wait(lambda: (lambda t: t and t[0]["state"] == "pausedUP" and t[0]["progress"] == 1)(qb.info([tid])),
               what="cache recheck complete")
    return tid, save, names, meta


def dirs_of(paths):
    out = set(paths)
    for p in paths:
        d = os.path.dirname(p)
        while d:
            out.add(d)
            d = os.path.dirname(d)
    return out


def archive(tid, *extra):
    return LAB.archctl("archive", tid[:12], "--yes", "--json", *extra, timeout=300)


class Layouts(unittest.TestCase):
    def assert_archived(self, tid, name, names):
        """The archive copy: every file at the path the layout gives it, byte-identical to the
        cache's, the target complete and seeding without downloading a byte, nothing else in its
        save path, and no staging left in the route folders."""
        aq = LAB.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
        files = aq.files(tid)
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in files), files)
        self.assertEqual({f["index"]: f["name"] for f in files}, names, "the target has the source's layout")
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        cache_save = os.path.join(LAB.node("cache1")["qb_root"], name)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        for n in names.values():
            self.assertEqual(md5(os.path.join(target_save, n)), md5(os.path.join(cache_save, n)), n)
        self.assertEqual(set(flows.tree(target_save)) - {".archctl"}, dirs_of(names.values()), "nothing else on the target")
        flows.staging_empty(LAB, LAB.route)

    def evict_and_check(self, tid, name, names, *extra):
        cache_save = os.path.join(LAB.node("cache1")["qb_root"], name)
        rc, out, err = LAB.archctl("evict", tid[:12], "--from", "cache1", "--yes", "--json", *extra, timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["evicted"]["files_removed"], len(names), out)
        self.assertEqual(LAB.qb("cache1").info([tid]), [], "the cache torrent is gone")
        for n in names.values():
            self.assertFalse(os.path.exists(os.path.join(cache_save, n)), n)
        self.assertTrue(os.path.isdir(cache_save), "the save path itself stays")
        st = LAB.qb("archive1").files(tid)
        self.assertTrue(all(f["progress"] == 1 for f in st), st)

    def test_a_no_subfolder_multi_file_archive_extend_and_evict(self):
        name = "lay-nosub"
        tid, save, names, meta = seed_layout(name, ALIGNED, "NoSubfolder")
        self.assertEqual(sorted(names.values()), ["a.bin", "c.txt", "sub/b.bin"], "qB drops the root folder")
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["plan"]["layout"], {"source": "NoSubfolder", "target": "NoSubfolder"}, out)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12])
        self.assertEqual(rc, 0, err + out)
        self.assertIn("layout NoSubfolder on cache1, NoSubfolder on archive1", out)
        # A new target with file 0, then the rest into the existing target (its own layout).
        rc, out, err = archive(tid, "--files", "0")
        self.assertEqual(rc, 0, err + out)
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assert_archived(tid, name, names)
        # The archive's bytes proven by a piece check on its disk, at the layout's paths.
        self.evict_and_check(tid, name, names, "--verify-archive")
        # Back to the cache: the archive is the source now, its layout the new cache placement's.
        rc, out, err = LAB.archctl("unarchive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        cq = LAB.qb("cache1")
        flows.wait(lambda: cq.info([tid]) and all(f["progress"] == 1 for f in cq.files(tid)), what="cache complete again")
        self.assertEqual({f["index"]: f["name"] for f in cq.files(tid)}, names)
        self.assertEqual(cq.properties(tid)["total_downloaded"], 0)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        for n in names.values():
            self.assertEqual(md5(os.path.join(save, n)), md5(os.path.join(target_save, n)), n)
        flows.staging_empty(LAB, LAB.route)

    def test_b_subfolder_single_file_archive_and_evict(self):
        name = "lay-sub"
        tid, save, names, meta = seed_layout(name, {"movie.mkv": 60001}, "Subfolder", single="movie.mkv")
        self.assertEqual(names, {0: "movie/movie.mkv"}, "qB names the folder after the file, without its extension")
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assert_archived(tid, name, names)
        self.evict_and_check(tid, name, names)

    def test_c_an_over_long_name_cut_by_libtorrent(self):
        name = "lay-long"
        tid, save, names, meta = seed_layout(name, LONG, "Original")
        long_index = [i for i, p in meta.items() if LONG_STEM in p][0]
        self.assertEqual(len(os.path.basename(meta[long_index])), 250)
        self.assertEqual(names[long_index], "pay/" + "n" * 240 + ".bin", "libtorrent cuts at 240 bytes and keeps the extension")
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assert_archived(tid, name, names)

    def test_d_a_renamed_file_blocks_only_commands_that_touch_it(self):
        name = "lay-rename"
        tid, save, names, meta = seed_layout(name, ALIGNED, "Original")
        qb = LAB.qb("cache1")
        qb.post("torrents/renameFile", hash=tid, oldPath="pay/a.bin", newPath="pay/a-renamed.bin")
        flows.wait(lambda: any(f["name"] == "pay/a-renamed.bin" for f in qb.files(tid)), what="file 0 renamed")
        # Everything: refused, naming the file, its qB name, where it belongs, and the fix.
        rc, out, err = archive(tid)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "RENAMED_IN_QB", doc)
        self.assertIn("file 0 of 'pay' on cache1 is 'pay/a-renamed.bin' in qBittorrent but 'pay/a.bin' in the metainfo",
                      doc["error"]["message"])
        self.assertIn("--files", doc["error"].get("hint", ""))
        self.assertEqual(LAB.qb("archive1").info([tid]), [])
        # The other files: archived.
        rc, out, err = archive(tid, "--files", "1,2")
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
        files = {f["index"]: f for f in aq.files(tid)}
        self.assertEqual(files[0]["priority"], 0)
        self.assertTrue(files[1]["progress"] == 1 and files[2]["progress"] == 1, files)
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        for i in (1, 2):
            self.assertEqual(md5(os.path.join(target_save, meta[i])), md5(os.path.join(save, meta[i])))
        self.assertFalse(os.path.exists(os.path.join(target_save, "pay/a.bin")))
        flows.staging_empty(LAB, LAB.route)
        # Evict would delete the renamed file: refused with the words to fix it.
        rc, out, err = LAB.archctl("evict", tid[:12], "--from", "cache1", "--yes", "--json", timeout=300)
        self.assertNotEqual(rc, 0, err + out)
        self.assertIn("rename it back first", out + err)
        self.assertTrue(os.path.exists(os.path.join(save, "pay/a-renamed.bin")))

    def test_e_an_existing_target_in_another_layout_is_extended_in_its_own(self):
        # The cache keeps the metainfo's layout; the archive already holds file 0 of the torrent,
        # added there with NoSubfolder. The rest lands at the archive's paths, read at the cache's.
        name = "lay-mixed"
        tid, save, names, meta = seed_layout(name, ALIGNED, "Original")
        aq = LAB.qb("archive1")
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        os.makedirs(target_save, exist_ok=True)
        with open(os.path.join(LAB.dir, f"{name}.torrent"), "rb") as f:
            aq.add_torrent(f.read(), target_save, paused=True, layout="NoSubfolder")
        flows.wait(lambda: aq.info([tid]) and len(aq.files(tid) or []) == len(meta), what="archive lists the files")
        archive_names = {f["index"]: f["name"] for f in aq.files(tid)}
        self.assertEqual(archive_names[0], "a.bin")
        shutil.copyfile(os.path.join(save, names[0]), os.path.join(target_save, archive_names[0]))
        aq.file_prio(tid, [1, 2], 0)
        aq.recheck(tid)
        flows.wait(lambda: (lambda t, fs: t and t[0]["state"] in ("pausedUP", "stoppedUP") and fs[0]["progress"] == 1)(
            aq.info([tid]), aq.files(tid)), what="archive holds file 0")
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        plan = json.loads(out)["plan"]
        self.assertEqual(plan["layout"], {"source": "Original", "target": "NoSubfolder"}, out)
        self.assertEqual(plan["delta"]["files"], "1-2", out)
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        files = aq.files(tid)
        self.assertTrue(all(f["progress"] == 1 and f["priority"] > 0 for f in files), files)
        self.assertEqual({f["index"]: f["name"] for f in files}, archive_names)
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        for i in meta:
            self.assertEqual(md5(os.path.join(target_save, archive_names[i])), md5(os.path.join(save, names[i])), i)
        left = set(flows.tree(target_save)) - dirs_of(archive_names.values()) - {".archctl"}
        self.assertEqual({p for p in left if not p.endswith(".parts")}, set(), "nothing else on the target")
        flows.staging_empty(LAB, LAB.route)


if __name__ == "__main__":
    unittest.main(verbosity=2)
