#!/usr/bin/python3
"""The route is a one-way valve (docs/routes.md "The valve", docs/design.md "A stop stops the bytes"; issue 26), on real
qBittorrent and Syncthing: nothing the far side of a route does reaches a source inode, and a
stop stops the bytes in every command that runs jobs.

- a route folder with versioning on (or ignorePerms off) is refused before anything is staged
  (ROUTE_VALVE, with the repair); once repaired the job runs and leaves no payload inode in
  .stversions and the source's files exactly as they were;
- the partner device touches a staged file while the job is staged (archive: the archive node;
  unarchive: the cache node), after a crash and while a run waits: the source payload keeps
  bytes, mode, inode, size and mtime, and what reached it is restored with a `source_restored`
  event naming the node and the files;
- the partner replaces the staged `p` directory by a symlink, or drops a foreign file into it:
  the next run ends at once with STAGING_FOREIGN naming it, the job is undone;
- `job cancel` of a job stopped mid-sync leaves no `<job>` directory in either route folder;
- a batch archive and `resume` under --max-bytes move at most the budget plus one file per run,
  and after each exit 10 no byte arrives on the target until the next run.

The partner's actions are the ones a hostile or careless operator of the far device can do with
plain file tools; the suite never changes archctl's own records."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import collection  # noqa: E402
import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up

MIB = 1 << 20
NODES = ("cache1", "archive1")
Y2001_NS = 978307200 * 10**9  # 2001-01-01T00:00:00Z, what `touch -d 2001-01-01` sets (UTC here)
COUNTER = [0]
# Three files of 3 MiB, carried at 2 MiB/s: a budget of 4 MiB stops the run in the second file,
# with the first one on the target and the rest held.
STAGED_LAYOUT = {"pay/a.bin": 3 * MIB, "pay/b.bin": 3 * MIB + 17, "pay/sub/c.bin": 3 * MIB + 5}
STOP_BUDGET = "4M"
# The partner-touch jobs.
TOUCH_LAYOUT = {"pay/a.bin": 512 * 1024, "pay/b.bin": 3 * MIB + 17, "pay/sub/c.bin": 3 * MIB + 5}


# --------------------------------------------------------------------------------------------
# Helpers

def route_dir(node):
    return os.path.join(LAB.node(node)["sync_root"], LAB.route)


def job_dir(node, job):
    return os.path.join(route_dir(node), job)


def new_resource(prefix, layout=None, node="cache1"):
    COUNTER[0] += 1
    name = f"{prefix}-{COUNTER[0]}"
    info, tid, save, _ = flows.seed_resource(LAB, name, layout or STAGED_LAYOUT, 2600 + COUNTER[0], node=node)
    return tid, name, save, info


def file_facts(path):
    """Everything the valve promises about one file: content digest, mode, inode, size, mtime (ns)."""
    st = os.stat(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"sha256": h.hexdigest(), "mode": oct(st.st_mode), "inode": st.st_ino, "size": st.st_size,
            "mtime_ns": st.st_mtime_ns}


def payload_facts(save, info):
    """{metainfo path: file_facts} of a placement whose save path is `save`."""
    return {f["path"]: file_facts(os.path.join(save, f["path"])) for f in info["files"]}


def archctl_json(*args, timeout=300, env=None):
    """Run archctl with --json: (rc, document or None, stderr)."""
    rc, out, err = LAB.archctl(*args, "--json", timeout=timeout, env=env)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    return rc, doc, err + ("" if doc is not None else out)


def job_rows():
    rc, out, err = LAB.archctl("job", "list", "--all", "--json")
    assert rc == 0, err
    return json.loads(out)["jobs"]


def job_row(job):
    rows = [j for j in job_rows() if j["id"] == job]
    return rows[0] if rows else None


def jobs_of(tid):
    return [j for j in job_rows() if j["resource"] == tid]


def unfinished_job_of(tid, op):
    """The one unfinished `op` job of `tid`. Not the last row by id: ids order by the second,
    and an evict that ends in the same second as the next job starts may sort after it."""
    rows = [j for j in jobs_of(tid) if j["op"] == op and j["state"] not in ("done", "cancelled", "failed")]
    assert len(rows) == 1, rows
    return rows[0]["id"]


def events_of(job):
    rc, out, err = LAB.archctl("job", "show", job, "--json")
    assert rc == 0, err
    return json.loads(out)["events"]


def st_folder(node):
    return LAB.st(node).get(f"config/folders/{LAB.route}")


def patch_folder(node, body):
    LAB.st(node).request("PATCH", f"config/folders/{LAB.route}", body)


def wait_route_idle():
    flows.wait(lambda: all(LAB.st(n).db_status(LAB.route)["state"] == "idle" for n in NODES), timeout=60,
               what="route folders idle after the config change")


def set_folder_on_both(body, check):
    for node in NODES:
        patch_folder(node, body)
    flows.wait(lambda: all(check(st_folder(n)) for n in NODES), timeout=30, what=f"folder config {body}")
    wait_route_idle()


def valve_settings_restored():
    """The hand-made route as flows.pair_route made it (versioning off, permissions ignored)."""
    set_folder_on_both({"versioning": {"type": "", "params": {}}, "ignorePerms": True},
                       lambda f: f["versioning"]["type"] == "" and f["ignorePerms"])


def route_entries(node):
    """Top-level entries of the route folder that are not Syncthing's or the route check's own."""
    root = route_dir(node)
    return sorted(e for e in os.listdir(root)
                  if e not in (".stfolder", ".stignore", ".stversions") and not e.startswith(".archctl-nonce-"))


def staged_files_arrived(node, job, info):
    """Indices of the job's staged files that `node`'s Syncthing has written, at their final name
    and full size, in <route>/<job>/p/<shard>."""
    out = []
    for f in info["files"]:
        path = flows.staged_path(os.path.join(route_dir(node), job), f["index"])
        try:
            if (os.path.isfile(path) and os.path.getsize(path) == f["size"]
                    and not os.path.exists(os.path.join(os.path.dirname(path), f".syncthing.{f['index']}.tmp"))):
                out.append(f["index"])
        except OSError:
            pass
    return out


class SlowInto:
    """About 2 MiB/s into `node` while active (loopback counts as LAN, unlimited unless
    limitBandwidthInLan), so that a budget stop comes while the job is still being carried."""

    def __init__(self, node, sender):
        self.st = LAB.st(node)
        self.sender = LAB.st(sender).my_id()

    def __enter__(self):
        self.st.request("PATCH", "config/options", {"limitBandwidthInLan": True})
        self.st.request("PATCH", f"config/devices/{self.sender}", {"maxRecvKbps": 2000})
        return self

    def __exit__(self, *exc):
        self.st.request("PATCH", f"config/devices/{self.sender}", {"maxRecvKbps": 0})
        self.st.request("PATCH", "config/options", {"limitBandwidthInLan": False})


def stop_mid_sync(tc, op, tid, target, info):
    """`archctl <op> RES --to target --yes --max-bytes 4M` while the target receives at 2 MiB/s:
    exit 10 with the job staged and not all of it on the target (the run stops in the second of
    three 3 MiB files). Returns (job, indices of the staged files on the target)."""
    source = flows_source(op)
    with SlowInto(target, source):
        rc, doc, err = archctl_json(op, tid[:12], "--to", target, "--yes", "--max-bytes", STOP_BUDGET)
        tc.assertEqual(rc, 10, f"{op} with a {STOP_BUDGET} budget stops with exit 10 mid-sync: {err}")
        job = unfinished_job_of(tid, op)
        tc.assertTrue(os.path.isdir(job_dir(source, job)), f"the job is staged on {source}: {job}")
        on_target = staged_files_arrived(target, job, info)
        tc.assertLess(len(on_target), len(info["files"]), "the stop came after the whole job was carried")
        return job, on_target


def flows_source(op):
    return "cache1" if op == "archive" else "archive1"


def cancel_if_unfinished(job, symlink=None):
    """Test cleanup: a job an old binary left unfinished must not leak into the next test."""
    if symlink and os.path.islink(symlink):
        os.unlink(symlink)
    row = job_row(job)
    if row and row["state"] in ("running", "compensating", "cleanup_required"):
        try:
            LAB.archctl("job", "cancel", job, timeout=180)
        except subprocess.TimeoutExpired:
            pass


def resume_until_done(tc, job, runs=6, timeout=300):
    """`archctl resume JOB` until it exits 0; exit 10 in between is a clean stop."""
    last = ""
    for n in range(1, runs + 1):
        rc, out, err = LAB.archctl("resume", job, timeout=timeout)
        if rc == 0:
            return n
        last = err + out
        tc.assertEqual(rc, 10, f"resume run {n} of {job}: {last}")
    tc.fail(f"resume of {job} did not finish in {runs} runs: {last}")


def assert_same_files(tc, before, after, what):
    for path in sorted(before):
        tc.assertEqual(after.get(path), before[path],
                       f"{what}: {path} changed (bytes, mode, inode, size, mtime_ns must all stay): "
                       f"before {before[path]}, after {after.get(path)}")


def assert_nothing_in_progress(tc, job):
    rc, out, err = LAB.archctl("status", "--json", timeout=120)
    try:
        doc = json.loads(out)
    except ValueError:
        tc.fail(f"status --json (exit {rc}) printed no document: {err}{out}")
    running = [r for r in (doc.get("running") or []) if r.get("job") == job]
    tc.assertEqual(running, [], f"status shows {job} in progress: {running}")
    rows = [j for j in doc.get("jobs") or [] if j["id"] == job]
    tc.assertTrue(all(j["state"] not in ("running", "compensating") for j in rows), f"status: {rows}")


def names_file(x, index, path):
    """An entry of an event's file list names the file with this index and metainfo path."""
    if isinstance(x, dict):
        return x.get("index") == index or x.get("path") == path
    return str(x) == str(index) or str(x) == path or str(x).endswith("/" + path)


