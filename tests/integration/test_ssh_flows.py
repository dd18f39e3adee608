#!/usr/bin/python3
"""ssh as a deployment runs it: both nodes are exec nodes in the short form of docs/design.md "Configuration",
`exec = ["ssh", "nas", "archctl", "node", "serve"]` (no --root: the roots come from the control
side), through an sshd this suite starts on 127.0.0.1 (tests/lab/sshd.py). An archive, an evict
and an unarchive complete over it; `archctl node check` proves a node end to end and names the
cause when the transport is broken (wrong port, missing remote binary, refused key); `status`
reports such a node as not ok (exit 1, the cause in --json)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab.sshd import Sshd  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
SMALL = {"pay/a.bin": 300 * 1024 + 5, "pay/sub/b.bin": 40000, "pay/c.txt": 12}
COUNTER = [0]
SSHD = None
SKIP = None


def setUpModule():
    global SSHD, SKIP
    LAB.set_up()
    bin_dir = os.path.join(LAB.dir, "remote-bin")
    os.makedirs(bin_dir, exist_ok=True)
    link = os.path.join(bin_dir, "archctl")
    if not os.path.lexists(link):
        os.symlink(os.environ["ARCHCTL_BIN"], link)
    SSHD = Sshd(os.path.join(LAB.dir, "sshd"), bin_dir=bin_dir)
    unittest.addModuleCleanup(SSHD.stop)
    SKIP = SSHD.prepare()


def short_form(host="nas", program="archctl", extra=()):
    """["ssh", "-F", <suite ssh_config>, host, program, "node", "serve", *extra]."""
    return SSHD.alias("nas")[:3] + [host, program, "node", "serve", *extra]


def config(**node_exec):
    """A config file where the named nodes use the given exec argv (default: both short form)."""
    execs = {"cache1": short_form(), "archive1": short_form()}
    execs.update(node_exec)
    COUNTER[0] += 1
    path = os.path.join(LAB.dir, f"ssh-flows-{COUNTER[0]}.toml")
    with open(path, "w") as f:
        f.write(LAB.lab.config_text(node_exec=execs, node_timeout={n: "10s" for n in execs}))
    return path


def checks_of(out):
    return {c["check"]: c for c in json.loads(out)["checks"]}


class SshFlows(unittest.TestCase):
    def setUp(self):
        if SKIP:
            self.skipTest(SKIP)
        if not SSHD.running():
            self.assertTrue(SSHD.start(), SSHD.log_tail())

    def test_a_archive_evict_unarchive_over_the_short_form(self):
        cfg = config()
        _, tid, _, _ = flows.seed_resource(LAB, "ssh-flow", SMALL, 411)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", config=cfg, timeout=300)
        self.assertEqual(rc, 0, err)
        aq, cq = LAB.qb("archive1"), LAB.qb("cache1")
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] in ("stalledUP", "uploading"), timeout=60,
                   what="archive copy seeding")
        flows.staging_empty(LAB, LAB.route)

        rc, out, err = LAB.archctl("evict", tid[:12], "--from", "cache1", "--yes", "--json", config=cfg, timeout=300)
        self.assertEqual(rc, 0, err)
        self.assertEqual(cq.info([tid]), [], "the cache copy is gone after evict")

        rc, out, err = LAB.archctl("unarchive", tid[:12], "--yes", config=cfg, timeout=300)
        self.assertEqual(rc, 0, err)
        flows.wait(lambda: cq.info([tid]) and cq.info([tid])[0]["state"] in ("stalledUP", "uploading"), timeout=60,
                   what="cache copy seeding again")
        self.assertTrue(all(f["progress"] == 1 for f in cq.files(tid)))

    def test_b_node_check_proves_an_ssh_node(self):
        cfg = config()
        rc, out, err = LAB.archctl("node", "check", "archive1", config=cfg, timeout=120)
        self.assertEqual(rc, 0, err + out)
        lines = out.strip().splitlines()
        self.assertTrue(lines and all(line.startswith("ok") for line in lines), out)
        node = LAB.node("archive1")
        for name in ("transport", "version", f"root {node['qb_root']}", f"root {node['sync_root']}", "qbittorrent",
                     "syncthing"):
            self.assertIn(name, out)
        rc, out, err = LAB.archctl("node", "check", "archive1", "--json", config=cfg, timeout=120)
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertTrue(doc["ok"])
        self.assertTrue(all(c["ok"] for c in doc["checks"]), doc)
        self.assertFalse([n for n in os.listdir(node["qb_root"]) if n.startswith(".archctl-write-check")])

    def assert_check_fails(self, exec_argv, cause):
        cfg = config(archive1=exec_argv)
        rc, out, err = LAB.archctl("node", "check", "archive1", config=cfg, timeout=120)
        self.assertEqual(rc, 1, err + out)
        transport = [line for line in out.splitlines() if " transport " in f" {line} "]
        self.assertTrue(transport and transport[0].startswith("FAIL"), out)
        self.assertIn(cause, out)
        self.assertIn("qbittorrent", out)  # the services are still checked
        rc, out, err = LAB.archctl("node", "check", "archive1", "--json", config=cfg, timeout=120)
        self.assertEqual(rc, 1, err)
        checks = checks_of(out)
        self.assertFalse(checks["transport"]["ok"])
        self.assertEqual(checks["transport"]["error"]["code"], "NODE_UNREACHABLE")
        self.assertIn(cause, json.dumps(checks["transport"]["error"]))
        self.assertTrue(checks["qbittorrent"]["ok"])
        return cfg

    def test_c_node_check_names_a_wrong_port(self):
        self.assert_check_fails(short_form(host="nas-wrong-port"), "Connection refused")

    def test_d_node_check_names_a_missing_remote_binary(self):
        self.assert_check_fails(short_form(program="archctl-not-installed"), "archctl-not-installed")

    def test_e_node_check_names_a_refused_key(self):
        self.assert_check_fails(short_form(host="nas-wrong-key"), "Permission denied")

    def test_f_status_reports_a_broken_transport(self):
        cfg = config(archive1=short_form(host="nas-wrong-port"))
        rc, out, err = LAB.archctl("status", config=cfg, timeout=120)
        self.assertEqual(rc, 1, err + out)
        row = [line for line in out.splitlines() if line.strip().startswith("archive1")]
        self.assertTrue(row, out)
        self.assertIn("transport:", row[0])
        self.assertIn("Connection refused", row[0])
        self.assertNotIn(" ok", row[0])
        self.assertIn("archctl node check archive1", err)
        rc, out, err = LAB.archctl("status", "--json", config=cfg, timeout=120)
        self.assertEqual(rc, 1, err)
        nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
        broken = nodes["archive1"]["transport"]
        self.assertFalse(broken["ok"])
        self.assertFalse(nodes["archive1"]["reachable"])
        self.assertEqual(broken["error"]["code"], "NODE_UNREACHABLE")
        self.assertIn("Connection refused", broken["error"]["message"] + broken["error"].get("hint", ""))
        self.assertTrue(nodes["cache1"]["transport"]["ok"])
        # ... and the healthy config is ok again.
        rc, out, err = LAB.archctl("status", "--json", config=config(), timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertTrue(all(n["transport"]["ok"] for n in json.loads(out)["nodes"]))

    def test_g_a_root_outside_the_nodes_own_roots_is_refused(self):
        node = LAB.node("archive1")
        only_qb = short_form(extra=("--root", node["qb_root"]))
        cfg = config(archive1=only_qb)
        rc, out, err = LAB.archctl("node", "check", "archive1", "--json", config=cfg, timeout=120)
        self.assertEqual(rc, 1, err)
        transport = checks_of(out)["transport"]
        self.assertEqual(transport["error"]["code"], "PATH_OUTSIDE_ROOT")
        self.assertIn(node["sync_root"], transport["error"]["message"])
        # The same roots given with --root are fine.
        both = short_form(extra=("--root", node["qb_root"], "--root", node["sync_root"]))
        rc, out, err = LAB.archctl("node", "check", "archive1", config=config(archive1=both), timeout=120)
        self.assertEqual(rc, 0, err + out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
