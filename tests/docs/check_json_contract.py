#!/usr/bin/python3
"""The --json contract (json_contract.json) is well formed and man/archctl-json.7 is rendered
from it as it stands (regenerate with `python3 tests/docs/json_contract.py --write`); the
validator accepts and refuses what it should."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json_contract as jc  # noqa: E402


def row(**over):
    r = {"id": "j", "op": "archive", "resource": "ab", "name": "n", "source": "s", "target": "t", "state": "done",
         "step": "done", "bytes_done": 1, "bytes_total": 1, "files_done": 1, "files_total": 1, "percent": 100.0,
         "started": "2026-12-03T06:00:00Z", "ended": None, "pid": None, "failure": None, "running": False,
         "status": "done", "needs_attention": False, "kept": []}
    r.update(over)
    return r


def envelope(**fields):
    return {"schema": 1, "ok": True, "exit_code": 0, "command": "job list", **fields}


class Contract(unittest.TestCase):
    def test_contract_is_well_formed(self):
        self.assertEqual(jc.check_contract(), [])

    def test_man_page_is_rendered_from_the_contract(self):
        with open(jc.MAN_PATH, encoding="utf-8") as f:
            page = f.read()
        self.assertEqual(page, jc.render_man(), "man/archctl-json.7 is stale: run python3 tests/docs/json_contract.py --write")
        for name in list(jc.CONTRACT["documents"]) + list(jc.CONTRACT["types"]):
            self.assertIn(f".SS {jc.roff(name)}\n", page)

    def test_every_job_row_field_of_the_issue_is_in_the_contract(self):
        fields = jc.CONTRACT["types"]["job_row"]["fields"]
        for f in ("id", "op", "resource", "source", "target", "state", "step", "bytes_done", "bytes_total", "files_done",
                  "files_total", "percent", "started", "ended", "pid", "failure"):
            self.assertIn(f, fields)

    def test_validator(self):
        paging = {"finished_shown": 1, "finished_hidden": 0, "limit": 20}
        self.assertEqual(jc.validate(envelope(jobs=[row()], **paging), "job list"), [])
        self.assertEqual(jc.validate(envelope(jobs=[row(failure={"code": "X", "message": "m"}, pid=12)], **paging), "job list"), [])
        self.assertEqual(jc.validate(envelope(jobs=[row()]), "job list"),
                         ["job list.finished_shown: missing", "job list.finished_hidden: missing", "job list.limit: missing"])
        bad = jc.validate(envelope(jobs=[row(percent="100%", extra=1)], **paging), "job list")
        self.assertIn("job list.jobs[0].percent: str \"100%\" is not number", bad)
        self.assertIn("job list.jobs[0].extra: not documented", bad)
        r = row()
        del r["ended"]
        self.assertEqual(jc.validate(envelope(jobs=[r], **paging), "job list"), ["job list.jobs[0].ended: missing"])
        # A run result carries the whole row or none of it.
        run = {"job": "j", "outcome": "done", "step": "done", "bytes_moved": 0}
        self.assertEqual(jc.validate(envelope(jobs=[run]), "resume"), [])
        self.assertEqual(jc.validate(envelope(jobs=[{**run, **row()}]), "resume"), [])
        self.assertTrue(jc.validate(envelope(jobs=[{**run, "op": "archive"}]), "resume"))
        # A setting's value: text or a list of text.
        settings = [{"key": "nodes.a.exec", "value": ["ssh", "a"], "origin": "default"}, {"key": "k", "value": "v", "origin": "o"}]
        self.assertEqual(jc.validate(envelope(settings=settings, layers=[]), "config"), [])
        self.assertTrue(jc.validate(envelope(settings=[{"key": "k", "value": 5, "origin": "o"}], layers=[]), "config"))
        # A layer: an absent one has no owner or mode.
        absent = {"layer": "state_dir", "path": "/s", "exists": False, "owner": None, "uid": None, "mode": None, "problems": [],
                  "trusted": False, "refused": False}
        self.assertEqual(jc.validate(envelope(settings=settings, layers=[absent]), "config"), [])
        self.assertTrue(jc.validate(envelope(settings=settings, layers=[{**absent, "mode": 644}]), "config"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