def error_of(doc):
    return (doc or {}).get("error") or {}


# --------------------------------------------------------------------------------------------

class Valve(unittest.TestCase):
    """A route folder whose settings break the valve is refused before anything is staged."""

    def refused_before_staging(self, tid, save, info, setting):
        before = payload_facts(save, info)
        entries = {n: route_entries(n) for n in NODES}
        rc, doc, err = archctl_json("archive", tid[:12], "--to", "archive1", "--yes")
        self.assertEqual(rc, 1, f"archive must refuse a route folder with {setting} breaking the valve "
                                f"(exit 1, ROUTE_VALVE); it exited {rc}: {err}")
        e = error_of(doc)
        self.assertEqual(e.get("code"), "ROUTE_VALVE", doc)
        self.assertIn(LAB.route, e.get("message", ""), "the message names the route folder")
        self.assertIn(setting, e.get("message", ""), f"the message names {setting}")
        self.assertIn(f"archctl route ensure --repair {LAB.route}", e.get("hint", ""), "the hint gives the repair")
        for node in NODES:
            self.assertEqual(route_entries(node), entries[node], f"nothing is staged on {node}")
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing reaches the archive's qBittorrent")
        assert_same_files(self, before, payload_facts(save, info), "refused archive")
        return before

    def test_a_versioning_on_is_refused_then_the_repaired_route_leaves_the_source_exact(self):
        tid, name, save, info = new_resource("versioned", {"pay/a.bin": MIB + 3, "pay/b.txt": 4000})
        self.addCleanup(valve_settings_restored)
        set_folder_on_both({"versioning": {"type": "trashcan", "params": {"cleanoutDays": "0"}}},
                           lambda f: f["versioning"]["type"] == "trashcan")
        before = self.refused_before_staging(tid, save, info, "versioning")

        # Repaired by hand through Syncthing (not by `route ensure --repair`): the job runs.
        set_folder_on_both({"versioning": {"type": "", "params": {}}}, lambda f: f["versioning"]["type"] == "")
        entries = {n: route_entries(n) for n in NODES}
        rc, doc, err = archctl_json("archive", tid[:12], "--to", "archive1", "--yes")
        self.assertEqual(rc, 0, err)
        for node in NODES:
            flows.wait(lambda: route_entries(node) == entries[node], timeout=30, what=f"staging removed on {node}")
        payload_inodes = {(os.stat(os.path.join(save, f["path"])).st_dev, os.stat(os.path.join(save, f["path"])).st_ino)
                          for f in info["files"]}
        target = os.path.join(LAB.node("archive1")["qb_root"], name)
        payload_inodes |= {(os.stat(os.path.join(target, f["path"])).st_dev,
                            os.stat(os.path.join(target, f["path"])).st_ino) for f in info["files"]}
        for node in NODES:
            versions = os.path.join(route_dir(node), ".stversions")
            for dirpath, _, files in os.walk(versions):
                for f in files:
                    st = os.lstat(os.path.join(dirpath, f))
                    self.assertNotIn((st.st_dev, st.st_ino), payload_inodes,
                                     f"{node}: .stversions holds a payload inode: {os.path.join(dirpath, f)}")
        assert_same_files(self, before, payload_facts(save, info), "archive through the repaired route")

    def test_b_ignore_perms_off_is_refused(self):
        tid, name, save, info = new_resource("perms", {"pay/a.bin": MIB + 9, "pay/b.txt": 900})
        self.addCleanup(valve_settings_restored)
        set_folder_on_both({"ignorePerms": False}, lambda f: not f["ignorePerms"])
        self.refused_before_staging(tid, save, info, "ignorePerms")


