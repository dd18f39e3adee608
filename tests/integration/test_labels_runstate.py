#!/usr/bin/python3
"""Labels and run state, on real services.

Labels travel: a torrent archctl adds on a node gets the source torrent's qBittorrent category
and tags, on archive and back on unarchive (after evict), without the job's own temporary tag,
with automatic torrent management off and at the save path archctl chose; a category the
target does not have is created there with an empty save path. A node's `labels = "drop"`
adds torrents without category or tags, and its `[nodes.NAME.category_map]` renames
categories on the way in.

Run state: an existing target that a job touched and that then fails before its commit, or is
cancelled, is put back as it was — running again when it was running, stopped when it was
stopped, with the same selection, files and bytes — and `archctl job show` says so (an event
`baseline_restored` with the restored run state and selection)."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
archctl = LAB.archctl

LAYOUT = {"pay/a.bin": 150001, "pay/b.bin": 120002, "pay/sub/c.bin": 90003}
TAGS = {"sonarr", "keep-seeding"}
RUNNING = ("uploading", "stalledUP", "forcedUP", "queuedUP")
STOPPED = ("pausedUP", "stoppedUP", "pausedDL", "stoppedDL")
COUNTER = [0]


def new_resource(prefix, kind="hybrid"):
    """A fresh torrent seeded (stopped, complete) on cache1; unique name per call."""
    COUNTER[0] += 1
    name = f"{prefix}-{COUNTER[0]}"
    _, tid, save, _ = flows.seed_resource(LAB, name, LAYOUT, 700 + COUNTER[0], kind=kind)
    return tid, name, save


def archive_save(name):
    return os.path.join(LAB.node("archive1")["qb_root"], name)


def tag_set(torrent):
    """qBittorrent joins a torrent's tags with ", "."""
    return {t.strip() for t in torrent.get("tags", "").split(",") if t.strip()}


def categories(node):
    return LAB.qb(node).json("torrents/categories")


def ensure_cache_category(name="tv"):
    """The category on cache1, with a save path of its own (archctl must not move to it)."""
    if name not in categories("cache1"):
        LAB.qb("cache1").post("torrents/createCategory", category=name,
                              savePath=os.path.join(LAB.node("cache1")["qb_root"], f"category-{name}"))


def label_cache_torrent(tid, category="tv"):
    """The cache torrent gets category `category` and the tags "sonarr" and "keep-seeding"."""
    cq = LAB.qb("cache1")
    ensure_cache_category(category)
    cq.post("torrents/setCategory", hashes=tid, category=category)
    cq.post("torrents/addTags", hashes=tid, tags=",".join(sorted(TAGS)))
    t = flows.wait(lambda: (lambda x: x if x["category"] == category and tag_set(x) == TAGS else None)(cq.torrent(tid)),
                   what="cache torrent labelled")
    assert not t["auto_tmm"], t


def drop_archive_category(name):
    """A category left on archive1 by an earlier test goes, so this test sees archctl create it."""
    if name in categories("archive1"):
        LAB.qb("archive1").post("torrents/removeCategories", categories=name)
        flows.wait(lambda: name not in categories("archive1"), what=f"category {name} removed on archive1")


def state_config(test, text):
    """`text` as the state directory's config.toml for the rest of `test`; restored afterwards."""
    path = os.path.join(LAB.state_dir, "config.toml")
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()

    def restore():
        if old is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(old)

    test.addCleanup(restore)
    with open(path, "w") as f:
        f.write(text)


def archive(tid, *extra):
    return archctl("archive", tid[:12], *extra, "--from", "cache1", "--to", "archive1", "--yes", "--json", timeout=300)


def job_ids(tid):
    rc, out, err = archctl("job", "list", "--all", "--json")
    assert rc == 0, err
    return [j["id"] for j in json.loads(out)["jobs"] if j["resource"] == tid]


def new_job(tid, before):
    """The one job on `tid` not in `before`."""
    fresh = [j for j in job_ids(tid) if j not in before]
    assert len(fresh) == 1, (before, fresh)
    return fresh[0]


