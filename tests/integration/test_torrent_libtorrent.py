"""archctl torrent show/create/verify cross-checked against libtorrent 2.0.8 (python3-libtorrent).

No services are needed: libtorrent makes and reads the torrents, archctl must agree with it on
hashes, qB ids, file indices (pads removed), sizes and piece ranges, and on which pieces fail
after single-byte corruptions.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import libtorrent as lt

ARCHCTL = os.environ.get("ARCHCTL_BIN", "archctl")
KINDS = {"v1": lt.create_torrent.v1_only, "v2": lt.create_torrent.v2_only, "hybrid": 0}
PAD = lt.file_storage.flag_pad_file


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_payload(root):
    """A tree with nested dirs, an empty file, a unicode name, files below 16 KiB, a file of
    exactly one piece (32 KiB at the automatic piece size), one piece + 1 byte, multi-piece files."""
    rnd = lambda n: os.urandom(n)
    write(os.path.join(root, "top.txt"), b"0123456789")
    write(os.path.join(root, "empty.bin"), b"")
    write(os.path.join(root, "sub", "dir", "deep.dat"), rnd(1 << 20))
    write(os.path.join(root, "sub", "small.txt"), b"small!")
    write(os.path.join(root, "ünïcödé ファイル.txt"), rnd(16))
    write(os.path.join(root, "one_piece.bin"), rnd(32768))
    write(os.path.join(root, "one_plus.bin"), rnd(32769))
    write(os.path.join(root, "big.bin"), rnd(3 * 1024 * 1024 + 12345))
    os.chmod(os.path.join(root, "sub", "small.txt"), 0o755)


def lt_make(source, kind, piece_size=0):
    fs = lt.file_storage()
    lt.add_files(fs, source)
    t = lt.create_torrent(fs, piece_size, flags=KINDS[kind])
    t.set_creator("lab")
    lt.set_piece_hashes(t, os.path.dirname(source))
    return lt.bencode(t.generate())


def archctl(*args):
    p = subprocess.run([ARCHCTL, *args], capture_output=True, timeout=120)
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return p.returncode, doc, p.stderr.decode(errors="replace")


def ctrunc_div(a, b):
    """C++ integer division (truncates toward zero), as qBittorrent computes piece ranges."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def lt_files(ti):
    """Payload files as qBittorrent indexes them: libtorrent's list without pad files."""
    fs = ti.files()
    L = ti.piece_length()
    out = []
    for i in range(fs.num_files()):
        if fs.file_flags(i) & PAD:
            continue
        off, size = fs.file_offset(i), fs.file_size(i)
        out.append({"path": fs.file_path(i).replace(os.sep, "/"), "size": size,
                    "piece_range": [off // L, ctrunc_div(off + size - 1, L)], "native": i})
    return out


def hex_or_none(ih, which):
    if which == "v1":
        return str(ih.v1) if ih.has_v1() else None
    return str(ih.v2) if ih.has_v2() else None


def parse_ranges(text):
    out = set()
    for item in filter(None, text.split(",")):
        a, _, b = item.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


class TorrentAgainstLibtorrent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="archctl-torrent-lt-")
        cls.save = os.path.join(cls.tmp, "save")
        cls.src = os.path.join(cls.save, "payload")
        make_payload(cls.src)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def assert_matches_lt(self, torrent_path, ti):
        rc, doc, err = archctl("torrent", "show", torrent_path, "--json")
        self.assertEqual(rc, 0, err)
        # The file list is in the document; stderr has the summary only, not a copy of every file.
        self.assertLessEqual(len(err.splitlines()), 8, err)
        self.assertNotIn("deep.dat", err)
        t = doc["torrent"]
        ih = ti.info_hashes()
        self.assertEqual(t["v1"], hex_or_none(ih, "v1"))
        self.assertEqual(t["v2"], hex_or_none(ih, "v2"))
        self.assertEqual(t["qb_id"], str(ih.get_best()))
        self.assertEqual(t["piece_length"], ti.piece_length())
        self.assertEqual(t["piece_count"], ti.num_pieces())
        self.assertEqual(t["total_size"], ti.total_size())
        self.assertEqual(t["name"], ti.name())
        expected = lt_files(ti)
        self.assertEqual([f["index"] for f in t["files"]], list(range(len(expected))))
        self.assertEqual([(f["path"], f["size"]) for f in t["files"]], [(f["path"], f["size"]) for f in expected])
        for ours, theirs in zip(t["files"], expected):
            self.assertEqual(ours["piece_range"], theirs["piece_range"], ours["path"])
        return t

    def test_show_matches_libtorrent_torrents(self):
        for kind in KINDS:
            with self.subTest(kind=kind):
                data = lt_make(self.src, kind)
                path = self.path(f"lt.{kind}.torrent")
                write(path, data)
                t = self.assert_matches_lt(path, lt.torrent_info(path))
                self.assertEqual(t["kind"], kind)
                self.assertEqual(t["piece_length"], 32768)  # libtorrent's automatic size for ~4.4 MB

    def test_show_single_file_torrents(self):
        for kind in KINDS:
            with self.subTest(kind=kind):
                path = self.path(f"single.{kind}.torrent")
                write(path, lt_make(os.path.join(self.src, "big.bin"), kind))
                self.assert_matches_lt(path, lt.torrent_info(path))

    def test_libtorrent_loads_what_archctl_creates(self):
        for kind in KINDS:
            for source in (self.src, os.path.join(self.src, "one_plus.bin")):
                with self.subTest(kind=kind, source=os.path.basename(source)):
                    out = self.path(f"ours.{kind}.{os.path.basename(source)}.torrent")
                    rc, doc, err = archctl("torrent", "create", source, "-o", out, "--kind", kind, "--json")
                    self.assertEqual(rc, 0, err)
                    ti = lt.torrent_info(out)
                    t = self.assert_matches_lt(out, ti)
                    self.assertEqual(doc["torrent"]["qb_id"], str(ti.info_hashes().get_best()))
                    self.assertEqual(t["kind"], kind)
                    if kind != "v1":
                        # Same order, pads and attributes as libtorrent 2.0.8: the same info dict.
                        theirs = lt.torrent_info(lt.bencode(lt.bdecode(lt_make(source, kind))))
                        self.assertEqual(str(ti.info_hashes().get_best()), str(theirs.info_hashes().get_best()))
                    rc, doc, err = archctl("torrent", "verify", out, os.path.dirname(source), "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertTrue(doc["verified"])

    def test_create_piece_length_option(self):
        out = self.path("ours.64k.torrent")
        rc, _, err = archctl("torrent", "create", self.src, "-o", out, "--piece-length", "64K")
        self.assertEqual(rc, 0, err)
        self.assertEqual(lt.torrent_info(out).piece_length(), 65536)
        rc, doc, _ = archctl("torrent", "create", self.src, "-o", out, "--piece-length", "3000", "--json")
        self.assertEqual(rc, 1)
        self.assertEqual(doc["error"]["code"], "TORRENT_CREATE")

    def lt_corrupt_pieces(self, original, corrupted_src, kind):
        """Pieces whose libtorrent-computed hashes differ between the original and corrupted data."""
        ti_a = lt.torrent_info(original)
        b = lt.bdecode(lt_make(corrupted_src, kind, ti_a.piece_length()))
        with open(original, "rb") as f:
            a = lt.bdecode(f.read())
        L = ti_a.piece_length()
        bad = set()
        if kind != "v2":
            pa, pb = a[b"info"][b"pieces"], b[b"info"][b"pieces"]
            bad.update(i for i in range(len(pa) // 20) if pa[i * 20:i * 20 + 20] != pb[i * 20:i * 20 + 20])
        if kind != "v1":
            fa, fb = lt.torrent_info(a).files(), lt.torrent_info(b).files()
            la, lb = a.get(b"piece layers", {}), b.get(b"piece layers", {})
            for i in range(fa.num_files()):
                if fa.file_flags(i) & PAD or fa.file_size(i) == 0:
                    continue
                ra, rb = fa.root(i).to_bytes(), fb.root(i).to_bytes()
                first = fa.file_offset(i) // L
                if ra == rb:
                    continue
                if fa.file_size(i) <= L:
                    bad.add(first)
                    continue
                xa, xb = la[ra], lb[rb]
                bad.update(first + j for j in range(len(xa) // 32) if xa[j * 32:j * 32 + 32] != xb[j * 32:j * 32 + 32])
        return bad

    def test_verify_agrees_with_libtorrent_after_corruption(self):
        corruptions = [("big.bin", 0), ("sub/dir/deep.dat", 500000), ("one_plus.bin", 32768), ("top.txt", 9)]
        for kind in KINDS:
            with self.subTest(kind=kind):
                save = self.path(f"corrupt-{kind}")
                shutil.copytree(self.save, save)
                src = os.path.join(save, "payload")
                original = self.path(f"orig.{kind}.torrent")
                write(original, lt_make(src, kind))
                for rel, offset in corruptions:
                    with open(os.path.join(src, rel), "r+b") as f:
                        f.seek(offset)
                        byte = f.read(1)
                        f.seek(offset)
                        f.write(bytes([byte[0] ^ 0xFF]))
                expected = self.lt_corrupt_pieces(original, src, kind)
                # Four corruptions in four pieces; in v1 (readdir order, pieces span files) two of
                # them may share a piece.
                if kind == "v1":
                    self.assertIn(len(expected), (2, 3, 4))
                else:
                    self.assertEqual(len(expected), 4)
                rc, doc, err = archctl("torrent", "verify", original, save, "--pieces", "--json")
                self.assertEqual(rc, 1, err)
                self.assertEqual(doc["error"]["code"], "VERIFY_FAILED")
                self.assertEqual(parse_ranges(doc["pieces"]["corrupt"]), expected)
                failed = {f["path"] for f in doc["files"] if f["verdict"] != "complete"}
                self.assertTrue({"payload/" + rel for rel, _ in corruptions} <= failed)
                # A selection without the corrupted files verifies (v2/hybrid: pieces never span files).
                if kind != "v1":
                    t = self.assert_matches_lt(original, lt.torrent_info(original))
                    clean = [f["index"] for f in t["files"] if f["path"] not in {"payload/" + r for r, _ in corruptions}]
                    rc, doc, err = archctl("torrent", "verify", original, save, "--files", ",".join(map(str, clean)), "--json")
                    self.assertEqual(rc, 0, err)
                shutil.rmtree(save)


if __name__ == "__main__":
    unittest.main(verbosity=2)
