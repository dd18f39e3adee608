#!/usr/bin/python3
"""What the sync step asks of Syncthing on real services, for a torrent of a few thousand tiny
files: its requests to the target's Syncthing stay bounded (the progress comes from walks of the
job's directory; the target's index is read for the whole job at once, never file by file per
poll), and a job whose files all arrived while no archctl ran is confirmed in one look when it
is resumed. Requests are counted from the -vv request log; times are printed, never asserted."""

import datetime
import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
FILES = 3000
REQUEST = re.compile(r"^(qBittorrent|Syncthing) '([^']+)': (GET|POST|PUT|PATCH|DELETE) (\S+) -> ")


def layout(files):
    """`files` tiny files (0.5 to 4.5 KiB) in directories of 100."""
    return {f"pay/d{i // 100:03}/f{i:05}.bin": 512 + (i * 37) % 4096 for i in range(files)}


def syncthing_requests(err, node):
    """[endpoint, ...] of `node`'s Syncthing in a -vv request log."""
    out = []
    for line in err.splitlines():
        m = REQUEST.match(line)
        if m and m.group(1) == "Syncthing" and m.group(2) == node:
            out.append(m.group(4).split("?")[0])
    return out


def summary(endpoints):
    counts = {}
    for e in endpoints:
        counts[e] = counts.get(e, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def event_times(job):
    """{event type: its time (seconds since the epoch)} of the job's last events of each type."""
    out = {}
    with open(os.path.join(LAB.state_dir, "jobs", job, "events.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if "at" not in e or "type" not in e:  # the journal's header
                continue
            out[e["type"]] = datetime.datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp()
    return out


def job_of(tid):
    jobs = json.loads(LAB.archctl("job", "list", "--all", "--json")[1])["jobs"]
    return [j for j in jobs if j["resource"] == tid][-1]["id"]


def target_in_sync(job, files):
    """The job's payload is on the archive node under final names and its Syncthing needs nothing."""
    payload = os.path.join(LAB.node("archive1")["sync_root"], LAB.route, job, "p")
    try:
        names = [n for shard in os.listdir(payload) for n in os.listdir(os.path.join(payload, shard))]
    except FileNotFoundError:
        return False
    if len([n for n in names if not n.startswith(".syncthing.") and not n.startswith("~syncthing~")]) < files:
        return False
    st = LAB.st("archive1").request("GET", "db/status", folder=LAB.route)
    return st.get("needTotalItems", 1) == 0 and st.get("state") == "idle"


class SyncCost(unittest.TestCase):
    def check_bounded(self, endpoints, files):
        # Walks and db/status give the progress; the index is read whole (db/browse, db/need) a
        # few times once every file is there; db/file only for a handful of stragglers.
        self.assertLessEqual(endpoints.count("/rest/db/file"), 40, summary(endpoints))
        self.assertLessEqual(endpoints.count("/rest/db/browse"), 30, summary(endpoints))
        self.assertLess(len(endpoints), files // 3, summary(endpoints))

    def test_a_archive_of_thousands_of_tiny_files(self):
        _, tid, _, _ = flows.seed_resource(LAB, "tiny", layout(FILES), 71)
        started = time.monotonic()
        rc, out, err = LAB.archctl("-vv", "archive", tid[:12], "--yes", timeout=600)
        seconds = time.monotonic() - started
        self.assertEqual(rc, 0, err[-3000:])
        target = syncthing_requests(err, "archive1")
        print(f"  archive of {FILES} tiny files: {seconds:.1f} s; archive1's Syncthing: {len(target)} requests "
              f"{summary(target)}", file=sys.stderr)
        self.check_bounded(target, FILES)

    def test_b_resume_with_everything_in_sync_confirms_in_one_look(self):
        _, tid, _, _ = flows.seed_resource(LAB, "tiny-resume", layout(FILES), 72)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", env={"ARCHCTL_TEST_CRASH_AT": "job.step.stage"}, timeout=600)
        self.assertEqual(rc, 137, err[-3000:])
        job = job_of(tid)
        # Staged, then the crash: nothing holds the job, Syncthing carries it to the end while no
        # archctl runs.
        flows.wait(lambda: target_in_sync(job, FILES), timeout=300, what="the job's files in sync on archive1")
        started, wall = time.monotonic(), time.time()
        rc, out, err = LAB.archctl("-vv", "resume", job, timeout=600)
        seconds = time.monotonic() - started
        self.assertEqual(rc, 0, err[-3000:])
        target = syncthing_requests(err, "archive1")
        synced = event_times(job).get("synced", wall) - wall
        print(f"  resume of {FILES} files already in sync: {seconds:.1f} s ({synced:.1f} s to 'synced'); archive1's Syncthing: "
              f"{len(target)} requests {summary(target)}", file=sys.stderr)
        # One read of the whole index (db/browse, then db/need), no file asked about alone.
        self.assertEqual(target.count("/rest/db/browse"), 1, summary(target))
        self.assertEqual(target.count("/rest/db/file"), 0, summary(target))
        self.check_bounded(target, FILES)
        # The index is read before the first walk, so that walk confirms the job; the source
        # is not asked to scan files its Syncthing carried long ago: its one scan is cleanup's,
        # after the staging is removed.
        source = syncthing_requests(err, "cache1")
        self.assertEqual(source.count("/rest/db/scan"), 1, summary(source))


if __name__ == "__main__":
    unittest.main()
