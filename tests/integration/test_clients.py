#!/usr/bin/python3
"""archctl's qBittorrent and Syncthing clients against real instances (tests/lab).

Every client call goes through the C++ library via the test driver `clients_probe`; the lab's
small Python clients only wait for states and arrange what the library does not do itself.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab import torrents  # noqa: E402

BIN = os.environ.get("ARCHCTL_BIN", "")
PROBE = os.environ.get("CLIENTS_PROBE") or os.path.join(
    os.path.dirname(os.path.dirname(BIN)), "tests", "integration", "clients_probe", "clients_probe")

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")])
CAPTURED = []  # every stdout/stderr the library produced, checked for secrets at the end


def setUpModule():
    if not os.access(PROBE, os.X_OK):
        raise unittest.SkipTest(f"clients_probe not built at {PROBE}")
    LAB.set_up()


def probe(node, *args, config=None, expect_ok=True):
    proc = subprocess.run([PROBE, config or LAB.config_path, node, *args], capture_output=True, text=True, timeout=120)
    CAPTURED.append(proc.stdout)
    CAPTURED.append(proc.stderr)
    if "Sanitizer" in proc.stderr:
        raise AssertionError(f"clients_probe {args}: sanitizer report:\n{proc.stderr}")
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"clients_probe {args}: no JSON (rc {proc.returncode}): {proc.stdout!r} {proc.stderr!r}")
    if expect_ok and not out.get("ok"):
        raise AssertionError(f"clients_probe {node} {args} failed: {out}")
    return out


def wait_until(check, timeout=30.0, what="condition", interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def info(node, torrent_id):
    found = probe(node, "qb-info", torrent_id)["torrents"]
    return found[0] if found else None


def wait_state(node, torrent_id, states, timeout=30.0):
    qb = LAB.qb(node)
    return qb.wait_for(torrent_id, lambda t: t["state"] in states, timeout=timeout, what=f"state in {states}")


class QbittorrentClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="archctl-clients-")
        cls.torrents = {}
        cache_root = LAB.node("cache1")["qb_root"]
        for kind in torrents.KINDS:
            save = os.path.join(cache_root, kind)
            payload = torrents.make_payload(save)
            cls.torrents[kind] = torrents.make_torrent(payload, kind, os.path.join(cls.work, f"{kind}.torrent"))
            cls.torrents[kind]["save"] = save
            cls.torrents[kind]["payload"] = payload
        # Add all three stopped with data present, then recheck them together (one at a time in qB).
        for t in cls.torrents.values():
            probe("cache1", "qb-add", t["path"], t["save"])
        ids = [t["id"] for t in cls.torrents.values()]
        for tid in ids:
            wait_state("cache1", tid, ("pausedDL", "pausedUP"))
        probe("cache1", "qb-recheck", *ids)
        for tid in ids:
            LAB.qb("cache1").wait_for(tid, lambda t: t["state"] == "pausedUP" and t["progress"] == 1, timeout=60,
                                      what="recheck to complete")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_versions_and_capabilities(self):
        v = probe("cache1", "qb-version")
        self.assertEqual(v["app"], "v4.5.2")
        self.assertEqual(v["webapi"], "2.8.19")
        self.assertEqual(v["stop"], "torrents/pause")
        self.assertEqual(v["start"], "torrents/resume")
        self.assertTrue(v["export"])
        self.assertTrue(probe("cache1", "qb-build-info")["libtorrent"].startswith("2.0"))
        self.assertEqual(probe("cache1", "qb-preferences")["refresh_interval"], 100)

    def test_identity_and_complete_files_after_recheck(self):
        for kind, t in self.torrents.items():
            with self.subTest(kind=kind):
                got = info("cache1", t["id"])
                self.assertIsNotNone(got)
                self.assertEqual(got["infohash_v1"], t["v1"])
                self.assertEqual(got["infohash_v2"], t["v2"])
                self.assertEqual(got["run_state"], "stopped")
                self.assertEqual(got["progress"], 1)
                self.assertEqual(got["amount_left"], 0)
                self.assertEqual(got["save_path"].rstrip("/"), t["save"])
                files = probe("cache1", "qb-files", t["id"])
                self.assertEqual(len(files["files"]), len(torrents.SAMPLE_FILES))
                everything = sorted(f["index"] for f in files["files"])
                self.assertEqual(files["selected"], everything)
                self.assertEqual(files["complete"], everything)
                names = {f["name"] for f in files["files"]}
                self.assertIn("payload/ünïcödé ファイル.txt", names)

    def test_batched_info_and_hybrid_v1_hash_matches_nothing(self):
        ids = [t["id"] for t in self.torrents.values()]
        listed = probe("cache1", "qb-info", *ids)["torrents"]
        self.assertEqual(sorted(x["id"] for x in listed), sorted(ids))
        # qB's id of a hybrid is the truncated v2; its v1 hash finds nothing (resolve by infohash_*).
        self.assertEqual(probe("cache1", "qb-info", self.torrents["hybrid"]["v1"])["torrents"], [])
        props = probe("cache1", "qb-properties", self.torrents["hybrid"]["id"])
        self.assertEqual(props["infohash_v2"], self.torrents["hybrid"]["v2"])
        self.assertGreater(props["piece_size"], 0)
        missing = probe("cache1", "qb-files", "0" * 40, expect_ok=False)
        self.assertEqual(missing["error"]["code"], "QB_NOT_FOUND")

    def test_export_round_trip(self):
        for kind, t in self.torrents.items():
            with self.subTest(kind=kind):
                out = os.path.join(self.work, f"{kind}.exported.torrent")
                probe("cache1", "qb-export", t["id"], out)
                with open(out, "rb") as f:
                    exported = f.read()
                self.assertEqual(exported, t["bytes"])
                again = torrents.lt.torrent_info(exported).info_hashes()
                self.assertEqual(str(again.v1) if again.has_v1() else "", t["v1"])
                self.assertEqual(str(again.v2) if again.has_v2() else "", t["v2"])

    def test_maindata_lists_torrents(self):
        md = probe("cache1", "qb-maindata")
        self.assertEqual(md["full_updates"], 1)
        self.assertGreaterEqual(md["rid"], md["rid_first"])
        ids = {t["id"] for t in md["torrents"]}
        for t in self.torrents.values():
            self.assertIn(t["id"], ids)
        states = {t["id"]: t["run_state"] for t in md["torrents"]}
        self.assertEqual(states[self.torrents["v1"]["id"]], "stopped")

    def test_start_and_stop_use_pause_resume_on_4x(self):
        tid = self.torrents["v2"]["id"]
        probe("cache1", "qb-start", tid)
        wait_state("cache1", tid, ("stalledUP", "uploading"))
        self.assertEqual(info("cache1", tid)["run_state"], "running")
        probe("cache1", "qb-stop", tid)
        wait_state("cache1", tid, ("pausedUP",))
        self.assertEqual(info("cache1", tid)["run_state"], "stopped")

    def test_missing_data_recheck_reports_incomplete_and_downloads_nothing(self):
        t = self.torrents["hybrid"]
        save = os.path.join(LAB.node("archive1")["qb_root"], "missing")
        os.makedirs(save, exist_ok=True)
        probe("archive1", "qb-add", t["path"], save)
        wait_state("archive1", t["id"], ("pausedDL",))
        probe("archive1", "qb-recheck", t["id"])
        time.sleep(0.3)
        got = LAB.qb("archive1").wait_for(t["id"], lambda x: x["state"] == "pausedDL" and x["progress"] == 0,
                                          timeout=30, what="recheck of missing data")
        self.assertGreater(got["amount_left"], 0)
        files = probe("archive1", "qb-files", t["id"])
        by_index = {f["index"]: f for f in files["files"]}
        empty = sorted(i for i, f in by_index.items() if f["size"] == 0)
        self.assertEqual(files["complete"], empty)  # only zero-length files count as complete
        time.sleep(1.0)
        still = info("archive1", t["id"])
        self.assertEqual(still["run_state"], "stopped")
        for rel, size in torrents.SAMPLE_FILES.items():
            path = os.path.join(save, "payload", rel)
            if size > 0:
                self.assertFalse(os.path.exists(path) and os.path.getsize(path) > 0, f"{rel} was written")
        probe("archive1", "qb-delete", t["id"])

    def test_file_priority_skip_and_delete_keeps_data(self):
        t = self.torrents["v1"]
        files = probe("cache1", "qb-files", t["id"])
        skip = files["files"][0]["index"]
        probe("cache1", "qb-prio", t["id"], "skip", str(skip))
        after = probe("cache1", "qb-files", t["id"])
        self.assertNotIn(skip, after["selected"])
        self.assertNotIn(skip, after["complete"])
        self.assertEqual(next(f for f in after["files"] if f["index"] == skip)["priority"], 0)
        bad = probe("cache1", "qb-prio", t["id"], "skip", "999", expect_ok=False)
        self.assertEqual(bad["error"]["code"], "QB_CONFLICT")
        probe("cache1", "qb-prio", t["id"], "normal", str(skip))
        self.assertIn(skip, probe("cache1", "qb-files", t["id"])["selected"])

        # Delete without data: gone from qB at once, every payload file still on disk.
        extra = torrents.make_torrent(t["payload"], "v1")
        extra_path = os.path.join(self.work, "again.v1.torrent")
        probe("cache1", "qb-delete", t["id"])
        wait_until(lambda: info("cache1", t["id"]) is None, what="torrent removed")
        for rel in torrents.SAMPLE_FILES:
            self.assertTrue(os.path.exists(os.path.join(t["payload"], rel)), rel)
        # Re-add so the other tests still find it (same payload, same identity).
        with open(extra_path, "wb") as f:
            f.write(t["bytes"])
        self.assertEqual(extra["v1"], t["v1"])
        probe("cache1", "qb-add", extra_path, t["save"])
        wait_state("cache1", t["id"], ("pausedDL", "pausedUP"))
        probe("cache1", "qb-recheck", t["id"])
        LAB.qb("cache1").wait_for(t["id"], lambda x: x["state"] == "pausedUP", timeout=30, what="re-added recheck")

    def test_adding_a_duplicate_is_refused(self):
        t = self.torrents["v2"]
        out = probe("cache1", "qb-add", t["path"], t["save"], expect_ok=False)
        self.assertEqual(out["error"]["code"], "QB_ADD_REFUSED")
        not_a_torrent = os.path.join(self.work, "junk.torrent")
        with open(not_a_torrent, "wb") as f:
            f.write(b"this is not bencode")
        out = probe("cache1", "qb-add", not_a_torrent, t["save"], expect_ok=False)
        self.assertEqual(out["error"]["code"], "QB_INVALID_TORRENT")


class QbittorrentLogin(unittest.TestCase):
    def test_wrong_password_is_a_clear_error_without_the_password(self):
        wrong = "badpw-" + os.urandom(6).hex()
        work = tempfile.mkdtemp(prefix="archctl-login-")
        try:
            secret = os.path.join(work, "wrong.qb")
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(wrong + "\n")
            qb = LAB.node("cache1")["qb"]
            with open(LAB.config_path) as f:
                text = f.read().replace(qb["password_file"], secret)
            config = os.path.join(work, "config.toml")
            with open(config, "w") as f:
                f.write(text)
            out = probe("cache1", "qb-login", config=config, expect_ok=False)
            self.assertEqual(out["error"]["code"], "QB_AUTH")
            self.assertEqual(out["error"]["message"],
                             f"login to qBittorrent on 'cache1' failed: wrong username or password (password from '{secret}')")
            self.assertNotIn(wrong, CAPTURED[-1] + CAPTURED[-2])
            # Banning is off in the lab (MaxAuthenticationFailCount=0): the right password still works.
            self.assertTrue(probe("cache1", "qb-login")["ok"])
        finally:
            shutil.rmtree(work, ignore_errors=True)


class SyncthingClient(unittest.TestCase):
    FOLDER = "lab-route-1"

    @classmethod
    def setUpClass(cls):
        cls.ids = {n: probe(n, "st-status")["myID"] for n in ("cache1", "archive1")}
        cls.paths = {n: os.path.join(LAB.node(n)["sync_root"], "route1") for n in ("cache1", "archive1")}
        for me, peer in (("cache1", "archive1"), ("archive1", "cache1")):
            probe(me, "st-put-device", cls.ids[peer], peer, LAB.node(peer)["st"]["address"])
        for me in ("cache1", "archive1"):
            probe(me, "st-put-folder", cls.FOLDER, cls.paths[me], cls.ids["cache1"], cls.ids["archive1"])
        wait_until(lambda: probe("cache1", "st-connections")["connections"].get(cls.ids["archive1"], {}).get("connected"),
                   timeout=30, what="devices to connect")

    def test_config_read_back(self):
        self.assertTrue(probe("cache1", "st-version")["version"].startswith("v1.19"))
        folder = probe("archive1", "st-folder", self.FOLDER)["folder"]
        self.assertEqual(sorted(folder["devices"]), sorted(self.ids.values()))
        self.assertEqual(folder["path"], self.paths["archive1"])
        self.assertEqual(folder["type"], "sendreceive")
        self.assertTrue(folder["ignorePerms"])
        self.assertEqual(folder["fsWatcherDelayS"], 1)
        self.assertEqual(folder["versioning"], "")
        devices = probe("cache1", "st-devices")["devices"]
        peer = next(d for d in devices if d["deviceID"] == self.ids["archive1"])
        self.assertEqual(peer["addresses"], [LAB.node("archive1")["st"]["address"]])
        self.assertIsNone(probe("cache1", "st-folder", "no-such-folder")["folder"])
        self.assertEqual(probe("cache1", "st-errors", self.FOLDER)["errors"], [])
        wait_until(lambda: probe("cache1", "st-pending")["folders"] == [], timeout=10, what="no pending folders")

    def test_read_modify_write_keeps_other_fields(self):
        before = probe("cache1", "st-folder", self.FOLDER)["folder"]
        probe("cache1", "st-rmw-folder", self.FOLDER, "2")
        after = probe("cache1", "st-folder", self.FOLDER)["folder"]
        self.assertEqual(after["fsWatcherDelayS"], 2)
        self.assertEqual(sorted(after["devices"]), sorted(before["devices"]))
        self.assertEqual(after["raw_keys"], before["raw_keys"])
        self.assertTrue(after["ignorePerms"])
        probe("cache1", "st-patch-folder", self.FOLDER, '{"fsWatcherDelayS": 1}')
        self.assertEqual(probe("cache1", "st-folder", self.FOLDER)["folder"]["fsWatcherDelayS"], 1)

    def test_file_arrives_with_events_and_completion_then_delete_propagates(self):
        name = "hello-" + os.urandom(3).hex() + ".bin"
        data = os.urandom(300 * 1024)
        wait_until(lambda: probe("archive1", "st-db-status", self.FOLDER)["state"] == "idle", what="receiver idle")
        # Subscribe on the receiver before the change, so the event stream sees it.
        watcher = subprocess.Popen([PROBE, LAB.config_path, "archive1", "st-watch",
                                    "ItemFinished,StateChanged,FolderSummary", "30", "ItemFinished", self.FOLDER],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        with open(os.path.join(self.paths["cache1"], name), "wb") as f:
            f.write(data)
        probe("cache1", "st-scan", self.FOLDER, name)
        out, err = watcher.communicate(timeout=60)
        CAPTURED.extend([out, err])
        watched = json.loads(out)
        self.assertTrue(watched["ok"], watched)
        self.assertTrue(watched["found"], watched)
        finished = [e for e in watched["events"] if e["type"] == "ItemFinished"]
        self.assertEqual(finished[-1]["data"]["item"], name)

        target = os.path.join(self.paths["archive1"], name)
        wait_until(lambda: os.path.exists(target) and os.path.getsize(target) == len(data), what="file on receiver")
        with open(target, "rb") as f:
            self.assertEqual(f.read(), data)
        wait_until(lambda: probe("archive1", "st-file", self.FOLDER, name)["local_is_current"], what="receiver index")
        wait_until(lambda: probe("cache1", "st-completion", self.FOLDER, self.ids["archive1"])["completion"] == 100,
                   what="completion 100 on the sender")
        status = wait_until(lambda: (lambda s: s if s["state"] == "idle" and s["needFiles"] == 0 else None)(
            probe("archive1", "st-db-status", self.FOLDER)), what="receiver idle, nothing needed")
        self.assertGreaterEqual(status["localFiles"], 1)
        self.assertEqual(probe("archive1", "st-need", self.FOLDER)["total"], 0)

        os.unlink(os.path.join(self.paths["cache1"], name))
        probe("cache1", "st-scan", self.FOLDER, name)
        wait_until(lambda: not os.path.exists(target), what="delete on the receiver")
        record = wait_until(lambda: (lambda r: r if r["global_deleted"] else None)(
            probe("archive1", "st-file", self.FOLDER, name)), what="deleted record")
        self.assertTrue(record["present"])
        self.assertFalse(probe("archive1", "st-file", self.FOLDER, "never-existed.txt")["present"])

    def test_wrong_api_key_is_rejected_without_echoing_it(self):
        wrong = "badkey-" + os.urandom(6).hex()
        work = tempfile.mkdtemp(prefix="archctl-key-")
        try:
            secret = os.path.join(work, "wrong.st")
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(wrong + "\n")
            with open(LAB.config_path) as f:
                text = f.read().replace(LAB.node("cache1")["st"]["api_key_file"], secret)
            config = os.path.join(work, "config.toml")
            with open(config, "w") as f:
                f.write(text)
            out = probe("cache1", "st-ping", config=config, expect_ok=False)
            self.assertEqual(out["error"]["code"], "ST_AUTH")
            self.assertNotIn(wrong, CAPTURED[-1] + CAPTURED[-2])
        finally:
            shutil.rmtree(work, ignore_errors=True)


class ZzSecrets(unittest.TestCase):
    """Runs last (alphabetical): nothing the library printed holds a lab secret."""

    def test_no_secret_in_any_output(self):
        self.assertGreater(len(CAPTURED), 20)
        for secret in LAB.secrets():
            for text in CAPTURED:
                self.assertNotIn(secret, text)
        for root, _, files in os.walk(LAB.state_dir):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    content = f.read()
                for secret in LAB.secrets():
                    self.assertNotIn(secret.encode(), content, os.path.join(root, name))


if __name__ == "__main__":
    started = time.monotonic()
    result = unittest.main(verbosity=2, exit=False).result
    sys.stderr.write(f"test_clients: wall time {time.monotonic() - started:.1f}s\n")
    sys.exit(0 if result.wasSuccessful() else 1)
