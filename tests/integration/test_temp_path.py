#!/usr/bin/python3
"""qBittorrent's "Keep incomplete torrents in" (temp_path_enabled / temp_path) on the cache, on
real services: an incomplete torrent keeps its files in its download_path (content_path points
there) until it completes. Archiving its complete files reads them there; the archive copy is
the cache's bytes, complete and seeding, and the cache torrent is untouched (still incomplete,
still in its download path). A download path outside the node's qb_root is refused by plan and
archive, naming the folder and the config key."""

import filecmp
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
import placed  # noqa: E402
from lab import lab as labmod  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

# Hybrid torrents pad every file to a piece boundary: a.bin and b.txt complete on their own while
# c.bin is missing.
LAYOUT = {"pay/a.bin": 70001, "pay/sub/b.txt": 9, "pay/c.bin": 50000}
PRESENT = ["pay/a.bin", "pay/sub/b.txt"]


def progress(tid, node="cache1"):
    return {f["name"]: f["progress"] for f in LAB.qb(node).files(tid)}


def indexes(tid, names):
    """The file indexes of `names` (v2 trees sort the files, so they are not LAYOUT's order)."""
    return ",".join(str(f["index"]) for f in LAB.qb("cache1").files(tid) if f["name"] in names)


def add_incomplete(name, download_path, seed):
    """The torrent of LAYOUT added to the cache with its save path below qb_root and its data in
    `download_path`, where only PRESENT exist; rechecked, so qB knows a.bin and b.txt complete
    and c.bin missing. Returns (qB id, save path, download path)."""
    cq = LAB.qb("cache1")
    cq.set_preferences({"temp_path_enabled": True, "temp_path": download_path})
    full = os.path.join(LAB.dir, f"{name}-full")
    flows.write_payload(full, LAYOUT, seed=seed)
    tfile = os.path.join(LAB.dir, f"{name}.torrent")
    info = flows.create_torrent(os.path.join(full, "pay"), tfile, kind="hybrid", piece_length=32768)
    tid = info["qb_id"]
    for rel in PRESENT:
        dest = os.path.join(download_path, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(os.path.join(full, rel), "rb") as src, open(dest, "wb") as out:
            out.write(src.read())
    save = os.path.join(LAB.node("cache1")["qb_root"], name)
    with open(tfile, "rb") as f:
        body, ctype = labmod._multipart({"savepath": save, "autoTMM": "false", "paused": "true", "stopped": "true",
                                         "contentLayout": "Original", "useDownloadPath": "true",
                                         "downloadPath": download_path},
                                        [("torrents", f"{name}.torrent", f.read())])
    cq.call("POST", "torrents/add", body=body, content_type=ctype)
    flows.wait(lambda: cq.info([tid]), what="torrent listed")
    cq.recheck(tid)

    def settled():
        t = cq.info([tid])
        return t and t[0]["state"] == "pausedDL" and progress(tid) == {"pay/a.bin": 1, "pay/sub/b.txt": 1, "pay/c.bin": 0}
    flows.wait(settled, what="cache recheck: a.bin and b.txt complete, c.bin missing")
    t = cq.info([tid])[0]
    assert t["download_path"].rstrip("/") == download_path, t
    assert t["content_path"].startswith(download_path + "/"), t
    return tid, full, download_path


class TempPath(unittest.TestCase):
    def test_a_archive_complete_files_of_an_incomplete_torrent(self):
        name = "temp-in-root"
        download = os.path.join(LAB.node("cache1")["qb_root"], "incomplete")
        tid, full, download = add_incomplete(name, download, 701)
        cq = LAB.qb("cache1")
        before = {rel: flows.stat_of(os.path.join(download, rel)) for rel in PRESENT}
        sel = indexes(tid, PRESENT)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", sel, "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["source_data_path"], download)
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", sel)
        self.assertEqual(rc, 0, err + out)
        self.assertIn(f"files read from qBittorrent's incomplete-downloads folder {download}", out + err)
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", sel, "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["job"]["outcome"], "done")
        # The cache's bytes are the ones in its download path (the full payload is the reference).
        placed.assert_archived(self, LAB, tid, full, name, PRESENT)
        files = {f["name"]: f for f in LAB.qb("archive1").files(tid)}
        self.assertEqual({n: f["priority"] > 0 for n, f in files.items()},
                         {"pay/a.bin": True, "pay/sub/b.txt": True, "pay/c.bin": False})
        self.assertEqual([files[n]["progress"] for n in PRESENT], [1, 1])
        self.assertFalse(os.path.exists(os.path.join(LAB.node("archive1")["qb_root"], name, "pay", "c.bin")))
        # The cache torrent is untouched: still incomplete, still in its download path, same files.
        t = cq.info([tid])[0]
        self.assertEqual(t["state"], "pausedDL")
        self.assertTrue(t["content_path"].startswith(download + "/"), t)
        self.assertEqual(progress(tid), {"pay/a.bin": 1, "pay/sub/b.txt": 1, "pay/c.bin": 0})
        self.assertEqual({rel: flows.stat_of(os.path.join(download, rel)) for rel in PRESENT}, before)
        self.assertFalse(os.path.exists(os.path.join(LAB.node("cache1")["qb_root"], name, "pay")),
                         "nothing was written to the cache's save path")

    def test_b_download_path_outside_qb_root_refused(self):
        name = "temp-outside"
        download = os.path.join(LAB.dir, "outside-incomplete")
        tid, _, download = add_incomplete(name, download, 702)
        sel = indexes(tid, ["pay/a.bin"])
        for argv in (("plan", "archive", tid[:12], "--files", sel), ("archive", tid[:12], "--files", sel, "--yes")):
            rc, out, err = LAB.archctl(*argv)
            self.assertEqual(rc, 1, err + out)
            self.assertIn(f"are in qBittorrent's incomplete-downloads folder '{download}', outside the node's qb_root", err)
            self.assertIn("nodes.cache1.qb_root", err)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing reached the archive")
        flows.staging_empty(LAB, LAB.route)

    def test_c_torrent_completing_during_the_job_stops_it_cleanly(self):
        # qBittorrent moves the files to the save path when the torrent completes: the job finds
        # its source moved before it reads anything, fails stale and is compensated; a rerun
        # plans again and reads the files from the save path.
        name = "temp-completes"
        download = os.path.join(LAB.node("cache1")["qb_root"], "incomplete2")
        tid, full, download = add_incomplete(name, download, 703)
        cq = LAB.qb("cache1")
        sel = indexes(tid, PRESENT)
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--files", sel, "--yes", "--json")
        with open(os.path.join(full, "pay/c.bin"), "rb") as src, open(os.path.join(download, "pay/c.bin"), "wb") as out:
            out.write(src.read())
        cq.recheck(tid)
        save = os.path.join(LAB.node("cache1")["qb_root"], name)
        flows.wait(lambda: (lambda t: t and t[0]["progress"] == 1 and t[0]["content_path"].startswith(save + "/")
                            and not t[0]["state"].startswith(("checking", "moving")))(cq.info([tid])),
                   timeout=60, what="qBittorrent moved the completed torrent to its save path")
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "STALE_STATE", out)
        self.assertIn(f"moved from '{download}' to '{save}'", doc["error"]["message"])
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing was added to the archive")
        flows.staging_empty(LAB, LAB.route)
        for rel in LAYOUT:
            self.assertTrue(filecmp.cmp(os.path.join(full, rel), os.path.join(save, rel), shallow=False), rel)
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", sel, "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        placed.assert_archived(self, LAB, tid, full, name, PRESENT)


if __name__ == "__main__":
    unittest.main()
