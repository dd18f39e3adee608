#!/usr/bin/python3
"""Routes when a Syncthing is down, when a folder breaks the valve, and removing routes, on real
Syncthing and qBittorrent (docs/routes.md):

  a. a ready route whose archive Syncthing is stopped is `unreachable` (plan, route list,
     status), never `missing`; archive waits within transfer.outage_wait, exits 10 "waiting" and
     adds no folder to either Syncthing;
  b. a pair without a route is never provisioned while a Syncthing is down; a Syncthing stopped
     in the middle of provisioning ends the attempt's wait after the outage window (exit 10,
     record `provisioning`), and a rerun continues the same route ID;
  c. versioning turned on for a route folder is flagged by route list, route show, route check
     (ROUTE_VALVE), status and plan; `route ensure --repair` fixes it;
  d. a kill in the middle of a nonce write leaves no temp file in the route folder, and stale
     nonce temp files of older versions are removed by the next check, on both sides;
  e. `route rm` removes a route archctl created (folders, unused devices), refuses while a job
     uses it or while a Syncthing is down, and refuses a route archctl did not create.

One lab (cache1, cache2, archive1); the tests run in order and share its routes."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs"))

import flows  # noqa: E402
import json_contract  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("cache2", "cache"), ("archive1", "archive")])
LAYOUT = {"pay/a.bin": 700000, "pay/b.txt": 12}
STARTED = time.monotonic()
STATE = {}


def setUpModule():
    LAB.set_up()
    rc, doc, err = run_json("route", "ensure", "cache1", "archive1", timeout=120)
    assert rc == 0, (doc, err)
    STATE["route"] = doc["route"]["id"]
    _, STATE["tid"], _, _ = flows.seed_resource(LAB, "outage-1", LAYOUT, 41)


def tearDownModule():
    sys.stderr.write(f"\n  test_route_outage wall time {time.monotonic() - STARTED:.1f} s\n")


def run_json(*args, env=None, timeout=120, contract=None):
    """(exit status, the --json document, stderr); the document is checked against the contract's
    document `contract` when given."""
    rc, out, err = LAB.archctl(*args, "--json", env=env, timeout=timeout)
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(f"archctl {args}: no JSON (rc {rc}): {out!r} {err!r}")
    if contract:
        problems = json_contract.validate(doc, contract)
        assert problems == [], (contract, problems, doc)
    return rc, doc, err


def folder_ids(node):
    return sorted(f["id"] for f in LAB.st(node).get("config/folders"))


def device_ids(node):
    return sorted(d["deviceID"] for d in LAB.st(node).get("config/devices"))


def route_entry(doc, route_id):
    found = [r for r in doc["routes"] if r["id"] == route_id]
    return found[0] if found else None


def records():
    d = os.path.join(LAB.state_dir, "routes")
    return sorted(n for n in os.listdir(d) if n.endswith(".json")) if os.path.isdir(d) else []


def route_dir(node, route_id):
    return os.path.join(LAB.node(node)["sync_root"], route_id)


def nonce_temps(node, route_id):
    """Nonce temp files visible to Syncthing: in the route folder itself."""
    d = route_dir(node, route_id)
    return sorted(n for n in os.listdir(d) if n.startswith("..archctl-nonce-")) if os.path.isdir(d) else []


class RouteOutage(unittest.TestCase):
    def tearDown(self):
        for node in ("cache1", "cache2", "archive1"):
            LAB.lab.start_st(node)

    def test_a_a_ready_route_whose_syncthing_is_down_is_unreachable_and_never_reprovisioned(self):
        route, tid = STATE["route"], STATE["tid"]
        before = {n: folder_ids(n) for n in ("cache1", "archive1")}
        records_before = records()
        LAB.lab.stop_st("archive1")
        try:
            rc, doc, err = run_json("plan", "archive", tid[:12])
            self.assertEqual(rc, 0, (doc, err))
            state = doc["route"]["state"]
            self.assertTrue(state.startswith("unreachable: Syncthing of 'archive1' does not answer"), state)
            self.assertIn("the job waits for it", state)
            rc, out, err = LAB.archctl("plan", "archive", tid[:12])
            self.assertNotIn("missing", out + err)
            self.assertIn("unreachable", out + err)

            rc, doc, err = run_json("route", "list")
            self.assertEqual(rc, 0, (doc, err))
            self.assertEqual(route_entry(doc, route)["state"], "unreachable", doc)
            rc, out, err = LAB.archctl("route", "list")
            self.assertRegex(out, rf"{route}\s+cache1 <-> archive1\s+unreachable")

            rc, doc, err = run_json("status")
            self.assertEqual(route_entry(doc, route)["state"], "unreachable", doc["routes"])

            t0 = time.monotonic()
            rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_OUTAGE_WAIT": "15s"}, timeout=120)
            took = time.monotonic() - t0
            self.assertEqual(rc, 10, err)
            self.assertIn("waiting: Syncthing of 'archive1' unreachable", err)
            self.assertGreaterEqual(took, 14)
            self.assertLess(took, 60)
            sys.stderr.write(f"\n  archive with archive1's Syncthing down: exit 10 after {took:.1f} s\n")
        finally:
            LAB.lab.start_st("archive1")
        self.assertEqual({n: folder_ids(n) for n in ("cache1", "archive1")}, before)
        self.assertEqual(records(), records_before)
        rc, doc, err = run_json("route", "list")
        self.assertEqual([r["id"] for r in doc["routes"]], [route])

    def test_b_provisioning_waits_on_an_outage_within_the_window_and_a_rerun_continues_it(self):
        before = {n: folder_ids(n) for n in ("cache2", "archive1")}
        # No route for cache2/archive1, archive1's Syncthing down: nothing is known, nothing made.
        LAB.lab.stop_st("archive1")
        try:
            t0 = time.monotonic()
            rc, doc, err = run_json("route", "ensure", "cache2", "archive1", env={"ARCHCTL_OUTAGE_WAIT": "10s"}, timeout=90)
            took = time.monotonic() - t0
            self.assertEqual(rc, 10, (doc, err))
            self.assertTrue(doc["stopped"]["reason"].startswith("waiting: Syncthing of 'archive1' unreachable"), doc)
            self.assertLess(took, 45)
            self.assertEqual(folder_ids("cache2"), before["cache2"])
            self.assertFalse([r for r in records() if "cache2" in r])
        finally:
            LAB.lab.start_st("archive1")
        self.assertEqual(folder_ids("archive1"), before["archive1"])

        # archive1's Syncthing goes away once cache2's side is configured.
        release = flows.archctl_paused_at(LAB, "route.folder.recorded", "route", "ensure", "cache2", "archive1", "--json",
                                          env={"ARCHCTL_OUTAGE_WAIT": "10s"})
        LAB.lab.stop_st("archive1")
        try:
            t0 = time.monotonic()
            rc, out, err = release(run_timeout=90)
            took = time.monotonic() - t0
            self.assertEqual(rc, 10, err)
            doc = json.loads(out)
            self.assertIn("waiting: Syncthing of 'archive1' unreachable for 10 s", doc["stopped"]["reason"])
            self.assertIn("continues under route ID", doc["stopped"]["hint"])
            self.assertLess(took, 45)
            pending = [r[:-5] for r in records() if r.startswith("archctl-cache2-archive1-")]
            self.assertEqual(len(pending), 1, records())
            route_id = pending[0]
            rc, doc, err = run_json("route", "show", route_id)
            self.assertEqual(rc, 0, (doc, err))
            self.assertEqual(doc["route"]["record"]["state"], "provisioning")
            self.assertEqual(doc["route"]["state"], "provisioning")
        finally:
            LAB.lab.start_st("archive1")
        rc, doc, err = run_json("route", "ensure", "cache2", "archive1", timeout=120)
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(doc["route"]["id"], route_id)
        self.assertEqual(doc["route"]["action"], "provisioned")
        STATE["route2"] = route_id
        for node in ("cache2", "archive1"):
            f = LAB.st(node).get(f"config/folders/{route_id}")
            self.assertEqual(f["versioning"]["type"], "")
            self.assertTrue(f["ignorePerms"])
            self.assertFalse(f["ignoreDelete"])

    def test_c_versioning_on_a_route_folder_is_flagged_everywhere_and_repaired(self):
        route, tid = STATE["route"], STATE["tid"]
        for node in ("cache1", "archive1"):
            LAB.st(node).request("PATCH", f"config/folders/{route}",
                                 {"versioning": {"type": "trashcan", "params": {"cleanoutDays": "0"}}})
        fix = f"archctl route ensure --repair {route}"

        rc, doc, err = run_json("route", "list", contract="route list")
        entry = route_entry(doc, route)
        self.assertEqual(entry["state"], "unsafe", entry)
        self.assertEqual(sorted(v["node"] for v in entry["valve"]), ["archive1", "cache1"])
        self.assertEqual(entry["valve"][0]["problems"][0]["setting"], "versioning")
        self.assertEqual(entry["fix"], fix)
        rc, out, err = LAB.archctl("route", "list")
        self.assertRegex(out, rf"{route}\s+cache1 <-> archive1\s+unsafe")
        self.assertIn("versioning 'trashcan' (must be off)", out)
        self.assertIn(fix, out)
        rc, out, err = LAB.archctl("route", "show", route)
        self.assertIn("valve    cache1: versioning 'trashcan' (must be off)", out)

        rc, doc, err = run_json("route", "check", route)
        self.assertEqual(rc, 1, (doc, err))
        self.assertEqual(doc["error"]["code"], "ROUTE_VALVE")
        self.assertIn("versioning 'trashcan'", doc["error"]["message"])
        self.assertIn(fix, doc["error"]["hint"])

        rc, doc, err = run_json("status")
        self.assertEqual(route_entry(doc, route)["state"], "unsafe")
        rc, out, err = LAB.archctl("status")
        self.assertIn(f"unsafe: {route}: cache1: versioning 'trashcan' (must be off)", out + err)

        rc, doc, err = run_json("plan", "archive", tid[:12])
        self.assertEqual(rc, 0, (doc, err))
        self.assertTrue(doc["route"]["state"].startswith("unsafe: cache1: versioning 'trashcan'"), doc["route"])
        self.assertIn(fix, doc["route"]["state"])

        rc, doc, err = run_json("route", "ensure", "--repair", route, timeout=120, contract="route ensure --repair")
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(sorted(f["status"] for f in doc["repair"]["folders"]), ["repaired", "repaired"])
        self.assertTrue(doc["repair"]["verified_at"])
        for node in ("cache1", "archive1"):
            self.assertEqual(LAB.st(node).get(f"config/folders/{route}")["versioning"]["type"], "")
        rc, doc, err = run_json("route", "list")
        entry = route_entry(doc, route)
        self.assertEqual((entry["state"], entry["valve"]), ("ready", []))
        rc, doc, err = run_json("route", "check", route, timeout=90)
        self.assertEqual(rc, 0, (doc, err))

    def test_d_a_killed_nonce_write_leaves_no_temp_file_for_syncthing_to_carry(self):
        route = STATE["route"]
        rc, out, err = LAB.archctl("route", "check", route, env={"ARCHCTL_TEST_CRASH_AT": "atomic..archctl-nonce-cache1.written"})
        self.assertEqual(rc, 137, err)
        self.assertEqual(nonce_temps("cache1", route), [])
        time.sleep(3)  # the watcher delay is 1 s: a temp file there would have travelled by now
        self.assertEqual(nonce_temps("archive1", route), [])
        # A temp file an older archctl left, already carried to the partner by Syncthing.
        stale = "..archctl-nonce-cache1.tmp.4242.0"
        with open(os.path.join(route_dir("cache1", route), stale), "w") as f:
            f.write("archctl route nonce\n")
        old = time.time() - 3600
        os.utime(os.path.join(route_dir("cache1", route), stale), (old, old))
        flows.wait(lambda: stale in nonce_temps("archive1", route), timeout=30, what="stale temp carried to archive1")
        rc, doc, err = run_json("route", "check", route, timeout=90)
        self.assertEqual(rc, 0, (doc, err))
        self.assertEqual(nonce_temps("cache1", route), [])
        flows.wait(lambda: nonce_temps("archive1", route) == [], timeout=30, what="stale temp gone on archive1")

    def test_e_route_rm_removes_what_archctl_made_and_nothing_else(self):
        route, route2, tid = STATE["route"], STATE["route2"], STATE["tid"]
        # A route archctl did not create (made by hand) is refused.
        hand = flows.pair_route(LAB, "cache2", "archive1", "hand-route")
        rc, doc, err = run_json("route", "rm", hand)
        self.assertEqual(rc, 1, (doc, err))
        self.assertEqual(doc["error"]["code"], "ROUTE_CONFLICT")
        self.assertIn("not created by archctl", doc["error"]["message"])
        for node in ("cache2", "archive1"):
            self.assertIn(hand, folder_ids(node))

        # A job that uses the route holds it until it is finished.
        release = flows.archctl_paused_at(LAB, "job.step.stage", "archive", tid[:12], "--yes")
        try:
            job = flows.job_of(LAB, tid)
            rc, doc, err = run_json("route", "rm", route)
            self.assertEqual(rc, 1, (doc, err))
            self.assertEqual(doc["error"]["code"], "ROUTE_IN_USE")
            self.assertIn(f"unfinished job {job}", doc["error"]["message"])
            self.assertIn(route, folder_ids("cache1"))
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err)

        # Both Syncthings must answer.
        LAB.lab.stop_st("archive1")
        try:
            rc, doc, err = run_json("route", "rm", route)
            self.assertEqual(rc, 10, (doc, err))
            self.assertIn("waiting: Syncthing of 'archive1' does not answer", doc["stopped"]["reason"])
            self.assertIn(route, folder_ids("cache1"))
        finally:
            LAB.lab.start_st("archive1")

        # A verified route archctl made: both folders, the now unused devices and the record go;
        # the files on disk stay.
        cache1_dev, archive1_dev = LAB.node("cache1")["st"]["device_id"], LAB.node("archive1")["st"]["device_id"]
        rc, doc, err = run_json("route", "rm", route, contract="route rm")
        self.assertEqual(rc, 0, (doc, err))
        objects = {(o["node"], o["kind"]): o["status"] for o in doc["removed"]["objects"]}
        self.assertEqual(objects, {("cache1", "folder"): "removed", ("archive1", "folder"): "removed",
                                   ("cache1", "device"): "removed", ("archive1", "device"): "removed"})
        self.assertNotIn(route, folder_ids("cache1"))
        self.assertNotIn(route, folder_ids("archive1"))
        self.assertNotIn(archive1_dev, device_ids("cache1"))
        self.assertNotIn(cache1_dev, device_ids("archive1"))  # cache2's routes on archive1 do not share it
        self.assertTrue(os.path.isdir(route_dir("cache1", route)))
        self.assertNotIn(route + ".json", records())
        rc, out, err = LAB.archctl("route", "rm", route2)
        self.assertEqual(rc, 0, err)
        self.assertIn("files on disk were left in place", out)
        self.assertIn("kept device", out)  # hand-route still shares cache2 and archive1
        self.assertIn(LAB.node("cache2")["st"]["device_id"], device_ids("archive1"))
        rc, doc, err = run_json("route", "list")
        self.assertEqual([r["id"] for r in doc["routes"]], [hand])


if __name__ == "__main__":
    unittest.main(verbosity=2)
