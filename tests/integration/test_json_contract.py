#!/usr/bin/python3
"""The --json contract on a real lab: every command's document is checked against
tests/docs/json_contract.json (the source of man archctl-json(7)), field by field, and the
[notify] hooks receive the job row at every job end (an exec hook and a url hook on a local
http.server), a failing hook leaving the job done."""

import http.server
import json
import os
import stat
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs"))

import flows  # noqa: E402
import json_contract  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
STATE = {}

LAYOUT = {"pay/a.bin": 200000, "pay/sub/b.txt": 12, "pay/c.dat": 70000}


def setUpModule():
    LAB.set_up()
    hook = os.path.join(LAB.dir, "hook.sh")
    with open(hook, "w") as f:
        f.write('#!/bin/sh\ncat >> "$1"\n')
    os.chmod(hook, 0o755)
    failing = os.path.join(LAB.dir, "failing-hook.sh")
    with open(failing, "w") as f:
        f.write("#!/bin/sh\ncat >/dev/null\necho hook complains >&2\nexit 3\n")
    os.chmod(failing, 0o755)
    STATE["hook_out"] = os.path.join(LAB.dir, "hook-out.jsonl")
    STATE["config"] = write_config("notify.toml", [
        "[notify]", f'exec = ["{hook}", "{STATE["hook_out"]}"]'])
    STATE["failing_config"] = write_config("failing.toml", ["[notify]", f'exec = ["{failing}"]'])


def write_config(name, extra):
    path = os.path.join(LAB.dir, name)
    with open(path, "w") as f:
        f.write(LAB.lab.config_text() + "\n" + "\n".join(extra) + "\n")
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    return path


def archctl(*args, config=None, timeout=300):
    return LAB.archctl(*args, "--json", config=config or STATE["config"], timeout=timeout)


def hook_rows():
    if not os.path.exists(STATE["hook_out"]):
        return []
    with open(STATE["hook_out"]) as f:
        return [json.loads(line) for line in f if line.strip()]


def secrets():
    out = []
    for name in ("cache1", "archive1"):
        node = LAB.node(name)
        out += [node["qb"]["password"], node["st"]["api_key"]]
    return out


