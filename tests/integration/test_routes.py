#!/usr/bin/python3
"""archctl route against real Syncthing instances (tests/lab): discovery, provisioning with
nonce verification, timeout, rollback, mesh and the crash-point matrix.

Two labs: a 3-node lab (cache1, cache2, archive1) for discovery and mesh, a 2-node lab
(cache1, archive1) for ensure, timeout/rollback and crash points. Every wait has a deadline.
"""

import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab import lab as labmod  # noqa: E402

STARTED = time.monotonic()


# ------------------------------------------------------------------------------------------
# Helpers kept here rather than in lab.py: stopping/starting one Syncthing, raw config edits.

def stop_syncthing(lab, name):
    st = lab.node(name)["st"]
    labmod.stop_pid(st["pid"], st["home"])
    if st.get("child_pid"):
        labmod.stop_pid(st["child_pid"], st["home"], timeout=5)


def spawn_syncthing(lab, name):
    """Start one Syncthing and wait (bounded) until the child has exec'd, so the lab's liveness
    check, which looks for the home directory in the command line, does not see the fork."""
    st = lab.node(name)["st"]
    lab._spawn_st(st)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and st["home"] not in labmod._cmdline(st["pid"]):
        time.sleep(0.02)


def start_syncthing(lab, name):
    spawn_syncthing(lab, name)
    lab._wait_st(lab.node(name)["st"], time.monotonic() + labmod.READY_TIMEOUT_S)
    lab._save()


def device_id(lab, name):
    return lab.node(name)["st"]["device_id"]


def add_device(lab, on, peer):
    st = lab.st(on)
    addr = lab.node(peer)["st"]["address"]
    st.request("PUT", f"config/devices/{device_id(lab, peer)}",
               {"deviceID": device_id(lab, peer), "name": peer, "addresses": [addr]})


def add_folder(lab, on, folder_id, path, peers, ftype="sendreceive"):
    devices = [{"deviceID": device_id(lab, on)}] + [{"deviceID": device_id(lab, p)} for p in peers]
    lab.st(on).request("PUT", f"config/folders/{folder_id}",
                       {"id": folder_id, "label": folder_id, "path": path, "type": ftype, "devices": devices,
                        "fsWatcherEnabled": True, "fsWatcherDelayS": 1, "rescanIntervalS": 3600})


def folders(lab, name):
    return lab.st(name).get("config/folders")


def devices(lab, name):
    return lab.st(name).get("config/devices")


def config_dump(lab, name, folder_ids=None):
    """The REST JSON of the named folders (or all) and all devices, canonical text."""
    fs = [f for f in folders(lab, name) if folder_ids is None or f["id"] in folder_ids]
    return json.dumps({"folders": sorted(fs, key=lambda f: f["id"]),
                       "devices": sorted(devices(lab, name), key=lambda d: d["deviceID"])}, sort_keys=True)


def route_folders(lab, name):
    return [f for f in folders(lab, name) if f["id"].startswith("archctl-")]


def read_text(path):
    with open(path) as f:
        return f.read()


def reset_routes(lab):
    """Remove every folder and every peer device from all Syncthings, and the records; then
    restart the Syncthings. (Syncthing 1.19 keeps a 60 s redial backoff in memory for a device
    whose connection was refused; removing and re-adding devices within seconds, as this suite
    does, would otherwise wait it out. A restart clears it, as a fresh pairing would be.)"""
    for node in lab.info["nodes"]:
        st = lab.st(node["name"])
        for f in folders(lab, node["name"]):
            st.request("DELETE", f"config/folders/{f['id']}")
        for d in devices(lab, node["name"]):
            if d["deviceID"] != node["st"]["device_id"]:
                st.request("DELETE", f"config/devices/{d['deviceID']}")
    routes_dir = os.path.join(lab.state_dir, "routes")
    if os.path.isdir(routes_dir):
        for entry in os.listdir(routes_dir):
            os.unlink(os.path.join(routes_dir, entry))
    names = [n["name"] for n in lab.info["nodes"]]
    for name in names:  # SIGTERM both first, so they shut down in parallel
        st = lab.node(name)["st"]
        if labmod.alive(st["pid"], st["home"]):
            os.kill(st["pid"], signal.SIGTERM)
    for name in names:
        stop_syncthing(lab, name)
    for name in names:
        spawn_syncthing(lab, name)
    deadline = time.monotonic() + labmod.READY_TIMEOUT_S
    for name in names:
        lab._wait_st(lab.node(name)["st"], deadline)
    lab._save()