class PartnerTouch(unittest.TestCase):
    """The partner device sets a staged file's mtime (`touch -d 2001-01-01`) while the job is
    staged and its files are on the partner: Syncthing carries the change back onto the staged
    link on the source, which is the source payload's inode. Whatever reaches the source must be
    restored from the manifest before the job ends, with a `source_restored` event.

    Two moments: the job stopped after its sync step (the run was killed there, as a crash or a
    reboot would: no hold on the target, the touch travels while no archctl runs) and resumed;
    and a run that waits right after its sync step (paused there) and then goes on. A job
    stopped by exit 10 holds its whole directory on the target (ignored there), so a touch made
    then cannot travel before the next run; it is not one of the moments tested here."""

    def touch(self, op, job, arrived, info, source, partner, source_save):
        """The partner sets mtime 2001-01-01 on its copies of the staged files `arrived`; returns
        their metainfo paths once Syncthing had 30 s to carry the change back."""
        time.sleep(2)  # final names appear before Syncthing commits them to its index
        by_index = {f["index"]: f["path"] for f in info["files"]}
        for index in arrived:
            os.utime(flows.staged_path(job_dir(partner, job), index), ns=(Y2001_NS, Y2001_NS))
        LAB.st(partner).scan(LAB.route, sub=f"{job}/p")  # what the partner's watcher does a second later
        touched = [by_index[i] for i in arrived]
        probe = os.path.join(source_save, touched[0])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and os.stat(probe).st_mtime_ns != Y2001_NS:
            time.sleep(0.5)
        reached = self.reached = os.stat(probe).st_mtime_ns == Y2001_NS
        self.seen = (f"the partner's mtime {'reached' if reached else 'had not reached'} the source inode "
                     f"{touched[0]} 30 s after the touch")
        print(f"  {op}: partner {partner} touched {touched}; {self.seen}", file=sys.stderr)
        return touched

    def assert_restored(self, op, job, before, info, source, source_save, arrived, touched):
        self.assertEqual(job_row(job)["state"], "done")
        assert_same_files(self, before, payload_facts(source_save, info), f"{op} with a partner touch")
        events = events_of(job)
        restored = [e for e in events if e.get("type") == "source_restored"]
        if not self.reached:
            # Nothing reached the source inode (prevented): nothing to restore, nothing to record.
            print(f"  {op}: {self.seen}; source_restored events: {len(restored)}", file=sys.stderr)
            return
        self.assertTrue(restored, f"{op}: no source_restored event among {[e.get('type') for e in events]} "
                                  f"({self.seen})")
        self.assertIn(source, json.dumps(restored), f"source_restored names the node {source}: {restored}")
        data = [e["data"] if isinstance(e.get("data"), dict) else e for e in restored]
        files = [x for d in data for x in (d.get("files") or [])]
        for index, path in zip(arrived, touched):
            self.assertTrue(any(names_file(x, index, path) for x in files),
                            f"source_restored lists the touched file {path} (index {index}): {restored}")

    def touch_after_crash(self, op, tid, info, source, partner, source_save):
        """The run killed right after its sync step (every file on the partner, nothing merged),
        touched while no archctl runs, then `archctl resume JOB` until done."""
        before = payload_facts(source_save, info)
        rc, out, err = LAB.archctl(op, tid[:12], "--to", partner, "--yes", env={"ARCHCTL_TEST_CRASH_AT": "job.step.sync"},
                                   timeout=300)
        self.assertEqual(rc, 137, f"killed at job.step.sync: {err}")
        job = unfinished_job_of(tid, op)
        self.addCleanup(cancel_if_unfinished, job)
        arrived = flows.wait(lambda: staged_files_arrived(partner, job, info), timeout=60,
                             what=f"the staged files of {job} on {partner}")
        touched = self.touch(op, job, arrived, info, source, partner, source_save)
        resume_until_done(self, job)
        self.assert_restored(op, job, before, info, source, source_save, arrived, touched)

    def touch_in_run(self, op, tid, info, source, partner, source_save):
        """Touched while a run drives the job (paused right after its sync step: every file on
        the partner, nothing merged yet), then the same run goes on to the end."""
        before = payload_facts(source_save, info)
        release = flows.archctl_paused_at(LAB, "job.step.sync", op, tid[:12], "--to", partner, "--yes")
        job = unfinished_job_of(tid, op)
        self.addCleanup(cancel_if_unfinished, job)
        try:
            arrived = flows.wait(lambda: staged_files_arrived(partner, job, info), timeout=60,
                                 what=f"the staged files of {job} on {partner}")
            touched = self.touch(op, job, arrived, info, source, partner, source_save)
        finally:
            rc, out, err = release()
        self.assertEqual(rc, 0, err)
        self.assert_restored(op, job, before, info, source, source_save, arrived, touched)

    def test_a_archive_partner_touch_after_a_crash_never_reaches_the_cache_inode(self):
        tid, name, save, info = new_resource("touch-a", TOUCH_LAYOUT)
        self.touch_after_crash("archive", tid, info, "cache1", "archive1", save)

    def evict(self, tid):
        rc, out, err = LAB.archctl("evict", tid[:12], "--from", "cache1", "--yes", timeout=300)
        self.assertEqual(rc, 0, err)
        self.assertEqual(LAB.qb("cache1").info([tid]), [], "evicted from the cache")

    def test_b_unarchive_partner_touch_never_reaches_the_archive_inode(self):
        """Both moments for unarchive (the partner is the cache node): after a crash, then
        (evicted again) while the run waits."""
        tid, name, save, info = new_resource("touch-u", TOUCH_LAYOUT)
        rc, out, err = LAB.archctl("archive", tid[:12], "--to", "archive1", "--yes", timeout=300)
        self.assertEqual(rc, 0, err)
        self.evict(tid)
        archive_save = os.path.join(LAB.node("archive1")["qb_root"], name)
        with self.subTest("touched after a crash"):
            self.touch_after_crash("unarchive", tid, info, "archive1", "cache1", archive_save)
        self.assertEqual(LAB.qb("cache1").info([tid])[0]["progress"], 1, "the cache holds it again")
        self.evict(tid)
        with self.subTest("touched while the run waits"):
            self.touch_in_run("unarchive", tid, info, "archive1", "cache1", archive_save)
        self.assertEqual(LAB.qb("cache1").info([tid])[0]["progress"], 1, "the cache holds it again")

    def test_c_archive_partner_touch_while_the_run_waits(self):
        tid, name, save, info = new_resource("touch-r", TOUCH_LAYOUT)
        self.touch_in_run("archive", tid, info, "cache1", "archive1", save)