class Contract(unittest.TestCase):
    def document(self, name, args, rc=(0,), config=None):
        """Run archctl with --json, check its exit status, parse its one document and check it
        against the contract's document `name`."""
        code, out, err = archctl(*args, config=config)
        self.assertIn(code, rc, f"archctl {' '.join(args)}: {err}{out}")
        doc = json.loads(out)
        self.assertEqual(json_contract.validate(doc, name), [], f"archctl {' '.join(args)} --json:\n{out}")
        self.assertEqual(doc["exit_code"], code)
        for secret in secrets():
            self.assertNotIn(secret, out)
        return doc

    def assert_done_row(self, row, op, tid):
        self.assertEqual(row["op"], op)
        self.assertEqual(row["resource"], tid)
        self.assertEqual(row["state"], "done")
        self.assertGreater(row["bytes_total"], 0)
        self.assertEqual(row["bytes_done"], row["bytes_total"])
        self.assertEqual(row["files_done"], row["files_total"])
        self.assertEqual(row["percent"], 100)
        self.assertIsNotNone(row["started"])
        self.assertIsNotNone(row["ended"])
        self.assertIsNone(row["failure"])

    def test_a_archive_then_evict_every_document(self):
        _, tid, save, tfile = flows.seed_resource(LAB, "res-a", LAYOUT, seed=71)
        res = tid[:12]
        plan = self.document("plan archive", ["plan", "archive", res])
        self.assertTrue(plan["token"])
        doc = self.document("archive", ["archive", res, "--confirm", plan["token"]])
        job = doc["job"]
        self.assert_done_row(job, "archive", tid)
        self.assertEqual(job["bytes_moved"], job["bytes_total"])
        self.assertEqual(job["files_total"], len(LAYOUT))
        job_id = job["job"]
        self.assertEqual(job["id"], job_id)
        # The exec hook got the same row at the job's end.
        rows = [r for r in hook_rows() if r["id"] == job_id]
        self.assertEqual(len(rows), 1, hook_rows())
        self.assertEqual(rows[0]["event"], "done")
        self.assertEqual(json_contract.validate(rows[0], "notify"), [])
        self.assert_done_row(rows[0], "archive", tid)

        listed = self.document("job list", ["job", "list"])
        row = [j for j in listed["jobs"] if j["id"] == job_id][0]
        self.assert_done_row(row, "archive", tid)
        self.assertIsNone(row["pid"])
        self.document("job show", ["job", "show", job_id])
        status = self.document("status", ["status"])
        self.assertIn(job_id, [j["id"] for j in status["jobs"]])
        self.document("route list", ["route", "list"])
        self.document("route show", ["route", "show", LAB.route])
        self.document("route check", ["route", "check", LAB.route])
        repair = self.document("route ensure --repair", ["route", "ensure", "--repair", LAB.route])
        self.assertEqual([f["status"] for f in repair["repair"]["folders"]], ["holds", "holds"])
        config = self.document("config", ["config"])
        values = {s["key"]: s["value"] for s in config["settings"]}
        self.assertIsInstance(values["notify.exec"], list)
        self.assertEqual(values["notify.exec"][1], STATE["hook_out"])
        self.assertIsInstance(values["nodes.cache1.syncthing.addresses"], list)
        self.document("torrent show", ["torrent", "show", tfile])
        self.document("torrent verify", ["torrent", "verify", tfile, save])
        self.document("torrent show", ["torrent", "create", os.path.join(save, "pay"), "-o", os.path.join(LAB.dir, "a2.torrent")])
        self.document("node info", ["node", "info", "--root", LAB.dir])
        check = self.document("node check", ["node", "check", "cache1"])
        self.assertTrue(check["ok"], check)

        plan = self.document("plan evict", ["plan", "evict", res])
        doc = self.document("evict", ["evict", res, "--confirm", plan["token"]])
        self.assert_done_row(doc["job"], "evict", tid)
        self.assertEqual(doc["job"]["source"], "cache1")
        rows = [r for r in hook_rows() if r["id"] == doc["job"]["job"]]
        self.assertEqual([r["event"] for r in rows], ["done"])
        self.assertEqual(rows[0]["op"], "evict")

        code, out, err = LAB.archctl("--version", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(json_contract.validate(json.loads(out), "version"), [])

    def test_b_not_covered_is_one_line_with_the_files_structured(self):
        _, tid, _, _ = flows.seed_resource(LAB, "res-b", LAYOUT, seed=72)
        doc = self.document("evict", ["evict", tid[:12], "--yes"], rc=(1,))
        e = doc["error"]
        self.assertEqual(e["code"], "NOT_COVERED")
        self.assertNotIn("\n", e["message"])
        self.assertIn("3 of 3 files have no archive copy", e["message"])
        self.assertTrue(any("pay/a.bin" in line for line in e["details"]), e)
        self.assertEqual(sorted(m["path"] for m in e["missing"]), sorted(LAYOUT))
        self.assertTrue(all(isinstance(m["size"], int) and isinstance(m["refused"], list) for m in e["missing"]))
        self.assertIn("archctl archive", e["hint"])

    def test_c_stop_resume_cancel_rm_clear(self):
        _, tid, _, _ = flows.seed_resource(LAB, "res-c", LAYOUT, seed=73)
        doc = self.document("archive", ["archive", tid[:12], "--yes", "--max-minutes", "0.001"], rc=(10,))
        job = doc["job"]
        self.assertEqual(job["outcome"], "stopped")
        self.assertEqual(job["state"], "running")
        self.assertIsNone(job["ended"])
        self.assertIsInstance(job["percent"], (int, float))
        self.assertEqual(doc["stopped"]["hint"][:5], "rerun")
        self.assertEqual([r for r in hook_rows() if r["id"] == job["job"]], [], "a stop is not a job end")
        resumed = self.document("resume", ["resume"])
        runs = [r for r in resumed["jobs"] if r["job"] == job["job"]]
        self.assertEqual(len(runs), 1)
        self.assert_done_row(runs[0], "archive", tid)

        # A job cancelled before its commit: the cancel's run carries the row, the hook says so.
        _, tid2, _, _ = flows.seed_resource(LAB, "res-c2", LAYOUT, seed=74)
        doc = self.document("archive", ["archive", tid2[:12], "--yes", "--max-minutes", "0.001"], rc=(10,))
        job_id = doc["job"]["job"]
        cancelled = self.document("job cancel", ["job", "cancel", job_id])
        self.assertEqual(cancelled["job"]["state"], "cancelled")
        self.assertEqual([r["event"] for r in hook_rows() if r["id"] == job_id], ["cancelled"])
        again = self.document("job cancel", ["job", "cancel", job_id])
        self.assertEqual(again["job"]["already_ended"], "cancelled")
        self.assertEqual(len([r for r in hook_rows() if r["id"] == job_id]), 1, "an ended job is not notified again")
        self.document("job rm", ["job", "rm", job_id])
        self.document("job clear", ["job", "clear"])

    def test_d_batch_documents_carry_each_jobs_row(self):
        ids = [flows.seed_resource(LAB, f"res-d{i}", LAYOUT, seed=80 + i)[1] for i in range(2)]
        plan = self.document("batch", ["plan", "archive", *[t[:12] for t in ids]])
        self.assertTrue(plan["token"])
        doc = self.document("batch", ["archive", *[t[:12] for t in ids], "--confirm", plan["token"]])
        for row in doc["batch"]["resources"]:
            self.assertEqual(row["outcome"], "done", row)
            self.assert_done_row(row["run"], "archive", row["resource"])
        doc = self.document("batch", ["evict", *[t[:12] for t in ids], "--yes"])
        for row in doc["batch"]["resources"]:
            self.assert_done_row(row["run"], "evict", row["resource"])

    def test_e_failing_hook_leaves_the_job_done(self):
        _, tid, _, _ = flows.seed_resource(LAB, "res-e", LAYOUT, seed=75)
        code, out, err = archctl("archive", tid[:12], "--yes", config=STATE["failing_config"])
        self.assertEqual(code, 0, err + out)
        self.assertEqual(json.loads(out)["job"]["state"], "done")
        self.assertIn("archctl: warning: notify hook", err)
        self.assertIn("exited with status 3", err)
        self.assertIn("hook complains", err)

    def test_f_url_hook_receives_the_post(self):
        got = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                got.append((self.path, self.headers["Content-Type"], body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        config = write_config("url.toml", ["[notify]", f'url = "http://127.0.0.1:{server.server_port}/archctl"'])
        _, tid, _, _ = flows.seed_resource(LAB, "res-f", LAYOUT, seed=76)
        code, out, err = archctl("archive", tid[:12], "--yes", config=config)
        self.assertEqual(code, 0, err + out)
        self.assertEqual(len(got), 1, err)
        path, ctype, body = got[0]
        self.assertEqual(path, "/archctl")
        self.assertEqual(ctype, "application/json")
        row = json.loads(body)
        self.assertEqual(json_contract.validate(row, "notify"), [])
        self.assertEqual(row["event"], "done")
        self.assert_done_row(row, "archive", tid)
        for secret in secrets():
            self.assertNotIn(secret.encode(), body)

    def test_g_tier_documents(self):
        flows.seed_resource(LAB, "res-g", LAYOUT, seed=77)
        config = write_config("tier.toml", ["[tier.box]", 'cache = "cache1"', 'archive = ["archive1"]', 'max_used = "1%"',
                                            'archive_when = { larger_than = "1B" }'])
        self.document("plan tier", ["plan", "tier", "box"], config=config)
        self.document("tier", ["tier", "box", "--yes", "--max-minutes", "2"], rc=(0, 1, 10), config=config)
        status = self.document("status", ["status"], config=config)
        self.assertEqual([p["policy"] for p in status["policies"]], ["box"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
