#!/usr/bin/python3
"""v1 boundary pieces without a source part file (docs/design.md "Partfiles and piece boundaries", issue 15 item 4): a v1 torrent
complete on the cache has no part file, because the files that share pieces with the request
are complete on the cache's disk. archctl builds the part file the new target needs from those
files' bytes (each piece checked by SHA-1 on the cache first), carries it, and the target's
recheck verifies the selection with nothing downloaded. Where the bytes are nowhere, plan and
archive refuse, naming the pieces and files.

Payload: five files of odd sizes in 32 KiB pieces, made with python3-libtorrent as a v1 torrent
without pad files, so most pieces span two files. Cases: --files 0 (a), files skipped after
completion (b), bytes nowhere (c), a file range (d), bytes on disk that do not verify (e), a crash
after the build (f), disk and part file in one job (g, a real part file from a download), v1 with
pad files (h), 2,000 small files (i), unarchive from the archive's built part file (j)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab import torrents  # noqa: E402

import libtorrent as lt  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")], extra_qb=1)
setUpModule = LAB.set_up
PIECE = 32768
SIZES = {"a.bin": 40001, "b.bin": 30001, "c.bin": 50003, "d.bin": 20005, "e.bin": 45007}


def v1_resource(name):
    """The payload below <cache qb_root>/<name>/pay, its v1 torrent (lt's own file order), seeded
    complete on cache1. Returns (qB id, cache save path, [(path, size, offset)] by file index)."""
    save = os.path.join(LAB.node("cache1")["qb_root"], name)
    os.makedirs(save, exist_ok=True)
    root = torrents.make_payload(save, "pay", SIZES)
    made = torrents.make_torrent(root, "v1", out_path=os.path.join(LAB.dir, f"{name}.torrent"), piece_size=PIECE)
    ti = lt.torrent_info(made["bytes"])
    fs = ti.files()
    files = [(fs.file_path(i), fs.file_size(i), fs.file_offset(i)) for i in range(fs.num_files())]
    assert not any(fs.file_flags(i) & fs.flag_pad_file for i in range(fs.num_files())), "no pad files"
    assert ti.piece_length() == PIECE
    tid = flows.seed_cache(LAB, "cache1", made["path"], save)
    return tid, save, files


def boundary_pieces(files, union):
    """Pieces holding bytes of a file in `union` and of a file outside it."""
    out = []
    total = sum(size for _, size, _ in files)
    for p in range((total + PIECE - 1) // PIECE):
        lo, hi = p * PIECE, min((p + 1) * PIECE, total)
        touching = {i for i, (_, size, off) in enumerate(files) if size and off < hi and off + size > lo}
        if touching & union and touching - union:
            out.append(p)
    return out


def events_of(job):
    with open(os.path.join(LAB.state_dir, "jobs", job, "events.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if "type" in r]  # the journal's version line has none


def read(path):
    with open(path, "rb") as f:
        return f.read()


class PartfileBuild(unittest.TestCase):
    def archive_and_check(self, name, tid, save, files, union, args=(), from_disk=None):
        res = tid[:12]
        rc, out, err = LAB.archctl("plan", "archive", res, *args, "--json")
        self.assertEqual(rc, 0, err + out)
        plan = json.loads(out)["plan"]
        self.assertEqual(plan["partfile"]["need"], "carry_source")
        self.assertEqual(plan["partfile"]["boundary_pieces"], boundary_pieces(files, union))
        self.assertEqual(plan["partfile"]["from_partfile"], [])
        if from_disk is not None:
            self.assertEqual(plan["partfile"]["from_disk"], from_disk)
        # Piece by piece: every neighbour's bytes of every boundary piece, from the cache's disk.
        expected = []
        for p in boundary_pieces(files, union):
            lo, hi = p * PIECE, (p + 1) * PIECE
            expected += [{"piece": p, "file": i, "from": "disk"} for i, (_, size, off) in enumerate(files)
                         if i not in union and size and off < hi and off + size > lo]
        self.assertEqual(plan["partfile"]["bytes"], expected)
        rc, text, err = LAB.archctl("plan", "archive", res, *args)
        self.assertEqual(rc, 0, err + text)
        self.assertIn("from the complete files on its disk", text)
        self.assertNotIn("from its part file", text)

        rc, out, err = LAB.archctl("archive", res, *args, "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["job"]["outcome"], "done")
        # The job built the part file from the cache's disk: the cache torrent was never stopped.
        built = [e for e in events_of(flows.job_of(LAB, tid)) if e["type"] == "partfile_built"]
        self.assertEqual(len(built), 1, built)
        self.assertEqual(built[0]["pieces"], boundary_pieces(files, union))
        self.assertEqual(built[0]["from_partfile"], [])
        if from_disk is not None:
            self.assertEqual(built[0]["from_disk"], from_disk)

        aq = LAB.qb("archive1")
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="target seeding")
        t = aq.info([tid])[0]
        self.assertEqual(t["amount_left"], 0, t)
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0, "nothing was downloaded")
        by_index = {f["index"]: f for f in aq.files(tid)}
        for i, (path, size, _) in enumerate(files):
            placed = os.path.join(target_save, path)
            if i in union:
                self.assertEqual(by_index[i]["progress"], 1, by_index[i])
                self.assertGreater(by_index[i]["priority"], 0)
                self.assertEqual(read(placed), read(os.path.join(save, path)), f"{path} byte-identical")
            else:
                self.assertEqual(by_index[i]["priority"], 0, by_index[i])
                self.assertTrue(not os.path.exists(placed) or os.path.getsize(placed) == 0,
                                f"{path} is not on the target")
        self.assertTrue(os.path.isfile(os.path.join(target_save, f".{tid}.parts")), "the target keeps its part file")
        # Nothing left behind: no staging, no temp file, the cache untouched and still seeding.
        flows.staging_empty(LAB, LAB.route)
        for root in (target_save, save):
            for dirpath, _, names in os.walk(root):
                self.assertFalse([n for n in names if "archctl-tmp" in n], dirpath)
        self.assertFalse(os.path.exists(os.path.join(save, f".{tid}.parts")), "no part file appears on the cache")
        cq = LAB.qb("cache1")
        self.assertTrue(all(f["progress"] == 1 for f in cq.files(tid)))
        return aq

    def test_a_one_file_of_a_complete_v1_torrent(self):
        tid, save, files = v1_resource("pb-one")
        self.assertFalse(os.path.exists(os.path.join(save, f".{tid}.parts")))
        self.archive_and_check("pb-one", tid, save, files, {0}, args=("--files", "0"), from_disk=[1])

    def test_b_files_skipped_on_the_cache_after_completion(self):
        tid, save, files = v1_resource("pb-skip")
        cq = LAB.qb("cache1")
        cq.file_prio(tid, [1, 3], 0)
        flows.wait(lambda: [f["priority"] for f in cq.files(tid)] == [1, 0, 1, 0, 1], what="files 1 and 3 skipped")
        self.assertTrue(os.path.isfile(os.path.join(save, files[1][0])), "a skipped file stays on disk")
        union = {0, 2, 4}
        self.archive_and_check("pb-skip", tid, save, files, union, from_disk=[1, 3])

    def test_c_bytes_that_are_nowhere_refuse_with_the_pieces_and_files(self):
        # The skipped file is deleted behind qBittorrent's back: it still reports every piece
        # (a recheck would fail the shared pieces, and with them the requested files), and
        # there is no part file. Neither plan nor archive may go ahead.
        tid, save, files = v1_resource("pb-gone")
        cq = LAB.qb("cache1")
        cq.file_prio(tid, [1], 0)
        flows.wait(lambda: cq.files(tid)[1]["priority"] == 0, what="file 1 skipped")
        os.remove(os.path.join(save, files[1][0]))
        union = {0, 2, 3, 4}
        pieces = ", ".join(str(p) for p in boundary_pieces(files, union))
        partfile = os.path.join(save, f".{tid}.parts")
        want = (f"PARTFILE_UNSUPPORTED: boundary piece(s) {pieces} need bytes of file(s) 1 that 'cache1' has neither "
                f"complete on its disk nor in its part file '{partfile}'")
        for command in (("plan", "archive"), ("archive",)):
            extra = ("--yes",) if command == ("archive",) else ()
            rc, out, err = LAB.archctl(*command, tid[:12], *extra, "--json", timeout=120)
            self.assertEqual(rc, 1, err + out)
            self.assertEqual(json.loads(out)["error"]["message"], want)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", timeout=120)
        self.assertEqual(rc, 1)
        self.assertIn(want, err + out)
        self.assertIn("hint: 'cache1' no longer holds those bytes: recheck the torrent there in qBittorrent, then request only "
                      "files that share no piece with file(s) 1", err + out)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing added to the archive")
        self.assertFalse(os.path.exists(os.path.join(LAB.node("archive1")["qb_root"], "pb-gone")))

    def test_f_a_crash_right_after_the_build_is_resumed(self):
        # Killed once the part file is durable in the job, before stage records it: resume builds
        # it again (same bytes) and finishes; no temp file, nothing downloaded.
        tid, save, files = v1_resource("pb-crash")
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0", "--yes", "--json",
                                   env={"ARCHCTL_TEST_CRASH_AT": "partfile.built"}, timeout=300)
        self.assertEqual(rc, 137, err + out)
        rc, out, err = LAB.archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        target_save = os.path.join(LAB.node("archive1")["qb_root"], "pb-crash")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="target seeding")
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        self.assertEqual(aq.files(tid)[0]["progress"], 1)
        self.assertEqual(read(os.path.join(target_save, files[0][0])), read(os.path.join(save, files[0][0])))
        built = [e for e in events_of(flows.job_of(LAB, tid)) if e["type"] == "partfile_built"]
        self.assertEqual(len(built), 1, "the event of the build that was recorded")
        flows.staging_empty(LAB, LAB.route)
        for root in (target_save, save):
            for dirpath, _, names in os.walk(root):
                self.assertFalse([n for n in names if "archctl-tmp" in n], dirpath)

    def test_g_bytes_from_the_disk_and_from_the_cache_part_file_in_one_job(self):
        # The cache downloaded from a seeder with b.bin skipped, so libtorrent keeps b's share of
        # pieces 6 and 9 in a real part file; d.bin was skipped only after it completed, so it is
        # on the disk. The union {a, c} needs both: b's bytes from the part file (the cache
        # torrent is stopped while it is read, then started again), d's from the disk.
        name = "pb-mixed"
        layout = {"pay1/a.bin": 100001, "pay1/b.bin": 50001, "pay1/c.bin": 70001, "pay1/d.bin": 30001}
        seeder = LAB.info["extra_qb"][0]
        src = os.path.join(seeder["save_path"], name)
        flows.write_payload(src, layout, seed=71)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        flows.create_torrent(os.path.join(src, "pay1"), tfile, kind="v1", piece_length=16384)
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
        flows.wait(lambda: (lambda fs: fs and all(fs[i]["progress"] == 1 for i in (0, 2, 3)))(cq.files(tid)),
                   timeout=60, what="cache downloaded a, c and d")
        LAB.qb("extra1").pause(tid)
        cq.file_prio(tid, [3], 0)
        flows.wait(lambda: cq.files(tid)[3]["priority"] == 0, what="d skipped after completion")
        parts = os.path.join(save, f".{tid}.parts")
        flows.wait(lambda: os.path.exists(parts), what="a real part file")
        self.assertTrue(os.path.isfile(os.path.join(save, "pay1", "d.bin")))
        self.assertFalse(os.path.exists(os.path.join(save, "pay1", "b.bin")))

        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        plan = json.loads(out)["plan"]
        self.assertEqual(plan["union"]["files"], "0,2")
        self.assertEqual(plan["partfile"]["boundary_pieces"], [6, 9, 13])
        self.assertEqual(plan["partfile"]["from_partfile"], [1])
        self.assertEqual(plan["partfile"]["from_disk"], [3])
        self.assertEqual(plan["partfile"]["bytes"], [{"piece": 6, "file": 1, "from": "partfile"},
                                                     {"piece": 9, "file": 1, "from": "partfile"},
                                                     {"piece": 13, "file": 3, "from": "disk"}])
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        target_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="target seeding")
        self.assertEqual(aq.info([tid])[0]["amount_left"], 0)
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        by_index = {f["index"]: f for f in aq.files(tid)}
        for i, rel in enumerate(layout):
            placed = os.path.join(target_save, rel)
            if i in (0, 2):
                self.assertEqual(by_index[i]["progress"], 1)
                self.assertEqual(read(placed), read(os.path.join(save, rel)))
            else:
                self.assertEqual(by_index[i]["priority"], 0)
                self.assertTrue(not os.path.exists(placed) or os.path.getsize(placed) == 0, placed)
        built = [e for e in events_of(flows.job_of(LAB, tid)) if e["type"] == "partfile_built"]
        self.assertEqual((built[0]["from_partfile"], built[0]["from_disk"]), ([1], [3]))
        # The cache torrent runs again, its part file untouched.
        flows.wait(lambda: cq.info([tid])[0]["state"] not in ("pausedUP", "stoppedUP", "pausedDL", "stoppedDL"),
                   what="the cache torrent started again")
        self.assertTrue(os.path.exists(parts))
        flows.staging_empty(LAB, LAB.route)

    def test_h_v1_with_pad_files_needs_no_part_file(self):
        # libtorrent's v1 with pad files: every file starts on a piece, so no piece is shared and
        # no part file is built or carried; the pad files are not payload.
        name = "pb-pad"
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        os.makedirs(save, exist_ok=True)
        root = torrents.make_payload(save, "pay", SIZES)
        fs = lt.file_storage()
        lt.add_files(fs, root)
        t = lt.create_torrent(fs, PIECE, flags=lt.create_torrent.v1_only | lt.create_torrent.canonical_files)
        lt.set_piece_hashes(t, save)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        with open(tfile, "wb") as f:
            f.write(lt.bencode(t.generate()))
        ti = lt.torrent_info(tfile)
        self.assertTrue(any(ti.files().file_flags(i) & ti.files().flag_pad_file for i in range(ti.files().num_files())))
        tid = flows.seed_cache(LAB, "cache1", tfile, save)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", "0", "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["plan"]["partfile"]["need"], "none")
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="target seeding")
        self.assertEqual(aq.properties(tid)["total_downloaded"], 0)
        files = aq.files(tid)
        self.assertEqual(files[0]["progress"], 1)
        self.assertFalse(os.path.exists(os.path.join(LAB.node("archive1")["qb_root"], name, f".{tid}.parts")))
        flows.staging_empty(LAB, LAB.route)

    def test_i_two_thousand_small_files(self):
        # 2,000 files of a few hundred bytes: a 32 KiB piece holds about a hundred of them, so a
        # range request's edge pieces need the bytes of many neighbours, all on the cache's disk.
        name = "pb-many"
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        sizes = {f"d{i // 100:02d}/f{i:04d}.bin": 200 + (i * 37) % 300 for i in range(2000)}
        root = torrents.make_payload(save, "pay", sizes)
        made = torrents.make_torrent(root, "v1", out_path=os.path.join(LAB.dir, f"{name}.torrent"), piece_size=PIECE)
        ti = lt.torrent_info(made["bytes"])
        fs = ti.files()
        files = [(fs.file_path(i), fs.file_size(i), fs.file_offset(i)) for i in range(fs.num_files())]
        tid = flows.seed_cache(LAB, "cache1", made["path"], save)
        union = set(range(300, 1700))
        pieces = boundary_pieces(files, union)
        self.assertEqual(len(pieces), 2)
        neighbours = sorted({i for p in pieces for i, (_, size, off) in enumerate(files)
                             if i not in union and off < (p + 1) * PIECE and off + size > p * PIECE})
        self.assertGreater(len(neighbours), 20)
        self.archive_and_check(name, tid, save, files, union, args=("--files", "300-1699"), from_disk=neighbours)

    def test_j_back_to_an_empty_cache_from_the_archive_part_file(self):
        # The archive holds file 0 and the part file archctl built for it; the cache copy is
        # dropped. Unarchive takes file 1's share of piece 0 from the archive's part file (the
        # archive torrent is stopped while it is read, then seeds again) and the new cache
        # placement verifies with nothing downloaded.
        tid, save, files = v1_resource("pb-back")
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="archive seeding")
        original = read(os.path.join(save, files[0][0]))
        LAB.qb("cache1").delete(tid, delete_files=True)
        flows.wait(lambda: not os.path.exists(os.path.join(save, files[0][0])), what="cache emptied")
        rc, out, err = LAB.archctl("plan", "unarchive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        plan = json.loads(out)["plan"]
        self.assertEqual(plan["partfile"]["need"], "carry_source")
        self.assertEqual(plan["partfile"]["bytes"], [{"piece": 0, "file": 1, "from": "partfile"}])
        rc, out, err = LAB.archctl("unarchive", tid[:12], "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        cq = LAB.qb("cache1")
        flows.wait(lambda: cq.info([tid]) and cq.info([tid])[0]["state"] in ("stalledUP", "uploading"),
                   timeout=60, what="cache seeding again")
        self.assertEqual(cq.properties(tid)["total_downloaded"], 0)
        by_index = {f["index"]: f for f in cq.files(tid)}
        self.assertEqual(by_index[0]["progress"], 1)
        self.assertTrue(all(by_index[i]["priority"] == 0 for i in range(1, len(files))))
        self.assertEqual(read(os.path.join(save, files[0][0])), original)
        flows.wait(lambda: aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="the archive torrent seeds again")
        flows.staging_empty(LAB, LAB.route)

    def test_e_neighbour_bytes_that_do_not_verify_are_refused_on_the_cache(self):
        # The skipped file is on disk at its size but with other bytes: each built piece is
        # checked by SHA-1 on the cache, so nothing is moved and the archive gets nothing.
        tid, save, files = v1_resource("pb-wrong")
        cq = LAB.qb("cache1")
        cq.file_prio(tid, [1], 0)
        flows.wait(lambda: cq.files(tid)[1]["priority"] == 0, what="file 1 skipped")
        path = os.path.join(save, files[1][0])
        data = bytearray(read(path))
        data[0] ^= 0xFF
        data[-1] ^= 0xFF
        with open(path, "r+b") as f:
            f.write(bytes(data))
        union = {0, 2, 3, 4}
        pieces = ", ".join(str(p) for p in boundary_pieces(files, union))
        partfile = os.path.join(save, f".{tid}.parts")
        want = (f"PARTFILE_UNSUPPORTED: boundary piece(s) {pieces} need bytes of file(s) 1 that 'cache1' has neither "
                f"complete on its disk nor in its part file '{partfile}' (with the bytes on its disk, piece(s) {pieces} "
                f"do not match the torrent)")
        for command in (("plan", "archive"), ("archive", "--yes")):
            rc, out, err = LAB.archctl(*command, tid[:12], "--json", timeout=120)
            self.assertEqual(rc, 1, err + out)
            self.assertEqual(json.loads(out)["error"]["message"], want)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing added to the archive")
        flows.staging_empty(LAB, LAB.route)

    def test_d_a_file_range_of_a_complete_v1_torrent(self):
        tid, save, files = v1_resource("pb-range")
        self.archive_and_check("pb-range", tid, save, files, {1, 2}, args=("--files", "1-2"), from_disk=[0, 3])


if __name__ == "__main__":
    unittest.main(verbosity=2)
