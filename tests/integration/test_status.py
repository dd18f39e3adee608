#!/usr/bin/python3
"""`archctl status` against a 3-node lab: all up, one qBittorrent down, a wrong password, and
`status RES|JOB` after a partial archive (placements, per-node and per-cache coverage, jobs)."""

import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

CAPTURED = []
NODES = [("cache1", "cache"), ("archive1", "archive"), ("archive2", "archive")]
LAB = flows.SuiteLab(nodes=NODES)


def setUpModule():
    if not os.environ.get("ARCHCTL_BIN"):
        raise unittest.SkipTest("ARCHCTL_BIN is not set")
    LAB.set_up()


def archctl(*args, **kw):
    rc, out, err = LAB.archctl(*args, **kw)
    CAPTURED.extend([out, err])
    return rc, out, err


class Status(unittest.TestCase):
    def test_a_all_nodes_up(self):
        started = time.monotonic()
        rc, out, err = archctl("status", "--json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["schema"], 1)
        self.assertTrue(doc["ok"])
        by_name = {n["name"]: n for n in doc["nodes"]}
        self.assertEqual(sorted(by_name), sorted(n for n, _ in NODES))
        for name, role in NODES:
            node = by_name[name]
            lab_node = LAB.node(name)
            self.assertTrue(node["reachable"])
            self.assertEqual(node["role"], role)
            self.assertEqual(node["qbittorrent"]["version"], "4.5.2")
            self.assertEqual(node["qbittorrent"]["webapi_version"], "2.8.19")
            self.assertEqual(node["qbittorrent"]["torrent_count"], 0)
            self.assertEqual(node["qbittorrent"]["url"], lab_node["qb"]["url"])
            self.assertTrue(node["syncthing"]["version"].startswith("v1.19.2"))
            self.assertEqual(node["syncthing"]["device_id"], lab_node["st"]["device_id"])
            self.assertGreater(node["free_bytes"], 0)
        self.assertLess(time.monotonic() - started, 10)

        rc, out, err = archctl("status")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], "nodes")
        for name, role in NODES:
            line = next(l for l in lines if l.split()[0:1] == [name])
            self.assertRegex(line, rf"^  {name}\s+{role}\s+qBittorrent 4\.5\.2 \(API 2\.8\.19\)\s+Syncthing v1\.19\.2\S*"
                                   rf" \({LAB.node(name)['st']['device_id'][:7]}\)\s+0 torrents\s+free \d+\.\d [KMGT]iB\s+ok$")

    def test_b_one_qbittorrent_down(self):
        LAB.stop_qb("archive1")
        try:
            started = time.monotonic()
            rc, out, err = archctl("status", "--json")
            elapsed = time.monotonic() - started
            self.assertEqual(rc, 1, err)
            doc = json.loads(out)
            self.assertFalse(doc["ok"])
            self.assertEqual(doc["error"]["code"], "NODES_UNREACHABLE")
            self.assertIn("'archive1'", doc["error"]["message"])
            by_name = {n["name"]: n for n in doc["nodes"]}
            down = by_name["archive1"]
            self.assertFalse(down["reachable"])
            self.assertFalse(down["qbittorrent"]["reachable"])
            self.assertEqual(down["qbittorrent"]["error"]["code"], "HTTP_UNREACHABLE")
            url = LAB.node("archive1")["qb"]["url"]
            self.assertEqual(down["qbittorrent"]["error"]["message"],
                             f"cannot reach qBittorrent on 'archive1' ({url}): connection refused")
            self.assertTrue(down["syncthing"]["reachable"])
            self.assertTrue(by_name["cache1"]["reachable"])
            self.assertTrue(by_name["archive2"]["reachable"])
            self.assertLess(elapsed, 10)

            rc, out, err = archctl("status")
            self.assertEqual(rc, 1)
            line = next(l for l in out.splitlines() if l.strip().startswith("archive1"))
            self.assertIn(f"qBittorrent unreachable: connection refused ({url})", line)
            self.assertTrue(line.endswith("down"))
            self.assertIn("archctl: error: 1 of 3 nodes unreachable: 'archive1'", err)
        finally:
            LAB.start_qb("archive1")
        rc, _, err = archctl("status")
        self.assertEqual(rc, 0, err)

    def test_c_wrong_password_names_the_file_not_the_password(self):
        node = LAB.node("cache1")["qb"]
        wrong = "wrongpw-" + os.urandom(5).hex()
        bad_file = os.path.join(LAB.dir, "archctl", "secrets", "cache1.bad.qb")
        fd = os.open(bad_file, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(wrong + "\n")
        with open(LAB.config_path) as f:
            original = f.read()
        try:
            with open(LAB.config_path, "w") as f:
                f.write(original.replace(node["password_file"], bad_file))
            rc, out, err = archctl("status", "--json")
            self.assertEqual(rc, 1)
            doc = json.loads(out)
            cache = next(n for n in doc["nodes"] if n["name"] == "cache1")
            self.assertEqual(cache["qbittorrent"]["error"]["code"], "QB_AUTH")
            self.assertEqual(cache["qbittorrent"]["error"]["message"],
                             f"login to qBittorrent on 'cache1' failed: wrong username or password "
                             f"(password from '{bad_file}')")
            for text in (out, err):
                self.assertNotIn(wrong, text)
        finally:
            with open(LAB.config_path, "w") as f:
                f.write(original)

    def test_d_verbose_shows_requests_but_no_secret(self):
        rc, out, err = archctl("status", "-vv")
        self.assertEqual(rc, 0, err)
        self.assertIn("POST /api/v2/auth/login -> 200", err)
        self.assertRegex(err, r"\d+ HTTP requests to 3 nodes")
        self.assertNotRegex(err, r"SID=[A-Za-z0-9]")

    def test_e_resource_and_job_focus(self):
        cache = LAB.node("cache1")
        save = os.path.join(cache["qb_root"], "res-status")
        layout = {"pay/a.bin": 70000, "pay/b.bin": 50000, "pay/sub/c.txt": 9}
        flows.write_payload(save, layout, seed=5)
        tfile = os.path.join(LAB.dir, "res-status.torrent")
        flows.create_torrent(os.path.join(save, "pay"), tfile, kind="hybrid", piece_length=16384)
        tid = flows.seed_cache(LAB, "cache1", tfile, save)
        flows.pair_route(LAB, "cache1", "archive1")
        rc, out, err = archctl("archive", tid[:12], "--to", "archive1", "--files", "0", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        job_id = json.loads(out)["job"]["job"]

        rc, out, err = archctl("status", tid[:12], "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["resource"], tid)
        by_node = {p["node"]: p for p in doc["placements"]}
        self.assertEqual(sorted(by_node), ["archive1", "archive2", "cache1"])
        self.assertEqual((by_node["cache1"]["complete_files"], by_node["cache1"]["files"]), (3, 3))
        self.assertEqual((by_node["archive1"]["complete_files"], by_node["archive1"]["selected_files"]), (1, 1))
        self.assertEqual(by_node["archive1"]["generation"]["job"], job_id)
        self.assertFalse(by_node["archive2"]["present"])
        cover = doc["coverage"]
        self.assertEqual(len(cover), 1)
        self.assertEqual((cover[0]["cache"], cover[0]["files"], cover[0]["covered"]), ("cache1", 3, 1))
        self.assertEqual(cover[0]["by_archive"], {"archive1": 1})
        self.assertEqual(sorted(cover[0]["missing"]), ["pay/b.bin", "pay/sub/c.txt"])
        self.assertEqual([j["id"] for j in doc["jobs"]], [job_id])

        rc, out, err = archctl("status", tid[:12])
        self.assertEqual(rc, 0, err)
        self.assertIn("placements", out)
        self.assertRegex(out, r"cache1\s+cache\s+\S+\s+3/3 files complete")
        self.assertRegex(out, r"archive1\s+archive\s+\S+\s+1/1 files complete \(68\.4 KiB\), 1 of 3 selected")
        self.assertRegex(out, r"archive2\s+archive\s+no placement")
        self.assertIn("cache1: 1/3 files with a proven archive copy (archive1 1); 2 without one:", out)
        self.assertIn("pay/b.bin — archive1: skipped in qBittorrent", out)
        self.assertIn(job_id, out)

        rc, out, err = archctl("status", job_id, "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["resource"], tid)
        self.assertEqual([j["id"] for j in doc["jobs"]], [job_id])

        rc, out, err = archctl("status", "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        mine = [r for r in doc["placements"] if r["resource"] == tid]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["coverage"][0]["covered"], 1)
        rc, out, err = archctl("status")
        self.assertRegex(out, rf"placements\n(.*\n)*  {tid[:12]}\s+pay\s+archive1 1/1 · cache1 3/3\s+cache1 covered 1/3")

        rc, out, err = archctl("status", "deadbeef00", "--json")
        self.assertEqual(rc, 1, out)
        doc = json.loads(out)
        self.assertEqual(doc["error"]["code"], "NOT_FOUND")
        self.assertIn("job id", doc["error"]["hint"])

    def test_z_no_secret_anywhere(self):
        self.assertGreater(len(CAPTURED), 6)
        for secret in LAB.secrets():
            for text in CAPTURED:
                self.assertNotIn(secret, text)
        for root, _, files in os.walk(LAB.state_dir):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read()
                for secret in LAB.secrets():
                    self.assertNotIn(secret.encode(), data)


if __name__ == "__main__":
    started = time.monotonic()
    result = unittest.main(verbosity=2, exit=False).result
    sys.stderr.write(f"test_status: wall time {time.monotonic() - started:.1f}s\n")
    sys.exit(0 if result.wasSuccessful() else 1)
