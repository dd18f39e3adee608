#!/usr/bin/python3
"""Plan is a promise (docs/design.md "Preflight", "Partfiles and piece boundaries"): whatever the
job's preflight would refuse, `plan`
refuses with the same message, exit 1 and no token, and `archive` refuses it before creating a
job — insufficient disk, boundary bytes the source holds nowhere, data in qBittorrent's
incomplete-downloads folder, a symlinked save path or content directory, files renamed in
qBittorrent (also when the rename comes after the job was created). Also: a second archctl on a
running job is not told the job failed, and --no-wait on a paused route folder returns at once
with exit 10 and the reason."""

import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab import lab as labmod  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
LAYOUT = {"pay/a.bin": 100001, "pay/b.bin": 50001, "pay/c.bin": 70001}
COUNTER = [0]


def new_name(prefix):
    COUNTER[0] += 1
    return f"{prefix}-{COUNTER[0]}"


def tokens():
    d = os.path.join(LAB.state_dir, "tokens")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def jobs_on(tid):
    rc, out, err = LAB.archctl("job", "list", "--all", "--json")
    assert rc == 0, err
    return [j for j in json.loads(out)["jobs"] if j["resource"] == tid]


class Refusals(unittest.TestCase):
    def assert_refused(self, tid, code, args=(), env=None, contains=""):
        """plan and archive both refuse with `code` and one message; no token, no job, nothing on
        the target. Returns the message."""
        before = tokens()
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], *args, "--json", env=env)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], code, doc)
        self.assertNotIn("token", doc)
        self.assertEqual(tokens(), before, "a refused plan issues no token")
        message = doc["error"]["message"]
        self.assertIn(contains, message)
        self.assertNotIn("\n", message, "one line")
        self.assertTrue(doc["error"].get("hint"), "the refusal says what to do")
        rc, out, err = LAB.archctl("archive", tid[:12], *args, "--yes", "--json", env=env, timeout=120)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], code, doc)
        # The same words; the disk's total free space may move between the two reads (other
        # programs write there), so the "(… free in all)" figure is not compared.
        in_all = re.compile(r"\([0-9.]+ [KMGT]?i?B free in all\)")
        self.assertEqual(in_all.sub("(… free in all)", doc["error"]["message"]), in_all.sub("(… free in all)", message),
                         "the job's refusal is the plan's")
        self.assertEqual(jobs_on(tid), [], "no job is created")
        self.assertEqual(LAB.qb("archive1").info([tid]), [])
        return message

    def test_a_insufficient_disk(self):
        _, tid, _, _ = flows.seed_resource(LAB, new_name("pp-disk"), LAYOUT, 401)
        self.assert_refused(tid, "DISK_INSUFFICIENT", env={"ARCHCTL_MIN_FREE": "1000T"}, contains="not enough free space")

    def test_b_boundary_pieces_without_a_source_part_file(self):
        # v1, every file complete on the cache (so no part file exists): moving files 0 and 2
        # needs b.bin's bytes of the pieces it shares with them, which archctl builds from b.bin
        # on the cache's disk. Once b.bin is skipped and gone, those bytes are nowhere.
        _, tid, save, _ = flows.seed_resource(LAB, new_name("pp-part"), LAYOUT, 402, kind="v1")
        self.assertFalse(os.path.exists(os.path.join(save, f".{tid}.parts")))
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", "0,2", "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["plan"]["partfile"]["from_disk"], [1])
        # The whole torrent has no boundary piece: plan promises it and the job keeps the promise.
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["plan"]["partfile"]["need"], "none")
        qb = LAB.qb("cache1")
        qb.file_prio(tid, [1], 0)
        flows.wait(lambda: qb.files(tid)[1]["priority"] == 0, what="b.bin skipped")
        os.remove(os.path.join(save, "pay", "b.bin"))
        message = self.assert_refused(tid, "PARTFILE_UNSUPPORTED", args=("--files", "0,2"),
                                      contains="has neither complete on its disk nor in its part file")
        self.assertIn("file(s) 1", message)

    def test_c_data_in_the_incomplete_downloads_folder(self):
        name = new_name("pp-temp")
        scratch = os.path.join(LAB.dir, "scratch-" + name)
        flows.write_payload(scratch, LAYOUT, seed=403)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        info = flows.create_torrent(os.path.join(scratch, "pay"), tfile, kind="hybrid", piece_length=32768)
        tid = info["qb_id"]
        root = LAB.node("cache1")["qb_root"]
        save, download = os.path.join(root, name), os.path.join(root, ".incomplete", name)
        for rel in ("pay/a.bin", "pay/c.bin"):  # b.bin still downloading: qB keeps it all in the temp path
            os.makedirs(os.path.join(download, "pay"), exist_ok=True)
            os.link(os.path.join(scratch, rel), os.path.join(download, rel))
        qb = LAB.qb("cache1")
        with open(tfile, "rb") as f:
            body, ctype = labmod._multipart({"savepath": save, "autoTMM": "false", "paused": "true", "stopped": "true",
                                             "contentLayout": "Original", "useDownloadPath": "true",
                                             "downloadPath": download}, [("torrents", f"{name}.torrent", f.read())])
        qb.call("POST", "torrents/add", body=body, content_type=ctype)
        flows.wait(lambda: qb.info([tid]), what="torrent listed")
        qb.recheck(tid)
        flows.wait(lambda: (lambda fs: len(fs) == 3 and fs[0]["progress"] == 1 and fs[2]["progress"] == 1)(qb.files(tid)),
                   what="a.bin and c.bin complete in the temp path")
        t = qb.info([tid])[0]
        self.assertTrue(t["content_path"].startswith(download), t)
        # Not a refusal any more: plan promises to read the complete files where qBittorrent keeps
        # them (test_temp_path archives such a torrent end to end).
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["source_data_path"], download)

    def test_d_symlinked_save_path(self):
        name = new_name("pp-link")
        root = LAB.node("cache1")["qb_root"]
        real = os.path.join(root, name + "-real")
        flows.write_payload(real, LAYOUT, seed=404)
        link = os.path.join(root, name)
        os.symlink(real, link)
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        tid = flows.create_torrent(os.path.join(real, "pay"), tfile, kind="hybrid", piece_length=32768)["qb_id"]
        flows.seed_cache(LAB, "cache1", tfile, link)
        self.assert_refused(tid, "PATH_SYMLINK", contains=link)

    def test_e_symlinked_content_directory(self):
        name = new_name("pp-dirlink")
        root = LAB.node("cache1")["qb_root"]
        data = os.path.join(root, name + "-data")
        flows.write_payload(data, LAYOUT, seed=405)
        save = os.path.join(root, name)
        os.makedirs(save)
        os.symlink(os.path.join(data, "pay"), os.path.join(save, "pay"))
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        tid = flows.create_torrent(os.path.join(data, "pay"), tfile, kind="hybrid", piece_length=32768)["qb_id"]
        flows.seed_cache(LAB, "cache1", tfile, save)
        self.assert_refused(tid, "PATH_SYMLINK", contains=os.path.join(save, "pay"))

    def test_f_renamed_file_before_and_after_the_job_is_created(self):
        name = new_name("pp-rename")
        big = {"pay/a.bin": 2 * 1024 * 1024, "pay/b.bin": 50001}
        _, tid, save, _ = flows.seed_resource(LAB, name, big, 406)
        qb = LAB.qb("cache1")

        def rename(old, new):
            qb.post("torrents/renameFile", hash=tid, oldPath=old, newPath=new)
            flows.wait(lambda: any(f["name"] == new for f in qb.files(tid)), what=f"{old} renamed")

        rename("pay/b.bin", "pay/b-renamed.bin")
        message = self.assert_refused(tid, "RENAMED_IN_QB", contains="b-renamed.bin")
        rename("pay/b-renamed.bin", "pay/b.bin")
        # A job that stops during staging, then the rename: the job's preflight refuses it with
        # the plan's words (and compensates), never a missing file.
        env = {"ARCHCTL_TEST_STAGE_METHOD": "copy"}
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--max-bytes", "1", "--json", env=env, timeout=120)
        self.assertEqual(rc, 10, err + out)
        rename("pay/b.bin", "pay/b-renamed.bin")
        rc, out, err = LAB.archctl("resume", "--json", env=env, timeout=120)
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "RENAMED_IN_QB", doc)
        self.assertIn(message, doc["error"]["message"])
        flows.staging_empty(LAB, LAB.route)
        self.assertEqual(LAB.qb("archive1").info([tid]), [])
        rename("pay/b-renamed.bin", "pay/b.bin")

    def test_g_existing_target_without_the_boundary_bytes(self):
        # An existing v1 target holding file 0 with files 1 and 2 skipped; moving file 2 needs
        # b.bin's bytes of the pieces it shares with a.bin and c.bin: from the target's part file
        # (it has none) or b.bin on its disk.
        name = new_name("pp-own")
        _, tid, _, tfile = flows.seed_resource(LAB, name, LAYOUT, 409, kind="v1")
        target = os.path.join(LAB.node("archive1")["qb_root"], name)
        flows.write_payload(target, LAYOUT, seed=409)
        flows.seed_cache(LAB, "archive1", tfile, target)
        aq = LAB.qb("archive1")
        aq.file_prio(tid, [1, 2], 0)
        flows.wait(lambda: [f["priority"] for f in aq.files(tid)] == [1, 0, 0], what="target holds file 0 only")
        os.unlink(os.path.join(target, "pay/c.bin"))
        b, aside = os.path.join(target, "pay/b.bin"), os.path.join(LAB.dir, name + "-b.bin")
        os.rename(b, aside)
        try:
            before = tokens()
            rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", "0,2", "--json")
            self.assertEqual(rc, 1, err + out)
            doc = json.loads(out)
            self.assertEqual(doc["error"]["code"], "PARTFILE_UNSUPPORTED", doc)
            message = doc["error"]["message"]
            self.assertIn("file(s) 1", message)
            self.assertIn("'archive1' has neither in its part file", message)
            self.assertEqual(tokens(), before)
            rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0,2", "--yes", "--json", timeout=120)
            self.assertEqual(rc, 1, err + out)
            self.assertEqual(json.loads(out)["error"]["message"], message)
            self.assertEqual(jobs_on(tid), [])
        finally:
            os.rename(aside, b)
        # With b.bin on the target's disk the plan holds, and the job keeps it.
        rc, out, err = LAB.archctl("plan", "archive", tid[:12], "--files", "0,2", "--json")
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(json.loads(out)["plan"]["partfile"]["need"], "target_own")
        rc, out, err = LAB.archctl("archive", tid[:12], "--files", "0,2", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        files = aq.files(tid)
        self.assertEqual([(f["priority"] > 0, f["progress"]) for f in files][0::2], [(True, 1), (True, 1)], files)


class Concurrency(unittest.TestCase):
    def test_a_a_second_archctl_on_a_running_job_is_not_told_it_failed(self):
        _, tid, _, _ = flows.seed_resource(LAB, new_name("pp-lock"), LAYOUT, 407)
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes", "--json")
        try:
            rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--json")
            self.assertEqual(rc, 10, err + out)
            self.assertNotIn("failed", err)
            self.assertIn("is being driven by another archctl (pid ", err)
            rc, out, err = LAB.archctl("resume", "--json")
            self.assertEqual(rc, 10, err + out)
            self.assertNotIn("failed", err)
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err + out)

    def test_b_no_wait_on_a_paused_route_folder_returns_at_once(self):
        _, tid, _, _ = flows.seed_resource(LAB, new_name("pp-nowait"), LAYOUT, 408)
        flows.pause_folder(LAB, "archive1", LAB.route, True)
        try:
            started = time.monotonic()
            rc, out, err = LAB.archctl("archive", tid[:12], "--yes", "--no-wait", "--json", timeout=120)
            took = time.monotonic() - started
        finally:
            flows.pause_folder(LAB, "archive1", LAB.route, False)
        self.assertEqual(rc, 10, err + out)
        self.assertLess(took, 30, "--no-wait never blocks on the route")
        self.assertIn("folder paused", err)
        self.assertIn("--no-wait", err)
        self.assertEqual(jobs_on(tid), [], "no job before the route is ready")


if __name__ == "__main__":
    unittest.main(verbosity=2)