class ForeignStaging(unittest.TestCase):
    """Anything in the staging area that archctl did not stage ends the wait at once, named."""

    def run_into_foreign(self, tid, job, fragment, extra, outside=None):
        started = time.monotonic()
        try:
            rc, doc, err = archctl_json("resume", job, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(f"resume of {job} was still running after 60 s: it waits on {fragment} instead of naming it")
        took = time.monotonic() - started
        seen = f"; the symlink's directory now holds {sorted(os.listdir(outside))}" if outside else ""
        self.assertEqual(rc, 1, f"resume must fail on {fragment} (exit 1, STAGING_FOREIGN); exit {rc} after "
                                f"{took:.0f} s{seen}: {err}")
        self.assertLess(took, 45, "it ends at once, it never sits at 'sync 0%'")
        e = error_of(doc)
        self.assertEqual(e.get("code"), "STAGING_FOREIGN", doc)
        message = e.get("message", "")
        self.assertIn(fragment, message, f"the message names {fragment}")
        for word in extra:
            self.assertIn(word, message)
        print(f"  {fragment}: exit 1 after {took:.1f} s: {message}", file=sys.stderr)
        return message

    def assert_undone(self, tid, job, before, save, info):
        assert_same_files(self, before, payload_facts(save, info), "foreign staging")
        self.assertEqual(job_row(job)["state"], "failed", job_row(job))
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing committed on the archive")
        assert_nothing_in_progress(self, job)

    def test_a_a_staged_directory_replaced_by_a_symlink(self):
        tid, name, save, info = new_resource("symlink")
        before = payload_facts(save, info)
        job, _ = stop_mid_sync(self, "archive", tid, "archive1", info)
        staged_p = os.path.join(job_dir("archive1", job), "p")
        self.addCleanup(cancel_if_unfinished, job, staged_p)
        outside = os.path.join(LAB.dir, f"outside-{job}")
        os.makedirs(outside)
        with open(os.path.join(outside, "keep.txt"), "w") as f:
            f.write("not archctl's\n")
        if os.path.isdir(staged_p):
            shutil.rmtree(staged_p)
        os.makedirs(os.path.dirname(staged_p), exist_ok=True)
        os.symlink(outside, staged_p)
        LAB.st("archive1").scan(LAB.route, sub=job)
        self.run_into_foreign(tid, job, f"{job}/p", ("archive1", "symlink"), outside=outside)
        self.assert_undone(tid, job, before, save, info)
        self.assertEqual(os.listdir(outside), ["keep.txt"], "nothing is done through the symlink")

    def test_b_a_foreign_file_in_the_staging_directory(self):
        tid, name, save, info = new_resource("foreign")
        before = payload_facts(save, info)
        job, _ = stop_mid_sync(self, "archive", tid, "archive1", info)
        self.addCleanup(cancel_if_unfinished, job)
        os.makedirs(os.path.join(job_dir("archive1", job), "p"), exist_ok=True)
        with open(os.path.join(job_dir("archive1", job), "p", "evil"), "wb") as f:
            f.write(b"not staged by archctl\n" * 100)
        LAB.st("archive1").scan(LAB.route, sub=f"{job}/p")
        self.run_into_foreign(tid, job, "p/evil", ())
        self.assert_undone(tid, job, before, save, info)


class CancelLeftovers(unittest.TestCase):
    def test_cancel_mid_sync_leaves_no_staging_directory_on_either_node(self):
        """Ctrl-C while Syncthing carries the job (2 MiB/s), then `job cancel`: when cancel
        returns, neither route folder holds anything of the job (no empty `p`, no temp file),
        and 5 s later still nothing."""
        tid, name, save, info = new_resource("cancel")
        before = payload_facts(save, info)
        with SlowInto("archive1", "cache1"):
            argv, env = LAB.archctl_command("archive", tid[:12], "--to", "archive1", "--yes")
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    stdin=subprocess.DEVNULL)
            try:
                job = flows.wait(lambda: (jobs_of(tid) or [{}])[-1].get("id"), timeout=60, what="the job exists")
                self.addCleanup(cancel_if_unfinished, job)
                flows.wait(lambda: os.path.isdir(os.path.join(job_dir("archive1", job), "p")), timeout=60,
                           what="the job's staging on the target")
                time.sleep(1.0)
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
            self.assertEqual(proc.returncode, 10, err)
            self.assertLess(len(staged_files_arrived("archive1", job, info)), len(info["files"]),
                            "the stop came after the whole job was carried")
            rc, out, err = LAB.archctl("job", "cancel", job, timeout=180)
        self.assertEqual(rc, 0, err)
        self.assertEqual(job_row(job)["state"], "cancelled")

        def left():
            return {n: flows.tree(job_dir(n, job)) for n in NODES if os.path.lexists(job_dir(n, job))}
        self.assertEqual(left(), {}, f"the cancelled job's staging stays in the route folders: {left()}")
        # Nor does Syncthing bring any of it back (a pull the cancel let go on, a directory
        # entry the partner still announces): sampled for 8 s.
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            seen = left()
            self.assertEqual(seen, {}, f"the cancelled job's staging came back after the cancel: {seen}")
            time.sleep(0.2)
        assert_same_files(self, before, payload_facts(save, info), "cancel")


