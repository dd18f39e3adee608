"""Checks shared by the suites that archive torrents from real-world setups (test_names,
test_creators, test_temp_path): the archive copy is the cache's bytes, the target is complete,
seeding and downloaded nothing, and the route folders are empty again."""

import filecmp
import os

import flows


def lt_create(source_root, files, out, piece_length=16384, pad_files=False, comment=None):
    """A v1 .torrent made by python3-libtorrent from `files` (paths relative to source_root's
    parent, root folder first), with BEP 47 pad files when asked. Returns the qB id (v1 hash)."""
    import libtorrent as lt
    fs = lt.file_storage()
    base = os.path.dirname(source_root)
    for rel in files:
        fs.add_file(rel, os.path.getsize(os.path.join(base, rel)))
    flags = lt.create_torrent.v1_only
    if pad_files:
        flags |= lt.create_torrent.canonical_files  # a pad file after every file but the last
    t = lt.create_torrent(fs, piece_length, flags=flags)
    if comment:
        t.set_comment(comment)
    lt.set_piece_hashes(t, base)
    data = lt.bencode(t.generate())
    with open(out, "wb") as f:
        f.write(data)
    return str(lt.torrent_info(data).info_hash())


def assert_archived(tc, lab, tid, cache_save, target_name, rels, cache_node="cache1", archive_node="archive1"):
    """The torrent `tid` is complete and seeding on the archive below <qb_root>/<target_name>,
    every path in `rels` (relative to the save path) byte-identical to the cache's copy below
    `cache_save`, nothing downloaded, and the route folders empty."""
    aq = lab.qb(archive_node)
    t = aq.info([tid])
    tc.assertEqual(len(t), 1, "the archive lists the torrent")
    target_save = os.path.join(lab.node(archive_node)["qb_root"], target_name)
    tc.assertEqual(t[0]["save_path"].rstrip("/"), target_save)
    flows.wait(lambda: aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), what="target seeding")
    files = aq.files(tid)
    tc.assertTrue(all(f["progress"] == 1 for f in files if f["priority"] > 0), files)
    tc.assertEqual(aq.properties(tid)["total_downloaded"], 0, "the archive downloaded nothing")
    for rel in rels:
        placed = os.path.join(target_save, rel)
        tc.assertTrue(os.path.isfile(placed), placed)
        tc.assertTrue(filecmp.cmp(os.path.join(cache_save, rel), placed, shallow=False), f"{rel} differs")
    flows.staging_empty(lab, lab.route, nodes=(cache_node, archive_node))
    return target_save