def set_state_config(lab, text):
    path = os.path.join(lab.state_dir, "config.toml")
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
        return
    with open(path, "w") as f:
        f.write(text)


def run_json(lab, *args, env=None, timeout=120):
    rc, out, err = lab.archctl(*args, "--json", env=env, timeout=timeout)
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(f"archctl {args}: no JSON (rc {rc}): {out!r} {err!r}")
    return rc, doc, err


def ensure(lab, cache, archive, *extra, env=None, timeout=120):
    return run_json(lab, "route", "ensure", cache, archive, *extra, env=env, timeout=timeout)


def listing(lab):
    rc, doc, err = run_json(lab, "route", "list", "-v")
    assert rc == 0, (doc, err)
    return doc


def assert_no_secrets(testcase, lab, *texts):
    for secret in lab.secrets():
        for text in texts:
            testcase.assertNotIn(secret, text)


# ------------------------------------------------------------------------------------------

class DiscoveryAndMesh(unittest.TestCase):
    """cache1, cache2, archive1: a hand-made pair, folders to ignore, then mesh."""

    @classmethod
    def setUpClass(cls):
        cls.lab = flows.class_lab(cls, nodes=[("cache1", "cache"), ("cache2", "cache"), ("archive1", "archive")])
        lab = cls.lab
        c1, a1 = lab.node("cache1"), lab.node("archive1")
        for on, peers in (("cache1", ["archive1", "cache2"]), ("archive1", ["cache1", "cache2"]),
                          ("cache2", ["cache1", "archive1"])):
            for p in peers:
                add_device(lab, on, p)
        # The hand-made pair (a route archctl did not create).
        add_folder(lab, "cache1", "hand-pair", os.path.join(c1["sync_root"], "hand"), ["archive1"])
        add_folder(lab, "archive1", "hand-pair", os.path.join(a1["sync_root"], "hand"), ["cache1"])
        # Three devices, sendonly, outside the sync root: never routes, never touched.
        add_folder(lab, "cache1", "three-dev", os.path.join(c1["sync_root"], "three"), ["archive1", "cache2"])
        add_folder(lab, "archive1", "three-dev", os.path.join(a1["sync_root"], "three"), ["cache1", "cache2"])
        add_folder(lab, "cache1", "send-only", os.path.join(c1["sync_root"], "so"), ["archive1"], ftype="sendonly")
        add_folder(lab, "archive1", "send-only", os.path.join(a1["sync_root"], "so"), ["cache1"], ftype="sendonly")
        outside_c = os.path.join(lab.dir, "outside-c")
        outside_a = os.path.join(lab.dir, "outside-a")
        add_folder(lab, "cache1", "outside", outside_c, ["archive1"])
        add_folder(lab, "archive1", "outside", outside_a, ["cache1"])
        cls.ignored_ids = ["three-dev", "send-only", "outside"]
        cls.before = {n: config_dump(lab, n, cls.ignored_ids) for n in ("cache1", "archive1")}
        cls.xml_before = {n: cls.folder_xml(n) for n in ("cache1", "archive1")}

    @classmethod
    def folder_xml(cls, name):
        """The <folder> elements of the ignored folders in config.xml, as text."""
        with open(os.path.join(cls.lab.node(name)["st"]["home"], "config.xml")) as f:
            xml = f.read()
        out = []
        for fid in cls.ignored_ids:
            m = re.search(r'<folder id="%s".*?</folder>' % re.escape(fid), xml, re.S)
            out.append(m.group(0) if m else None)
        return out

    def assert_ignored_untouched(self):
        for n in ("cache1", "archive1"):
            self.assertEqual(config_dump(self.lab, n, self.ignored_ids), self.before[n])
            self.assertEqual(self.folder_xml(n), self.xml_before[n])

    def test_1_discovery_finds_the_pair_and_ignores_the_rest(self):
        doc = listing(self.lab)
        ids = [r["id"] for r in doc["routes"]]
        self.assertEqual(ids, ["hand-pair"])
        route = doc["routes"][0]
        self.assertEqual((route["cache"], route["archive"]), ("cache1", "archive1"))
        self.assertTrue(route["discovered"])
        # Made by hand without ignorePerms: a chmod on the far side would reach the source.
        self.assertEqual(route["state"], "unsafe")
        self.assertEqual([p["setting"] for v in route["valve"] for p in v["problems"]], ["ignorePerms", "ignorePerms"])
        self.assertEqual(route["fix"], "archctl route ensure --repair hand-pair")
        reasons = {(i["node"], i["folder"]): i["reason"] for i in doc["ignored"]}
        for node in ("cache1", "archive1"):
            self.assertIn("shared with 3 devices", reasons[(node, "three-dev")])
            self.assertIn("type sendonly", reasons[(node, "send-only")])
            self.assertIn("outside the sync root", reasons[(node, "outside")])
        rc, out, err = self.lab.archctl("route", "list", "-v")
        self.assertEqual(rc, 0, err)
        self.assertIn("ignored folders", out)
        self.assertIn("three-dev", out)
        assert_no_secrets(self, self.lab, out, err)
        self.assert_ignored_untouched()

    def test_2_check_verifies_the_hand_made_pair_once_its_valve_is_repaired(self):
        rc, doc, err = run_json(self.lab, "route", "check", "hand-pair", timeout=90)
        self.assertEqual(rc, 1, (doc, err))
        self.assertEqual(doc["error"]["code"], "ROUTE_VALVE")
        rc, doc, err = run_json(self.lab, "route", "ensure", "--repair", "hand-pair", timeout=90)
        self.assertEqual(rc, 0, (doc, err))
        for node in ("cache1", "archive1"):
            self.assertTrue(self.lab.st(node).get("config/folders/hand-pair")["ignorePerms"])
        rc, doc, err = run_json(self.lab, "route", "check", "hand-pair", timeout=90)
        self.assertEqual(rc, 0, (doc, err))
        self.assertTrue(doc["check"]["ok"])
        doc = listing(self.lab)
        self.assertEqual(doc["routes"][0]["state"], "ready")
        self.assert_ignored_untouched()

    def test_3_mesh_creates_exactly_the_missing_pairs(self):
        rc, doc, err = run_json(self.lab, "route", "mesh", timeout=120)
        self.assertEqual(rc, 0, (doc, err))
        mesh = doc["mesh"]
        self.assertEqual([(r["cache"], r["archive"]) for r in mesh["ensured"]], [("cache2", "archive1")])
        self.assertEqual([(p["cache"], p["archive"]) for p in mesh["present"]], [("cache1", "archive1")])
        self.assertEqual(len(route_folders(self.lab, "cache2")), 1)
        self.assertEqual(len(route_folders(self.lab, "archive1")), 1)
        self.assertEqual(route_folders(self.lab, "cache1"), [])
        doc = listing(self.lab)
        self.assertEqual(sorted((r["cache"], r["archive"], r["state"]) for r in doc["routes"]),
                         [("cache1", "archive1", "ready"), ("cache2", "archive1", "ready")])
        # Rerun: nothing missing, nothing created.
        rc, doc, err = run_json(self.lab, "route", "mesh")
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(doc["mesh"]["ensured"], [])
        self.assertEqual(len(doc["mesh"]["present"]), 2)
        self.assert_ignored_untouched()


