#!/usr/bin/python3
"""The torrent read from qBittorrent's BT_backup, on real services: with
nodes.<name>.qbittorrent.bt_backup set, archive reads the source torrent's .torrent there through
the node and never asks torrents/export (which holds qBittorrent's web interface for a minute and
more on a large v2 or hybrid torrent). qBittorrent's copy keeps no trackers or web seeds (archctl
writes today's in) and, for v2 and hybrid, no piece layers: the target's full recheck rebuilds
them from the data, so the archive copy then exports the original torrent's info and layers. A
copy that is missing or of another torrent is set aside with a warning and the torrent exported.
Counted from the -vv request log."""

import os
import shutil
import sys
import unittest

import libtorrent as lt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
LAYOUT = {"pay/a.bin": 300000, "pay/sub/b.bin": 200000 + 7, "pay/c.txt": 12}
COUNTER = [0]


def set_up():
    LAB.set_up()
    write_config()


setUpModule = set_up


def write_config(node_exec=None):
    with open(LAB.config_path, "w") as f:
        f.write(LAB.lab.config_text(node_exec=node_exec, bt_backup=("cache1", "archive1")))


def new_resource(kind="hybrid"):
    COUNTER[0] += 1
    name = f"btb-{kind}-{COUNTER[0]}"
    _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 900 + COUNTER[0], kind=kind)
    with open(tfile, "rb") as f:
        return tid, f.read()


def requests(err, endpoint):
    return sum(1 for line in err.splitlines() if f"/api/v2/{endpoint}" in line)


def kept_copy(tid):
    with open(os.path.join(LAB.state_dir, "jobs", flows.job_of(LAB, tid), "resource.torrent"), "rb") as f:
        return lt.bdecode(f.read())


def backup_file(tid):
    return os.path.join(LAB.lab.bt_backup("cache1"), tid + ".torrent")


def archive_with_copy_replaced(tid, replace):
    """`archive` with qBittorrent's copy of tid set aside and replace(path) putting whatever stands
    in its place (nothing, another file, a symlink); the copy is put back afterwards."""
    path = backup_file(tid)
    saved = os.path.join(LAB.dir, f"{tid}.saved.torrent")
    os.rename(path, saved)
    try:
        replace(path, saved)
        return LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
    finally:
        if os.path.lexists(path):
            os.unlink(path)
        os.rename(saved, path)


def exported_instead(test, rc, out, err, why):
    """The copy was set aside with a warning saying why, and the torrent exported, once."""
    test.assertEqual(rc, 0, err + out)
    test.assertIn(why, err)
    test.assertIn("exporting the torrent instead", err)
    test.assertEqual(requests(err, "torrents/export"), 1, err)


def archived(test, tid, original):
    """The archive copy is complete, and its qBittorrent now exports the original's info and
    piece layers (rebuilt by its recheck when the job's copy had none)."""
    info = LAB.qb("archive1").info([tid])
    test.assertEqual(len(info), 1)
    test.assertEqual(info[0]["progress"], 1)
    exported = lt.bdecode(LAB.qb("archive1").export(tid))
    want = lt.bdecode(original)
    test.assertEqual(exported[b"info"], want[b"info"])
    test.assertEqual(exported.get(b"piece layers"), want.get(b"piece layers"))
    return exported