def show(job):
    rc, text, err = archctl("job", "show", job)
    assert rc == 0, err
    rc, out, err = archctl("job", "show", job, "--json")
    assert rc == 0, err
    return text, json.loads(out)


def settled(node, tid, states=None, timeout=30):
    """The torrent once qBittorrent is not checking it (and, with `states`, is in one of them);
    the last seen torrent when the wait ends without it."""
    q = LAB.qb(node)
    deadline = time.monotonic() + timeout
    while True:
        t = q.torrent(tid)
        ok = t is not None and not t["state"].startswith("checking") and t["state"] != "moving"
        if ok and (states is None or t["state"] in states):
            return t
        if time.monotonic() > deadline:
            return t
        time.sleep(0.2)


class LabelsTravel(unittest.TestCase):
    """archive → evict → unarchive: category and tags go along both ways."""

    def assert_labelled(self, node, tid, save_path, category="tv", tags=TAGS):
        t = LAB.qb(node).torrent(tid)
        self.assertIsNotNone(t, f"{node} lists the torrent")
        self.assertEqual(t["category"], category, f"category of the torrent on {node}")
        self.assertEqual(tag_set(t), tags, f"tags of the torrent on {node} (raw {t['tags']!r})")
        self.assertFalse(t["auto_tmm"], f"automatic torrent management is off on {node}")
        self.assertEqual(t["save_path"].rstrip("/"), save_path, f"the save path archctl chose on {node}")

    def round_trip(self, kind):
        tid, name, save = new_resource(f"lbl-{kind}", kind=kind)
        label_cache_torrent(tid)
        drop_archive_category("tv")
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assert_labelled("archive1", tid, archive_save(name))
        cats = categories("archive1")
        self.assertIn("tv", cats, "the category was created on archive1")
        self.assertEqual(cats["tv"].get("savePath", ""), "", "archctl creates the category with an empty save path")

        rc, out, err = archctl("evict", tid[:12], "--from", "cache1", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assertIsNone(LAB.qb("cache1").torrent(tid), "the cache copy was evicted")

        rc, out, err = archctl("unarchive", tid[:12], "--from", "archive1", "--to", "cache1", "--yes", "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assert_labelled("cache1", tid, save)
        self.assertTrue(all(f["progress"] == 1 for f in LAB.qb("cache1").files(tid)), "the cache copy is complete again")
        # The archive copy keeps its labels.
        self.assert_labelled("archive1", tid, archive_save(name))

    def test_a_v1_torrent_keeps_category_and_tags_both_ways(self):
        self.round_trip("v1")

    def test_b_hybrid_torrent_keeps_category_and_tags_both_ways(self):
        self.round_trip("hybrid")


class LabelsPolicy(unittest.TestCase):
    """Per-node policy for the labels of torrents archctl adds there."""

    def test_a_drop_adds_without_category_or_tags(self):
        state_config(self, '[nodes.archive1]\nlabels = "drop"\n')
        tid, name, save = new_resource("drop", kind="v1")
        label_cache_torrent(tid)
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertNotIn("unknown key", err, "nodes.archive1.labels is a setting archctl knows")
        t = LAB.qb("archive1").torrent(tid)
        self.assertEqual(t["category"], "", "no category on archive1")
        self.assertEqual(tag_set(t), set(), f"no tags on archive1 (raw {t['tags']!r})")
        self.assertFalse(t["auto_tmm"])
        self.assertEqual(t["save_path"].rstrip("/"), archive_save(name))
        # The cache copy is untouched.
        c = LAB.qb("cache1").torrent(tid)
        self.assertEqual((c["category"], tag_set(c)), ("tv", TAGS))
        rc, out, err = archctl("config", "--json")
        self.assertEqual(rc, 0, err + out)
        settings = {s["key"]: (s["value"], s["origin"]) for s in json.loads(out)["settings"]}
        self.assertEqual(settings.get("nodes.archive1.labels", (None,))[0], "drop", "the setting is known and effective")

    def test_b_category_map_renames_the_category(self):
        state_config(self, '[nodes.archive1.category_map]\ntv = "archive-tv"\n')
        drop_archive_category("archive-tv")
        tid, name, save = new_resource("map", kind="hybrid")
        label_cache_torrent(tid)
        rc, out, err = archive(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertNotIn("unknown key", err, "nodes.archive1.category_map is a setting archctl knows")
        t = LAB.qb("archive1").torrent(tid)
        self.assertEqual(t["category"], "archive-tv", "the mapped category on archive1")
        self.assertEqual(tag_set(t), TAGS, f"the tags on archive1 (raw {t['tags']!r})")
        self.assertFalse(t["auto_tmm"])
        self.assertEqual(t["save_path"].rstrip("/"), archive_save(name))
        cats = categories("archive1")
        self.assertIn("archive-tv", cats, "the mapped category was created on archive1")
        self.assertEqual(cats["archive-tv"].get("savePath", ""), "", "created with an empty save path")


def start_paused(point, *args, env=None):
    """archctl in the background, paused at crash point `point` (ARCHCTL_TEST_PAUSE_AT).
    Returns (process, gate): creating the file `gate` lets it go on."""
    gate = os.path.join(LAB.dir, f"gate-{time.monotonic_ns()}")
    argv, full_env = LAB.archctl_command(*args, env={**(env or {}), "ARCHCTL_TEST_PAUSE_AT": f"{point}:{gate}"})
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=full_env)
    try:
        flows.wait(lambda: os.path.exists(gate + ".paused") or proc.poll() is not None, timeout=180,
                   what=f"pause at {point}")
    except AssertionError:
        proc.kill()
        proc.communicate()
        raise
    if proc.poll() is not None:
        out, err = proc.communicate()
        raise AssertionError(f"archctl ended (rc {proc.returncode}) before pausing at {point}: {err}{out}")
    return proc, gate


def release(proc, gate, timeout=300):
    with open(gate, "w"):
        pass
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


class RunStateRestored(unittest.TestCase):
    """An existing target (file 0 archived) and a job adding file 1 that never commits."""

    def existing_target(self, prefix, running=True):
        """A resource whose archive placement holds file 0 only, running (seeding) or stopped.
        Returns (tid, name, archive save path, snapshot of the placement)."""
        tid, name, save = new_resource(prefix)
        rc, out, err = archive(tid, "--files", "0")
        self.assertEqual(rc, 0, err + out)
        aq = LAB.qb("archive1")
        if running:
            t = settled("archive1", tid, RUNNING, timeout=10)
            if t["state"] not in RUNNING:
                aq.resume(tid)
                t = settled("archive1", tid, RUNNING)
            self.assertIn(t["state"], RUNNING, "the archive torrent seeds")
        else:
            aq.pause(tid)
            t = settled("archive1", tid, STOPPED)
            self.assertIn(t["state"], STOPPED, "the archive torrent is stopped")
        target = archive_save(name)
        before = flows.placement_snapshot(LAB, "archive1", tid, target)
        self.assertTrue(before["present"])
        self.assertEqual(before["running"], running)
        self.assertEqual([f[:2] for f in before["files"]], [(0, True), (1, False), (2, False)], before["files"])
        return tid, name, target, before

    def corrupt_merged(self, tid, name, index=1):
        """Flip one byte of the file merge placed for `index` on archive1 (size, mode and mtime
        kept), so only the recheck can tell."""
        rel = [f["name"] for f in LAB.qb("cache1").files(tid) if f["index"] == index][0]
        path = os.path.join(archive_save(name), rel)
        self.assertTrue(os.path.isfile(path), f"merge placed {rel} on archive1")
        st = os.stat(path)
        os.chmod(path, st.st_mode | 0o200)
        offset = min(1000, st.st_size // 2)
        with open(path, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0xFF]))
        os.chmod(path, st.st_mode)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def assert_as_before(self, tid, target, before, what):
        states = RUNNING if before["running"] else STOPPED
        t = settled("archive1", tid, states)
        self.assertIsNotNone(t, f"{what}: the archive torrent is still there")
        self.assertIn(t["state"], states,
                      f"{what}: the archive torrent is {'running' if before['running'] else 'stopped'} again as before "
                      f"(state {t['state']})")
        after = flows.placement_snapshot(LAB, "archive1", tid, target)
        self.assertEqual(after, before, f"{what}: the placement is exactly as before (selection, files, bytes)")

    def baseline_restored_event(self, job, run_state):
        text, doc = show(job)
        self.assertIn("restored", text, "job show says the target was restored")
        restored = [e for e in doc["events"] if e.get("type") == "baseline_restored"]
        self.assertEqual(len(restored), 1, [e.get("type") for e in doc["events"]])
        event = restored[0]
        self.assertIn("run_state", event, f"baseline_restored names the run state it restored: {event}")
        self.assertIn("selection", event, f"baseline_restored names the selection it restored: {event}")
        self.assertEqual(event["run_state"], run_state, event)
        self.assertEqual(event["selection"], "0", event)

    def failing_job(self, tid, name, env=None):
        """`archive --files 1`, paused after merge, merged file 1 corrupted, released."""
        before_jobs = job_ids(tid)
        proc, gate = start_paused("job.step.merge", "archive", tid[:12], "--files", "1", "--from", "cache1",
                                  "--to", "archive1", "--yes", "--json", env=env)
        job = new_job(tid, before_jobs)
        self.corrupt_merged(tid, name)
        rc, out, err = release(proc, gate)
        return job, rc, out, err

    def test_a_failed_job_restarts_a_running_target(self):
        tid, name, target, before = self.existing_target("rs-fail")
        job, rc, out, err = self.failing_job(tid, name)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("VERIFY_FAILED", out)
        self.assertNotIn("compensation incomplete", err)
        self.assert_as_before(tid, target, before, "after the failed job")
        self.baseline_restored_event(job, "running")
        flows.staging_empty(LAB, LAB.route)

    def test_b_cancel_after_a_stop_after_merge_leaves_a_running_target_running(self):
        # Ctrl-C while the job is between merge and verify: a clean stop (exit 10), then cancel.
        tid, name, target, before = self.existing_target("rs-int")
        before_jobs = job_ids(tid)
        proc, gate = start_paused("job.step.merge", "archive", tid[:12], "--files", "1", "--from", "cache1",
                                  "--to", "archive1", "--yes", "--json")
        job = new_job(tid, before_jobs)
        proc.send_signal(signal.SIGINT)
        rc, out, err = release(proc, gate)
        self.assertEqual(rc, 10, err + out)
        rc, out, err = archctl("job", "cancel", job, "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assert_as_before(tid, target, before, "after the cancel")
        flows.staging_empty(LAB, LAB.route)

    def test_c_cancel_after_a_kill_with_the_target_stopped_restarts_it(self):
        # The job stopped the target for its recheck, the recheck failed, and the process was
        # killed while undoing the merge: the target is left stopped with file 1 selected.
        # `job cancel` finishes the undo and starts the target again.
        tid, name, target, before = self.existing_target("rs-kill")
        job, rc, out, err = self.failing_job(tid, name, env={"ARCHCTL_TEST_CRASH_AT": "unmerge.unlinked"})
        self.assertEqual(rc, 137, err + out)
        t = settled("archive1", tid)
        self.assertIn(t["state"], STOPPED, "the killed job left the target stopped")
        rc, out, err = archctl("job", "cancel", job, "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        self.assert_as_before(tid, target, before, "after the cancel")
        self.baseline_restored_event(job, "running")
        flows.staging_empty(LAB, LAB.route)

    def test_d_a_stopped_target_stays_stopped_after_a_failed_job(self):
        tid, name, target, before = self.existing_target("rs-stopped", running=False)
        job, rc, out, err = self.failing_job(tid, name)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("VERIFY_FAILED", out)
        self.assert_as_before(tid, target, before, "after the failed job")
        # Stopped, and it stays so (no late start).
        time.sleep(2)
        self.assertIn(LAB.qb("archive1").torrent(tid)["state"], STOPPED, "the target stays stopped")
        self.baseline_restored_event(job, "stopped")
        flows.staging_empty(LAB, LAB.route)


if __name__ == "__main__":
    unittest.main(verbosity=2)