class EnsureTimeoutRollbackCrash(unittest.TestCase):
    """cache1, archive1 without any pairing."""

    @classmethod
    def setUpClass(cls):
        cls.lab = flows.class_lab(cls, nodes=[("cache1", "cache"), ("archive1", "archive")])

    def setUp(self):
        set_state_config(self.lab, None)

    def assert_one_ready_route(self):
        lab = self.lab
        doc = listing(lab)
        states = [(r["cache"], r["archive"], r["state"]) for r in doc["routes"] if r["state"] != "rolled_back"]
        self.assertEqual(states, [("cache1", "archive1", "ready")], doc["routes"])
        for node, peer in (("cache1", "archive1"), ("archive1", "cache1")):
            self.assertEqual(len(route_folders(lab, node)), 1, folders(lab, node))
            ids = [d["deviceID"] for d in devices(lab, node)]
            self.assertEqual(ids.count(device_id(lab, peer)), 1)
            self.assertEqual(len(ids), len(set(ids)))
        return doc["routes"][0]

    def test_1_ensure_provisions_verifies_and_reruns_as_a_no_op(self):
        lab = self.lab
        t0 = time.monotonic()
        rc, doc, err = ensure(lab, "cache1", "archive1")
        took = time.monotonic() - t0
        self.assertEqual(rc, 0, (doc, err))
        route = doc["route"]
        self.assertEqual(route["action"], "provisioned")
        self.assertTrue(re.fullmatch(r"archctl-cache1-archive1-[0-9a-f]{6}", route["id"]), route["id"])
        self.assertEqual(route["cache_path"], os.path.join(lab.node("cache1")["sync_root"], route["id"]))
        sys.stderr.write(f"\n  ensure (fresh pair) took {took:.2f} s\n")
        # Folder settings archctl promises.
        for node in ("cache1", "archive1"):
            f = lab.st(node).get(f"config/folders/{route['id']}")
            self.assertEqual(f["type"], "sendreceive")
            self.assertTrue(f["ignorePerms"])
            self.assertEqual(f["versioning"]["type"], "")
            self.assertTrue(f["fsWatcherEnabled"])
            self.assertEqual(f["fsWatcherDelayS"], 1)
            self.assertEqual(f["rescanIntervalS"], 3600)
        # The nonce of each side is present, with the same content, on the other.
        for writer in ("cache1", "archive1"):
            name = f".archctl-nonce-{writer}"
            paths = [os.path.join(lab.node(n)["sync_root"], route["id"], name) for n in ("cache1", "archive1")]
            contents = [read_text(p) for p in paths]
            self.assertEqual(contents[0], contents[1])
            self.assertIn(f"writer {writer}", contents[0])
        rec = json.loads(read_text(os.path.join(lab.state_dir, "routes", route["id"] + ".json")))
        self.assertEqual(rec["state"], "ready")
        self.assertEqual(rec["check"]["last"], "ok")
        self.assertTrue(rec["check"]["verified_at"])
        self.assertEqual(sorted((c["node"], c["kind"], c["status"]) for c in rec["attempt"]["created"]),
                         [("archive1", "device", "created"), ("archive1", "folder", "created"),
                          ("cache1", "device", "created"), ("cache1", "folder", "created")])
        before = {n: config_dump(lab, n) for n in ("cache1", "archive1")}
        record_before = read_text(os.path.join(lab.state_dir, "routes", route["id"] + ".json"))
        rc, doc, err = ensure(lab, "cache1", "archive1")
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(doc["route"]["action"], "already_ready")
        self.assertEqual(doc["route"]["id"], route["id"])
        self.assertEqual({n: config_dump(lab, n) for n in ("cache1", "archive1")}, before)
        self.assertEqual(read_text(os.path.join(lab.state_dir, "routes", route["id"] + ".json")), record_before)
        self.assert_one_ready_route()
        # A verified route is never rolled back.
        rc, doc, err = run_json(lab, "route", "ensure", "--rollback", route["id"])
        self.assertEqual(rc, 1)
        self.assertEqual(doc["error"]["code"], "ROUTE_VERIFIED")
        self.assertEqual({n: config_dump(lab, n) for n in ("cache1", "archive1")}, before)
        # route show / check on it.
        rc, out, err = lab.archctl("route", "show", route["id"])
        self.assertEqual(rc, 0, err)
        self.assertIn("created folder", out)
        rc, doc, err = run_json(lab, "route", "check", route["id"])
        self.assertEqual(rc, 0, (doc, err))
        assert_no_secrets(self, lab, out, err)

    def test_2_a_stopped_peer_is_an_outage_then_rollback_then_completion(self):
        lab = self.lab
        reset_routes(lab)
        # An unrelated folder on cache1 that rollback must not touch.
        add_folder(lab, "cache1", "user-own", os.path.join(lab.node("cache1")["sync_root"], "own"), [])
        set_state_config(lab, '[routes]\nprovision_timeout = "4s"\n')
        # Configure cache1's side, then lose archive1's Syncthing.
        rc, out, err = lab.archctl("route", "ensure", "cache1", "archive1",
                                   env={"ARCHCTL_TEST_CRASH_AT": "route.folder.recorded"})
        self.assertEqual(rc, 137, err)
        stop_syncthing(lab, "archive1")
        try:
            # --max-minutes stops cleanly with exit 10 while waiting.
            rc, doc, err = ensure(lab, "cache1", "archive1", "--max-minutes", "0.02")
            self.assertEqual(rc, 10, (doc, err))
            self.assertIn("stopped", doc)
            # A Syncthing that does not answer is an outage, not a timeout: waited on within
            # transfer.outage_wait (not routes.provision_timeout), then a clean stop.
            t0 = time.monotonic()
            rc, doc, err = ensure(lab, "cache1", "archive1", env={"ARCHCTL_OUTAGE_WAIT": "3s"})
            took = time.monotonic() - t0
            self.assertEqual(rc, 10, (doc, err))
            self.assertIn("waiting: Syncthing of 'archive1' unreachable", doc["stopped"]["reason"])
            self.assertLess(took, 30)
            route_id = [r[:-5] for r in os.listdir(os.path.join(lab.state_dir, "routes")) if r.endswith(".json")][0]
            rc, doc, err = run_json(lab, "route", "show", route_id)
            self.assertEqual(rc, 0, (doc, err))
            rec = doc["route"]["record"]
            self.assertEqual(rec["state"], "provisioning")
            self.assertEqual(rec["attempt"]["step"], "configure cache1")
            created = sorted((c["node"], c["kind"], c["status"]) for c in rec["attempt"]["created"])
            self.assertEqual(created, [("cache1", "device", "created"), ("cache1", "folder", "created")])
            rc, out, err = lab.archctl("route", "show", route_id)
            self.assertIn("configure cache1", out)
            # Rollback removes exactly what the attempt created.
            cache_before_attempt = [f for f in folders(lab, "cache1") if f["id"] != route_id]
            rc, doc, err = run_json(lab, "route", "ensure", "--rollback", route_id)
            self.assertEqual(rc, 0, (doc, err))
            self.assertTrue(doc["rollback"]["complete"])
            self.assertEqual(sorted(o["status"] for o in doc["rollback"]["objects"]), ["removed", "removed"])
            self.assertEqual(folders(lab, "cache1"), cache_before_attempt)
            self.assertEqual([d["deviceID"] for d in devices(lab, "cache1")], [device_id(lab, "cache1")])
        finally:
            start_syncthing(lab, "archive1")
            set_state_config(lab, None)
        rc, doc, err = ensure(lab, "cache1", "archive1", timeout=120)
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(doc["route"]["id"], route_id)
        self.assert_one_ready_route()
        self.assertIn("user-own", [f["id"] for f in folders(lab, "cache1")])

    def test_3_rollback_keeps_objects_changed_since_creation(self):
        lab = self.lab
        reset_routes(lab)
        set_state_config(lab, '[routes]\nprovision_timeout = "3s"\n')
        rc, out, err = lab.archctl("route", "ensure", "cache1", "archive1",
                                   env={"ARCHCTL_TEST_CRASH_AT": "route.folder.recorded:2"})
        self.assertEqual(rc, 137, err)
        records = os.listdir(os.path.join(lab.state_dir, "routes"))
        route_id = [r[:-5] for r in records if r.endswith(".json")][0]
        # Someone edits cache1's folder after archctl created it.
        lab.st("cache1").request("PATCH", f"config/folders/{route_id}", {"label": "mine now"})
        before_cache = config_dump(lab, "cache1")
        rc, doc, err = run_json(lab, "route", "ensure", "--rollback", route_id)
        self.assertEqual(rc, 1, (doc, err))
        self.assertEqual(doc["error"]["code"], "ROLLBACK_INCOMPLETE")
        status = {(o["node"], o["kind"]): (o["status"], o.get("note", "")) for o in doc["rollback"]["objects"]}
        self.assertEqual(status[("cache1", "folder")][0], "kept")
        self.assertIn("changed", status[("cache1", "folder")][1])
        self.assertEqual(status[("cache1", "device")][0], "kept")  # the kept folder still uses it
        self.assertEqual(status[("archive1", "folder")][0], "removed")
        self.assertEqual(status[("archive1", "device")][0], "removed")
        self.assertEqual(config_dump(lab, "cache1"), before_cache)
        self.assertEqual(route_folders(lab, "archive1"), [])

    def test_4_crash_at_every_point_then_rerun_converges(self):
        lab = self.lab
        reset_routes(lab)
        rc, out, err = lab.archctl("route", "ensure", "cache1", "archive1", env={"ARCHCTL_TEST_CRASH_LIST": "1"})
        self.assertEqual(rc, 0, err)
        passes = re.findall(r"^archctl: crash-point (\S+)$", err, re.M)
        route_id = re.search(r"archctl-cache1-archive1-[0-9a-f]{6}", err).group(0)
        points = []
        seen = {}
        for name in passes:
            if route_id in name:
                continue  # record temp files carry the random route ID
            seen[name] = seen.get(name, 0) + 1
            if name == "route.seen" and seen[name] > 2:
                continue
            points.append(f"{name}:{seen[name]}")
        names = sorted({p.split(":")[0] for p in points})
        sys.stderr.write(f"\n  {len(points)} crash passes at {len(names)} points: {' '.join(names)}\n")
        for required in ("route.record.created", "route.device.intent", "route.device.put", "route.device.recorded",
                         "route.folder.intent", "route.folder.put", "route.folder.recorded", "route.nonce.written",
                         "route.nonce.observed", "route.ready"):
            self.assertIn(required, names)
        for point in points:
            with self.subTest(point=point):
                reset_routes(lab)
                rc, out, err = lab.archctl("route", "ensure", "cache1", "archive1",
                                           env={"ARCHCTL_TEST_CRASH_AT": point})
                # Every point the listing run passed is reached again: its first pass must crash.
                # A later pass of a point inside a wait (the listing run waited longer) may not
                # come, and then the run ends normally.
                if point.endswith(":1"):
                    self.assertEqual(rc, 137, (point, err))
                else:
                    self.assertIn(rc, (137, 0), (point, err))
                rc, doc, err = ensure(lab, "cache1", "archive1", timeout=120)
                self.assertEqual(rc, 0, (point, doc, err))
                self.assert_one_ready_route()