class FromBackup(unittest.TestCase):
    def test_a_hybrid_archives_without_an_export_and_keeps_its_trackers(self):
        tid, original = new_resource("hybrid")
        qb = LAB.qb("cache1")
        qb.post("torrents/addTrackers", hash=tid, urls="http://t1.invalid/announce\nhttp://t2.invalid/announce")
        tiers = {}
        for t in qb.json("torrents/trackers", hash=tid):
            if isinstance(t["tier"], int) and t["tier"] >= 0:
                tiers.setdefault(t["tier"], []).append(t["url"].encode())
        want = [tiers[k] for k in sorted(tiers)]
        self.assertEqual(sum(len(t) for t in want), 2, tiers)
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        self.assertGreaterEqual(requests(err, "torrents/trackers"), 1, err)
        kept = kept_copy(tid)
        self.assertNotIn(b"piece layers", kept, "the job carried qBittorrent's own copy")
        self.assertEqual(kept[b"info"], lt.bdecode(original)[b"info"])
        self.assertEqual(kept[b"announce"], want[0][0])
        self.assertEqual(kept[b"announce-list"], want)
        archived(self, tid, original)
        urls = {t["url"] for t in LAB.qb("archive1").json("torrents/trackers", hash=tid)}
        self.assertTrue({"http://t1.invalid/announce", "http://t2.invalid/announce"} <= urls, urls)

    def test_b_v2_only_archives_and_the_target_rebuilds_its_layers(self):
        tid, original = new_resource("v2")
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        self.assertNotIn(b"piece layers", kept_copy(tid))
        archived(self, tid, original)

    def test_c_v1_copy_is_the_torrent(self):
        tid, original = new_resource("v1")
        rc, out, err = LAB.archctl("-vv", "plan", "archive", tid[:12], timeout=120)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, "plan reads the copy too: " + err)
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        self.assertEqual(kept_copy(tid)[b"info"], lt.bdecode(original)[b"info"])
        archived(self, tid, original)

    def test_d_a_missing_copy_is_exported(self):
        tid, original = new_resource("hybrid")
        rc, out, err = archive_with_copy_replaced(tid, lambda path, saved: None)
        exported_instead(self, rc, out, err, "does not exist")
        self.assertIn(b"piece layers", kept_copy(tid), "the exported torrent, layers and all")
        archived(self, tid, original)

    def test_e_a_copy_of_another_torrent_is_set_aside(self):
        other, _ = new_resource("hybrid")
        tid, original = new_resource("hybrid")
        rc, out, err = archive_with_copy_replaced(tid, lambda path, saved: shutil.copyfile(backup_file(other), path))
        exported_instead(self, rc, out, err, "is another torrent")
        archived(self, tid, original)

    def test_e2_a_symlinked_copy_is_not_followed(self):
        tid, original = new_resource("hybrid")
        rc, out, err = archive_with_copy_replaced(tid, lambda path, saved: os.symlink(saved, path))
        exported_instead(self, rc, out, err, "cannot be read")
        archived(self, tid, original)

    def test_f_a_damaged_job_copy_is_read_again_from_the_backup(self):
        tid, original = new_resource("hybrid")
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "job.step.stage"},
                                   timeout=300)
        self.assertEqual(rc, 137, err + out)
        path = os.path.join(LAB.state_dir, "jobs", flows.job_of(LAB, tid), "resource.torrent")
        with open(path, "wb") as f:
            f.write(b"d4:infoi1e")
        rc, out, err = LAB.archctl("-vv", "resume", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertIn("reading the torrent from 'cache1' again", err)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        archived(self, tid, original)

    def test_h_v2_data_that_does_not_match_is_not_committed(self):
        # Without piece layers the target checks a v2 file against its pieces root alone: a byte
        # changed on the target leaves the file incomplete, and verify fails the job.
        COUNTER[0] += 1
        name = f"btb-v2-bad-{COUNTER[0]}"
        _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 900 + COUNTER[0], kind="v2")
        release = flows.archctl_paused_at(LAB, "job.step.merge", "archive", tid[:12], "--yes")
        target_file = os.path.join(LAB.node("archive1")["qb_root"], name, "pay", "sub", "b.bin")
        with open(target_file, "r+b") as f:
            f.seek(100000)
            byte = f.read(1)
            f.seek(100000)
            f.write(bytes([byte[0] ^ 0xFF]))
        rc, out, err = release()
        self.assertNotEqual(rc, 0, err + out)
        self.assertNotIn(rc, (10,), err + out)
        self.assertIn("did not verify 1 file(s): 2 pay/sub/b.bin", err)
        self.assertIn("nothing was committed", err)
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "the torrent verify added is taken back")

    def test_i_node_check_reads_a_copy(self):
        new_resource("v1")  # a torrent listed on cache1, whatever ran before
        rc, out, err = LAB.archctl("node", "check", "cache1", timeout=120)
        self.assertEqual(rc, 0, err + out)
        self.assertRegex(out, r"bt_backup .*readable \([0-9a-f]{12}\.torrent found\)")
        with open(LAB.config_path) as f:
            text = f.read()

        def check_with_bt_backup(directory):
            """`node check cache1` with its bt_backup set to `directory`; the config is put back."""
            with open(LAB.config_path, "w") as f:
                f.write(text.replace(LAB.lab.bt_backup("cache1"), directory))
            try:
                return LAB.archctl("node", "check", "cache1", timeout=120)
            finally:
                write_config()

        wrong = os.path.join(LAB.dir, "not-bt-backup")
        os.makedirs(wrong, exist_ok=True)
        rc, out, err = check_with_bt_backup(wrong)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("holds no copy of torrent", out + err)
        # A directory that is not there fails the node's connection, naming the setting.
        rc, out, err = check_with_bt_backup(os.path.join(LAB.dir, "no-such-dir"))
        self.assertEqual(rc, 1, err + out)
        self.assertIn("no-such-dir", out + err)
        self.assertIn("nodes.cache1.qbittorrent.bt_backup must name qBittorrent's BT_backup directory", out + err)

    def test_j_unarchive_reads_the_archive_nodes_copy(self):
        # The archive node's qBittorrent holds the only copy; its BT_backup serves unarchive.
        COUNTER[0] += 1
        name = f"btb-back-{COUNTER[0]}"
        _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 900 + COUNTER[0], kind="hybrid", node="archive1")
        with open(tfile, "rb") as f:
            original = f.read()
        rc, out, err = LAB.archctl("-vv", "unarchive", tid[:12], "--from", "archive1", "--to", "cache1", "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        info = LAB.qb("cache1").info([tid])
        self.assertEqual(len(info), 1)
        self.assertEqual(info[0]["progress"], 1)
        exported = lt.bdecode(LAB.qb("cache1").export(tid))
        self.assertEqual(exported[b"piece layers"], lt.bdecode(original)[b"piece layers"])

    def test_g_through_an_exec_node(self):
        # The node protocol's metainfo_read: cache1 served by `archctl node serve` over a pipe.
        write_config(node_exec={"cache1": [flows.BIN, "node", "serve"]})
        try:
            tid, original = new_resource("hybrid")
            rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=300)
        finally:
            write_config()
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(requests(err, "torrents/export"), 0, err)
        self.assertNotIn(b"piece layers", kept_copy(tid))
        archived(self, tid, original)


if __name__ == "__main__":
    unittest.main(verbosity=2)