# --------------------------------------------------------------------------------------------
# Budgets: a run never stages a job beyond its budget; a job staged before a stop is held.

def allocated(root):
    """Bytes allocated below `root` (Syncthing's temp files included; they are sparse until written)."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def target_bytes(names):
    """What arrived on the archive node for these resources: their placements plus the route folder."""
    qb_root = LAB.node("archive1")["qb_root"]
    versions = os.path.join(route_dir("archive1"), ".stversions")
    route = allocated(route_dir("archive1")) - (allocated(versions) if os.path.isdir(versions) else 0)
    return route + sum(allocated(os.path.join(qb_root, n)) for n in names)


class Budgets(unittest.TestCase):
    SLACK = 256 * 1024  # block rounding of a few dozen files

    def assert_still(self, names, what):
        before = target_bytes(names)
        samples = []
        for _ in range(10):
            time.sleep(1.0)
            samples.append(target_bytes(names))
        self.assertEqual(max(samples), before,
                         f"{what}: bytes went on arriving on the target after the stop: {before} then {samples}")

    def budget_runs(self, run, names, budget, largest, done, what, runs=8):
        """Call `run` (one archctl run: rc, document, stderr) until exit 0: every run moves at most budget + the largest file, and after
        every exit 10 nothing moves for 10 s. Returns the exit codes seen."""
        codes = []
        for n in range(1, runs + 1):
            before = target_bytes(names)
            rc, doc, err = run()
            moved = target_bytes(names) - before
            codes.append(rc)
            print(f"  {what} run {n}: exit {rc}, {moved / MIB:.1f} MiB arrived on the target", file=sys.stderr)
            self.assertIn(rc, (0, 10), f"{what} run {n}: {err}")
            self.assertLessEqual(moved, budget + largest + self.SLACK,
                                 f"{what} run {n} moved {moved / MIB:.1f} MiB, over the budget {budget / MIB:.0f} MiB "
                                 f"+ one file {largest / MIB:.0f} MiB")
            if rc == 0:
                break
            self.assertIn("budget", json.dumps((doc or {}).get("stopped", {})) + err, f"{what} run {n} stops for the budget")
            self.assert_still(names, f"{what} run {n}")
        self.assertEqual(codes[-1], 0, f"{what} did not converge in {runs} runs: {codes}")
        for tid in done:
            t = LAB.qb("archive1").info([tid])
            self.assertEqual(len(t), 1, f"{what}: {tid[:12]} is on the archive")
            self.assertEqual(t[0]["progress"], 1)
        return codes

    def test_a_batch_archive_under_a_budget(self):
        spec = [{"name": f"night-{i}", "category": "night", "tags": [],
                 "layout": {f"night-{i}/f{j}.bin": 5 * MIB + 1000 * i + j for j in range(4)}} for i in range(4)]
        ids = collection.seed_collection(LAB, "cache1", spec, seed=26)
        names = [e["name"] for e in spec]
        largest = max(s for e in spec for s in e["layout"].values())
        codes = self.budget_runs(lambda: archctl_json("archive", "--category", "night", "--max-bytes", "30M", "--yes", timeout=600), names,
                                 30 * MIB, largest, ids, "batch archive --max-bytes 30M")
        self.assertGreaterEqual(len(codes), 3, f"80 MiB under a 30 MiB budget takes three runs at least: {codes}")

    def test_b_resume_under_a_budget(self):
        spec = [{"name": f"dawn-{i}", "category": "dawn", "tags": [],
                 "layout": {f"dawn-{i}/f{j}.bin": 3 * MIB + 1000 * i + j for j in range(3)}} for i in range(3)]
        ids = collection.seed_collection(LAB, "cache1", spec, seed=27)
        names = [e["name"] for e in spec]
        largest = max(s for e in spec for s in e["layout"].values())
        jobs = []
        for tid, entry in zip(ids, spec):  # three unfinished jobs, each stopped mid-sync
            info = {"files": [{"index": j, "path": rel, "size": size}
                              for j, (rel, size) in enumerate(sorted(entry["layout"].items()))]}
            job, _ = stop_mid_sync(self, "archive", tid, "archive1", info)
            jobs.append(job)
            self.addCleanup(cancel_if_unfinished, job)
            self.assert_still(names, f"archive {tid[:12]} --max-bytes {STOP_BUDGET}")
        codes = self.budget_runs(lambda: archctl_json("resume", *jobs, "--max-bytes", "10M", timeout=600), names, 10 * MIB, largest, ids,
                                 "resume --max-bytes 10M")
        self.assertGreaterEqual(len(codes), 2, codes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