def tearDownModule():
    sys.stderr.write(f"\n  test_routes wall time {time.monotonic() - STARTED:.1f} s\n")


class RefusedFolder(unittest.TestCase):
    """A route folder the node refuses (its path is a symlink below the sync root): no wait can
    fix it, so check and ensure refuse at once, naming the path and the fix."""

    @classmethod
    def setUpClass(cls):
        cls.lab = flows.class_lab(cls, nodes=[("cache1", "cache"), ("archive1", "archive")])

    def test_1_a_symlinked_route_folder_is_refused_at_once(self):
        lab = self.lab
        route_id = "sym-pair"
        root = lab.node("archive1")["sync_root"]
        real = os.path.join(root, "real-" + route_id)
        os.makedirs(real)
        link = os.path.join(root, route_id)
        os.symlink(real, link)
        flows.pair_route(lab, "cache1", "archive1", route_id)  # Syncthing follows the link and is idle
        for args in (("route", "check", route_id), ("route", "ensure", "cache1", "archive1")):
            t0 = time.monotonic()
            rc, doc, err = run_json(lab, *args, timeout=150)
            took = time.monotonic() - t0
            self.assertEqual(rc, 1, (args, doc, err))
            self.assertEqual(doc["error"]["code"], "PATH_SYMLINK", doc)
            self.assertIn(f"'{link}' on 'archive1'", doc["error"]["message"])
            self.assertNotIn("\n", doc["error"]["message"])
            self.assertIn("real directory", doc["error"]["hint"])
            self.assertLess(took, 20, "a refusal no wait can fix is not waited on")
        rc, doc, err = run_json(lab, "route", "show", route_id)
        self.assertEqual(rc, 0, (doc, err))
        self.assertIn("folder path refused", doc["route"]["health"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
