#!/usr/bin/python3
"""`archctl status` against a 3-node lab: all up, one qBittorrent down, a wrong password,
`status RES|JOB` after a partial archive (placements, per-node and per-cache coverage, jobs);
the inventory: a running job with the pid driving it, step and percent; a second run of that job
(archive, evict, resume, job cancel) says who drives it and exits 10; a failed job listed with the
commands that resolve it; ambiguous job id prefixes refused like git; placements still listed
after `job clear`."""

import json
import os
import re
import subprocess
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


def new_resource(name, seed):
    layout = {"pay/a.bin": 200000, "pay/b.bin": 90000}
    _, tid, save, _ = flows.seed_resource(LAB, name, layout, seed, kind="v1")
    return tid


def status_json(*args):
    rc, out, err = archctl("status", *args, "--json")
    return rc, json.loads(out), err


def lock_pid(job):
    with open(os.path.join(LAB.state_dir, "jobs", job, "lock")) as f:
        return json.load(f)["pid"]


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

    def test_c2_refused_credentials_are_not_sent_again(self):
        # qBittorrent bans an address after MaxAuthenticationFailCount failed logins, and with it
        # every other WebUI client on the host. Four cron runs with a wrong password must cost
        # one failed login, not two per run; a changed password and `node check` try once more.
        node = LAB.node("cache1")["qb"]
        qb = LAB.qb("cache1")
        bad_file = os.path.join(LAB.dir, "archctl", "secrets", "cache1.refused.qb")
        record = os.path.join(LAB.state_dir, "logins", "cache1.json")

        def write_secret(text):
            fd = os.open(bad_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text + "\n")

        def login_error():
            rc, out, err = archctl("status", "--json")
            self.assertEqual(rc, 1, err)
            cache = next(n for n in json.loads(out)["nodes"] if n["name"] == "cache1")
            return cache["qbittorrent"]["error"], out + err

        wrong = "refusedpw-" + os.urandom(5).hex()
        write_secret(wrong)
        with open(LAB.config_path) as f:
            original = f.read()
        qb.set_preferences({"web_ui_max_auth_fail_count": 4})
        try:
            with open(LAB.config_path, "w") as f:
                f.write(original.replace(node["password_file"], bad_file))
            first, text = login_error()
            self.assertEqual(first["code"], "QB_AUTH")
            self.assertIn("failed: wrong username or password", first["message"])
            for _ in range(3):
                again, text = login_error()
                self.assertEqual(again["code"], "QB_AUTH")
                self.assertEqual(again["message"], "login to qBittorrent on 'cache1' was refused for these credentials before; "
                                                   "archctl does not send them again")
                self.assertNotIn(wrong, text)
            with open(record) as f:
                self.assertNotIn(wrong, f.read())
            # Not banned: the right password still logs in from this address.
            status, body = qb._raw("POST", "auth/login", form={"username": qb.username, "password": qb.password})
            self.assertEqual((status, body.decode().strip()), (200, "Ok."))
            # Other credentials are tried (once), and so are the same ones when the user asks.
            write_secret(wrong + "-2")
            changed, _ = login_error()
            self.assertIn("failed: wrong username or password", changed["message"])
            rc, out, err = archctl("node", "check", "cache1")
            self.assertEqual(rc, 1, out + err)
            self.assertIn("wrong username or password", out + err)
            status, body = qb._raw("POST", "auth/login", form={"username": qb.username, "password": qb.password})
            self.assertEqual((status, body.decode().strip()), (200, "Ok."))
        finally:
            with open(LAB.config_path, "w") as f:
                f.write(original)
            qb.set_preferences({"web_ui_max_auth_fail_count": 0})
        # The right password logs in and drops the record.
        rc, _, err = archctl("status")
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(record))

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
        self.assertIn("cache1: 1/3 files with a proven archive copy (1 file on archive1); 2 without one:", out)
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


    def test_f_running_job_has_its_pid_and_a_second_run_exits_10(self):
        tid = new_resource("res-running", 11)
        release = flows.archctl_paused_at(LAB, "job.step.sync", "archive", tid[:12], "--to", "archive1", "--yes", "--json")
        try:
            job = flows.job_of(LAB, tid)
            pid = lock_pid(job)
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                self.assertIn(b"archive", f.read())
            rc, doc, err = status_json()
            self.assertEqual(rc, 0, err)
            running = {a["job"]: a for a in doc["running"]}
            self.assertIn(job, running, doc["running"])
            mine = running[job]
            self.assertEqual(mine["driver"]["pid"], pid)
            self.assertEqual(mine["step"], "merge")
            self.assertEqual(mine["percent"], 100.0)
            self.assertEqual(mine["resolve"], [])
            self.assertNotIn(job, [a["job"] for a in doc["attention"]])
            rc, out, err = archctl("status")
            line = next(l for l in out.splitlines() if l.strip().startswith(job))
            self.assertIn(f"running: pid {pid}, step merge, 100%", line)

            # Every second run of the job says who drives it and exits 10, never 1.
            driven = f"job {job} is being driven by another archctl (pid {pid})"
            rc, out, err = archctl("archive", tid[:12], "--to", "archive1", "--yes", "--json", timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertEqual(json.loads(out)["stopped"]["reason"], driven)
            rc, out, err = archctl("archive", tid[:12], "--to", "archive1", "--yes", timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertIn(f"archctl: stopped: {driven}", err)
            self.assertNotIn("failed", err)
            rc, out, err = archctl("resume", job, timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertIn(driven, err)
            rc, out, err = archctl("resume", timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertIn(driven, err)
            rc, out, err = archctl("job", "cancel", job, "--json", timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertEqual(json.loads(out)["stopped"]["reason"], driven + "; nothing was cancelled")
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err + out)

    def test_g_failed_job_is_listed_with_the_commands_that_resolve_it(self):
        tid = new_resource("res-failed", 12)
        release = flows.archctl_paused_at(LAB, "job.step.sync", "archive", tid[:12], "--to", "archive1", "--yes", "--json")
        LAB.qb("cache1").delete(tid, delete_files=False)
        flows.wait(lambda: LAB.qb("cache1").info([tid]) == [], what="source torrent removed")
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        job = json.loads(out)["job"]["job"]
        rc, doc, err = status_json()
        self.assertEqual(rc, 0, err)
        self.assertIn(job, [j["id"] for j in doc["jobs"]])
        attention = {a["job"]: a for a in doc["attention"]}
        self.assertIn(job, attention, doc["attention"])
        self.assertEqual(attention[job]["state"], "failed")
        self.assertEqual(attention[job]["resolve"], [f"archctl job show {job}", f"archctl job rm {job}"])
        self.assertIsNone(attention[job]["driver"])
        rc, out, err = archctl("status")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, rf"\n  {job}\s+archive\s+{tid[:12]}\s+cache1 → archive1\s+failed: .*→ archctl job show {job}")
        self.assertIn("needs attention: ", out)
        self.assertIn(f"\n  {job}  failed: archctl job show {job}, then archctl job rm {job}", out)

    def test_h_ambiguous_job_prefix_is_refused_with_its_candidates(self):
        rows = json.loads(archctl("job", "list", "--all", "--json")[1])["jobs"]
        self.assertGreaterEqual(len(rows), 3)
        ids = sorted(r["id"] for r in rows)
        prefix = os.path.commonprefix(ids)
        self.assertGreaterEqual(len(prefix), 8, "the jobs of one run share their date")
        for args in (["job", "rm", prefix], ["job", "show", prefix], ["job", "cancel", prefix], ["resume", prefix],
                     ["status", prefix]):
            rc, out, err = archctl(*args, "--json", timeout=120)
            self.assertEqual(rc, 1, f"{args}: {err}{out}")
            doc = json.loads(out)
            self.assertEqual(doc["error"]["code"], "AMBIGUOUS", args)
            self.assertIn(f"job id '{prefix}' is ambiguous: it matches {len(ids)} jobs", doc["error"]["message"])
            self.assertNotIn("\n", doc["error"]["message"], "error.message is one line; the candidates are its details")
            listed = "\n".join(doc["error"].get("details", []))
            for job in ids:
                self.assertIn(job, listed)
        rc, out, err = archctl("job", "rm", prefix)
        self.assertEqual(rc, 1)
        self.assertIn(f"archctl: error: job id '{prefix}' is ambiguous", err)
        for job in ids:
            self.assertIn(job, err, "the text error lists every candidate")
        self.assertEqual(sorted(r["id"] for r in json.loads(archctl("job", "list", "--all", "--json")[1])["jobs"]), ids,
                         "an ambiguous prefix removes nothing")
        # A prefix only one job has still names it.
        rc, out, err = archctl("job", "show", ids[0][:-2], "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["job"]["id"], ids[0])
        rc, doc, err = status_json(ids[0][:-2])
        self.assertEqual(rc, 0, err)
        self.assertEqual([j["id"] for j in doc["jobs"]], [ids[0]])

    def test_i_resume_of_an_unknown_job_names_it_not_a_path(self):
        rc, out, err = archctl("resume", "nosuchjob")
        self.assertEqual(rc, 1, err + out)
        self.assertIn("archctl: error: no job 'nosuchjob'", err)
        self.assertIn("hint: see 'archctl job list'", err)
        self.assertNotIn("definition.json", err + out)
        self.assertNotIn(LAB.state_dir, err + out)

    def test_j_evict_driven_elsewhere_exits_10(self):
        tid = new_resource("res-evict", 13)
        rc, out, err = archctl("archive", tid[:12], "--to", "archive1", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        release = flows.archctl_paused_at(LAB, "evict.held", "evict", tid[:12], "--from", "cache1", "--yes", "--json")
        try:
            job = flows.job_of(LAB, tid)
            pid = lock_pid(job)
            rc, out, err = archctl("evict", tid[:12], "--from", "cache1", "--yes", timeout=120)
            self.assertEqual(rc, 10, err + out)
            self.assertIn(f"archctl: stopped: job {job} is being driven by another archctl (pid {pid})", err)
            self.assertNotIn("failed", err)
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err + out)

    def test_k_a_sync_step_reads_its_live_percent(self):
        # Syncthing on archive1 receives at 400 KiB/s: the sync of 3 MiB takes seconds, and
        # status reads the bytes already on the target while it runs, never 0%.
        st = LAB.st("archive1")
        st.request("PATCH", "config/options", {"maxRecvKbps": 400, "limitBandwidthInLan": True})
        try:
            _, tid, _, _ = flows.seed_resource(LAB, "res-slow", {"pay/big.bin": 3 * 1024 * 1024}, 14, kind="v1")
            argv, env = LAB.archctl_command("archive", tid[:12], "--to", "archive1", "--yes", "--json")
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
            seen = []
            try:
                deadline = time.monotonic() + 120
                while proc.poll() is None and time.monotonic() < deadline:
                    rc, doc, err = status_json()
                    for a in doc["running"]:
                        if a["step"] == "sync" and a["percent"] is not None:
                            seen.append(a["percent"])
                    if any(0 < p < 100 for p in seen):
                        break
                    time.sleep(0.5)
            finally:
                out, err = proc.communicate(timeout=300)
            self.assertEqual(proc.returncode, 0, err + out)
            self.assertTrue(any(0 < p < 100 for p in seen), f"percents seen during sync: {seen}")
        finally:
            st.request("PATCH", "config/options", {"maxRecvKbps": 0, "limitBandwidthInLan": False})

    def test_y_placements_stay_listed_after_job_clear(self):
        rc, doc, err = status_json()
        self.assertEqual(rc, 0, err)
        before = {r["resource"]: r for r in doc["placements"]}
        recorded = [tid for tid, r in before.items()
                    if any(p.get("generation") for p in r["placements"])]
        self.assertGreaterEqual(len(recorded), 2, before.keys())
        rc, out, err = archctl("job", "clear")
        self.assertEqual(rc, 0, err)
        rc, doc, err = status_json()
        self.assertEqual(rc, 0, err)
        after = {r["resource"]: r for r in doc["placements"]}
        for tid in recorded:
            self.assertIn(tid, after, "a committed placement stays in the inventory after job clear")
            archive = next(p for p in after[tid]["placements"] if p["node"] == "archive1")
            self.assertTrue(archive["present"])
            self.assertGreaterEqual(archive["generation"]["generation"], 1)
            self.assertTrue(after[tid]["name"])
        self.assertEqual(doc["running"], [])
        rc, out, err = archctl("status")
        self.assertEqual(rc, 0, err)
        for tid in recorded:
            self.assertRegex(out, rf"placements\n(.*\n)*  {tid[:12]}\s+pay\s+\S*archive1 \d+/\d+")

    def test_yz_a_vanished_copy_and_an_id_of_no_valid_length(self):
        tid = new_resource("vanished", seed=29)
        flows.pair_route(LAB, "cache1", "archive1")
        # Two archive nodes and no --to: each line of a batch plan is refused naming --to and the nodes.
        rc, out, err = archctl("plan", "archive", "--from", "cache1", "--all")
        refused = [ln for ln in (out + err).splitlines() if "several archive nodes" in ln]
        self.assertTrue(refused, out + err)
        for line in refused:
            self.assertIn("several archive nodes are configured (archive1, archive2): name the target with --to NODE", line)
        rc, out, err = archctl("archive", tid[:12], "--to", "archive1", "--yes", timeout=300)
        self.assertEqual(rc, 0, err + out)
        for node in ("archive1", "cache1"):
            q = LAB.qb(node)
            q.post("torrents/delete", hashes=tid, deleteFiles="false")
            flows.wait(lambda: not q.info([tid]), what=f"torrent removed from {node}")
        rc, out, err = archctl("status")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, rf"{tid[:12]}\s+.*archive1 recorded \(generation 1\) but gone")
        # status RES finds the copy by its record, as the overview does, and shows it as gone.
        rc, out, err = archctl("status", tid[:12])
        self.assertEqual(rc, 0, err + out)
        self.assertNotIn("no node has a torrent matching", err)
        self.assertRegex(out, r"archive1\s+archive\s+recorded but gone: its torrent is no longer in qBittorrent\s+generation 1")
        rc, doc, err = status_json(tid[:12])
        self.assertEqual(rc, 0, err)
        archive = next(p for p in doc["placements"] if p["node"] == "archive1")
        self.assertFalse(archive["present"])
        self.assertEqual(archive["generation"]["generation"], 1)
        # 44 hex digits: a v2 prefix as far as RES goes; matching nothing, the message says what
        # a valid id looks like.
        rc, out, err = archctl("status", "ab" * 22)
        self.assertEqual(rc, 1, err + out)
        self.assertIn(f"no torrent matches '{'ab' * 22}' (44 hex digits): a v1 hash has 40 hex digits, a v2 hash 64, "
                      "and a prefix of at least 8 of either also works", err)
        for bad in ("abc", "not-a-hash"):
            rc, out, err = archctl("status", bad)
            self.assertEqual(rc, 1, err + out)
            self.assertIn("a v1 hash has 40 hex digits, a v2 hash 64", err)

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
