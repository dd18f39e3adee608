"""Test payloads and .torrent files (v1, v2, hybrid) made with python3-libtorrent.

The sample payload mirrors the one in the lab notes: a zero-length file, a nested directory, a
Unicode (NFC) name, a multi-piece file. Content is random, so hashes differ per run.
"""

import os

import libtorrent as lt

KINDS = ("v1", "v2", "hybrid")

SAMPLE_FILES = {
    "top.txt": 10,
    "empty.bin": 0,
    "sub/dir/deep.dat": 256 * 1024,
    "sub/small.txt": 6,
    "ünïcödé ファイル.txt": 16,
    "big.bin": 1024 * 1024 + 12345,
}


def make_payload(parent, name="payload", files=None):
    """Write the payload directory `parent/name`; returns its path."""
    root = os.path.join(parent, name)
    for rel, size in (files or SAMPLE_FILES).items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
    return root


def make_torrent(payload_dir, kind, out_path=None, piece_size=0):
    """Build a .torrent of `payload_dir` (kind: v1, v2 or hybrid).

    Returns a dict: bytes, v1 (40 hex or ""), v2 (64 hex or ""), id (qBittorrent's id: the
    first 40 hex of v2 when there is one, else v1), path (when out_path is given)."""
    flags = {"v1": lt.create_torrent.v1_only, "v2": lt.create_torrent.v2_only, "hybrid": 0}[kind]
    fs = lt.file_storage()
    lt.add_files(fs, payload_dir)
    t = lt.create_torrent(fs, piece_size, flags=flags)
    t.set_creator("archctl-lab")
    lt.set_piece_hashes(t, os.path.dirname(payload_dir))
    data = lt.bencode(t.generate())
    ti = lt.torrent_info(data)
    ih = ti.info_hashes()
    v1 = str(ih.v1) if ih.has_v1() else ""
    v2 = str(ih.v2) if ih.has_v2() else ""
    out = {"bytes": data, "v1": v1, "v2": v2, "id": v2[:40] if v2 else v1, "kind": kind}
    if out_path:
        with open(out_path, "wb") as f:
            f.write(data)
        out["path"] = out_path
    return out
