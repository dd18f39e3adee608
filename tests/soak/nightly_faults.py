#!/usr/bin/python3
"""A soak run of archctl's tier policy on real services: many "nights" of cron runs with random
faults, then checks that nothing was lost and that the policy holds (docs/design.md "Many
resources and tier policies", "A job that cannot land", "Credentials fail once", "Signals").

Not part of the ctest gate (it takes many minutes); run it by hand as root:

    ARCHCTL_BIN=build/test/cli/archctl /usr/bin/python3 tests/soak/nightly_faults.py [--seed N] [--nights N]

The lab is the integration suites' (tests/lab/lab.py, tests/integration/flows.py): one cache
(cache1) and two archive nodes (archive1, archive2), each with a real qBittorrent and Syncthing
on 127.0.0.1, two hand-paired routes. As in tests/integration/test_full_archive.py the cache's
qb_root is a tmpfs (so the goal is exact) and archive1's qb_root and sync_root are on a small
loop-mounted ext4 (so a user's file can fill it). Every qBittorrent bans an address after 5
failed logins, as qBittorrent does by default (the lab turns that off; this script turns it back
on), so a client that retried a wrong password would lock the lab out and the run would fail.
The binary is copied into the lab first, so a rebuild during the run does not change it.

A night:
  1. "A day passes". The clock cannot be moved for real, so the one bound archctl keeps in the
     state directory by wall time is aged by hand, as test_full_archive.py does: every job
     ledger's target_blocked.since is moved 24 hours back (docs/design.md "A job that cannot
     land": a job waits at most 3 runs and 24 h for a target without room). Nothing else in the
     state directory is touched.
  2. New torrents appear on the cache (2 to 4 or more, 8 KiB to 3 MiB, one or several files, made and
     seeded as the suites do it: archctl torrent create, add stopped, recheck) until the cache's
     free space is below the tier goal. The sha256 of every file is kept.
  3. Faults are drawn (one or two a night, none on the closing nights): archctl killed with
     SIGKILL or SIGTERM at a random moment of a run; a node's Syncthing or qBittorrent stopped
     at a random moment and started again some seconds later; archive1 filled below its floor
     by a user's file, half the time as soon as a job bound for it has staged (emptied again one
     to three nights later); the config pointing at a wrong
     qBittorrent password for one node (one or two nights, then the right one again).
  4. `archctl tier box --yes --json` is run as a cron wrapper would: again while it exits 10, at
     most --reruns more times (a killed run is followed by a rerun too, as the next tick would).
     Every exit code, stop reason and error is recorded.
After the last faulty night every fault is cleared and --clean-nights nights without faults are
run. Then it checks and prints:
  - the goal holds (a fresh statvfs of the cache's qb_root >= keep_free);
  - every torrent ever created is complete on at least one node (rechecked when no node says so)
    and every complete copy's files have the sha256 they were written with;
  - every run that exited 1 carried a hint (the fix) and ran while a wrong password was
    configured; no run exited with anything but 0, 1 or 10, except a killed run with its
    signal; no run hung; the closing nights end with 0;
  - no qBittorrent banned the address (every one still takes the right login), and each logged
    at most one failed login per wrong password (a new wrong password each time one is drawn),
    plus one per run killed with SIGKILL under it (the kill may come before the refusal's record);
  - a table: nights, runs, exit codes, faults injected, bytes archived and evicted.
Exit 0 only when every check holds; 1 otherwise, naming each failed check (and the night, run
and output that show it); 2 when the lab cannot be set up here (not root, no loop devices)."""

import argparse
import collections
import datetime
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(TESTS, "integration"))

from lab.lab import Lab, HttpError, LabError  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
TMPFS_SIZE = 48 * MIB    # the cache's qb_root
IMAGE_SIZE = 128 * MIB   # archive1's filesystem
FLOOR = 4 * MIB          # transfer.min_free
GOAL = 30 * MIB          # tier.box.keep_free
ROUTE1, ROUTE2 = "soak-a1", "soak-a2"
POLICY = "box"
FAULTS = ("sigkill", "sigterm", "syncthing", "qbittorrent", "fill_archive1", "wrong_password")
NODES = ("cache1", "archive1", "archive2")


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def free_bytes(path):
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(*argv, timeout=120):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.lab = None
        self.mounts = []
        self.torrents = {}        # qB id -> {name, night, size, files {rel: sha256}}
        self.runs = []            # one dict per archctl run
        self.nights = []          # one dict per night
        self.faults = collections.Counter()
        self.problems = []        # failed checks, each a paragraph
        self.wrong = None         # node whose password is wrong now: (node, nights left)
        self.filled = None        # nights left until archive1's user file goes
        self.config = None
        self.fill_path = None
        self.archived_total = 0
        self.evicted_total = 0
        self.run_seconds = 2.0    # a first run's usual length, to time faults inside runs
        self.landed = 0           # faults that happened while a run of the night was going on
        self.episodes = collections.Counter()  # node -> times its password was made wrong
        self.login_failures = {}  # node -> failed logins its qBittorrent logged

    # -------------------------------------------------------------------------------- set-up
    def set_up(self):
        why = self.unavailable()
        if why:
            print(f"nightly_faults: cannot run here: {why}", file=sys.stderr)
            sys.exit(2)
        import flows
        self.flows = flows
        base = self.args.dir or tempfile.mkdtemp(prefix="archctl-soak-")
        os.makedirs(base, exist_ok=True)
        self.bin = os.path.join(base, "archctl")
        shutil.copy2(self.args.archctl, self.bin)
        head = run("git", "-C", TESTS, "rev-parse", "--short", "HEAD").stdout.strip() or "?"
        log(f"archctl {self.args.archctl} (sha256 {sha256_of(self.bin)[:16]}, built {time.ctime(os.path.getmtime(self.bin))}); "
            f"source HEAD {head}")
        os.environ["ARCHCTL_BIN"] = self.bin
        flows.BIN = self.bin
        self.lab = Lab(nodes=[("cache1", "cache"), ("archive1", "archive"), ("archive2", "archive")],
                       directory=os.path.join(base, "lab"), keep=True)
        self.lab.__enter__()
        small = os.path.join(self.lab.dir, "nodes", "archive1", "small")
        self.mount_ext4(small)
        node = self.lab.node("archive1")
        node["qb_root"], node["sync_root"] = os.path.join(small, "qb_root"), os.path.join(small, "sync_root")
        os.makedirs(node["qb_root"])
        os.makedirs(node["sync_root"])
        self.fill_path = os.path.join(small, "user-file.bin")
        cache_root = self.lab.node("cache1")["qb_root"]
        self.mount(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755", "archctl-soak-cache", cache_root],
                   cache_root)
        flows.pair_route(self.lab, "cache1", "archive1", ROUTE1)
        flows.pair_route(self.lab, "cache1", "archive2", ROUTE2)
        for name in NODES:  # qBittorrent's own default: a ban after 5 failed logins, for an hour
            self.lab.qb(name).set_preferences({"web_ui_max_auth_fail_count": 5, "web_ui_ban_duration": 3600})
        self.config = os.path.join(self.lab.dir, "soak.toml")
        self.write_config()
        import collection
        self.collection = collection
        collection.create_category(self.lab.qb("cache1"), "tv")

    def unavailable(self):
        if os.geteuid() != 0:
            return "needs root (a loop-mounted ext4 and a tmpfs)"
        if not shutil.which("mkfs.ext4"):
            return "mkfs.ext4 is not installed (e2fsprogs)"
        if not os.path.exists("/dev/loop-control"):
            return "no loop devices (/dev/loop-control is missing)"
        if not self.args.archctl or not os.access(self.args.archctl, os.X_OK):
            return f"no archctl binary at {self.args.archctl!r} (set ARCHCTL_BIN or --archctl)"
        return None

    def mount(self, argv, path):
        done = run(*argv)
        if done.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        self.mounts.append(path)

    def mount_ext4(self, mountpoint):
        image = os.path.join(self.lab.dir, "archive1-fs.img")
        with open(image, "wb") as f:
            f.truncate(IMAGE_SIZE)
        made = run("mkfs.ext4", "-q", "-m", "0", "-F", image)
        if made.returncode != 0:
            raise LabError(f"mkfs.ext4 failed: {made.stderr.strip()}")
        os.makedirs(mountpoint, exist_ok=True)
        self.mount(["mount", "-o", "loop", image, mountpoint], mountpoint)
        os.rmdir(os.path.join(mountpoint, "lost+found"))

    def write_config(self):
        text = self.lab.config_text().replace('min_free = "0"', f'min_free = "{FLOOR}B"\noutage_wait = "15s"')
        if self.wrong:
            node = self.wrong[0]
            right = self.lab.node(node)["qb"]["password_file"]
            text = text.replace(f'password_file = "{right}"', f'password_file = "{right}.wrong"')
            assert f"{right}.wrong" in text
        text += "\n" + "\n".join([
            f"[tier.{POLICY}]",
            'cache = "cache1"',
            'archive = ["archive1", "archive2"]',
            f'keep_free = "{GOAL}B"',
            'archive_when = { larger_than = "16K" }',
            'order = "largest"',
            'evict = "to_goal"', ""])
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)

    def tear_down(self):
        if self.lab is not None:
            try:
                for name in NODES:  # a fault thread may have left one stopped
                    self.lab.start_qb(name)
                    self.lab.start_st(name)
            except Exception:
                pass
            problems = self.lab.stop()
            for p in problems:
                log("lab:", p.splitlines()[0])
        for path in reversed(self.mounts):
            run("umount", "-l", path)
        self.mounts = []
        if self.lab is not None and not self.args.keep:
            shutil.rmtree(os.path.dirname(self.lab.dir), ignore_errors=True)
        elif self.lab is not None:
            log("kept", os.path.dirname(self.lab.dir))

    # -------------------------------------------------------------------------------- a night
    def age_state(self):
        """A day passes for the bounds archctl keeps by wall time: target_blocked.since, 24 h back."""
        jobs = os.path.join(self.lab.state_dir, "jobs")
        aged = 0
        for job in sorted(os.listdir(jobs)) if os.path.isdir(jobs) else []:
            path = os.path.join(jobs, job, "ledger.json")
            try:
                with open(path) as f:
                    ledger = json.load(f)
            except (OSError, ValueError):
                continue
            blocked = ledger.get("target_blocked")
            if not isinstance(blocked, dict) or not blocked.get("since"):
                continue
            since = datetime.datetime.strptime(blocked["since"], "%Y-%m-%dT%H:%M:%SZ")
            blocked["since"] = (since - datetime.timedelta(hours=24)).strftime("%Y-%m-%dT%H:%M:%SZ")
            tmp = path + ".soak-tmp"
            with open(tmp, "w") as f:
                json.dump(ledger, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            aged += 1
        return aged

    def new_torrents(self, night):
        cache_root = self.lab.node("cache1")["qb_root"]
        free = free_bytes(cache_root)
        room = free - 6 * MIB  # never fill the tmpfs itself
        want = max(free - GOAL, 0) + self.rng.randint(1 * MIB, 5 * MIB)
        want = min(want, room)
        if want < 64 * KIB:
            return []
        sizes = []
        while sum(sizes) < want or len(sizes) < 2:
            left = want - sum(sizes)
            sizes.append(self.rng.randint(8 * KIB, max(8 * KIB + 1, min(3 * MIB, left + 256 * KIB))))
        spec = []
        for i, total in enumerate(sizes):
            name = f"n{night:02d}-{i}"
            if self.rng.random() < 0.25:
                layout = {f"{name}.bin": total}
            else:
                parts = self.rng.randint(1, 3)
                layout = {f"{name}/part{j}.dat": max(1, total // parts - j * 7) for j in range(parts)}
                layout[f"{name}/info.nfo"] = self.rng.randint(0, 900)
            spec.append({"name": name, "category": "tv", "tags": [], "layout": layout})
        ids = self.collection.seed_collection(self.lab, "cache1", spec, seed=self.args.seed * 100 + night)
        for tid, entry in zip(ids, spec):
            save = os.path.join(cache_root, entry["name"])
            files = {rel: sha256_of(os.path.join(save, rel)) for rel in entry["layout"]}
            self.torrents[tid] = {"name": entry["name"], "night": night, "size": sum(entry["layout"].values()),
                                  "files": files}
        return ids

    def draw_faults(self, night):
        """One or two faults; a wrong password or a fill only when none is in place."""
        pool = [f for f in FAULTS if not (f == "wrong_password" and self.wrong) and not (f == "fill_archive1" and self.filled)]
        faults = self.rng.sample(pool, self.rng.choice((1, 1, 2)))
        if "sigkill" in faults and "sigterm" in faults:  # one kill a night: the first run is killed once
            faults.remove(self.rng.choice(("sigkill", "sigterm")))
        return faults

    def timed(self, groups):
        """Run each group of (delay s, what, fn) events on a thread of its own, in order, each at
        its delay from now. Returns the threads and the list they append (what, when, error or
        None) to."""
        start = time.monotonic()
        done = []

        def body(events):
            for delay, what, fn in events:
                time.sleep(max(0, start + delay - time.monotonic()))
                try:
                    what = fn() or what
                    done.append((what, time.monotonic(), None))  # when it took effect
                except Exception as e:  # recorded; the night's checks see the service state
                    done.append((what, time.monotonic(), str(e)))
        threads = [threading.Thread(target=body, args=(g,), daemon=True) for g in groups]
        for t in threads:
            t.start()
        return threads, done

    def moment(self):
        """When a fault starts: before the first run (a third of the time) or during it, as long
        as first runs have taken lately."""
        return 0.0 if self.rng.random() < 1 / 3 else round(self.rng.uniform(0, self.run_seconds), 2)

    def fill_when_staged(self, deadline_s=20):
        """Fill archive1 as soon as a job's staging directory appears in its route folder (a job
        bound for it has staged), or after deadline_s when none does."""
        folder = os.path.join(self.lab.node("archive1")["sync_root"], ROUTE1)
        until = time.monotonic() + deadline_s
        seen = None
        while time.monotonic() < until and not seen:
            try:
                seen = [e for e in os.listdir(folder) if not e.startswith(".")]
            except OSError:
                seen = None
            time.sleep(0.02)
        self.fill_archive1()
        return (f"archive1 filled under job {seen[0]}'s staging" if seen
                else f"archive1 filled (no staging appeared in {deadline_s}s)")

    def fill_archive1(self):
        """A user's file takes archive1's free space down to a quarter of the floor (or to none,
        when others write there at the same time)."""
        small = os.path.dirname(self.fill_path)
        chunk = b"\0" * MIB
        with open(self.fill_path, "ab") as f:
            try:
                # Allocated at once (ext4 fallocate), so the fill lands before a small job's sync ends.
                os.posix_fallocate(f.fileno(), os.fstat(f.fileno()).st_size, max(1, free_bytes(small) - FLOOR // 4))
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EOPNOTSUPP):
                    raise
            try:
                while free_bytes(small) > FLOOR // 4:
                    f.write(chunk[:max(4 * KIB, min(MIB, free_bytes(small) - FLOOR // 4))])
                    f.flush()
                f.flush()
                os.fsync(f.fileno())
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise

    def archctl_run(self, night, kill=None):
        """One `archctl tier box --yes --json`; kill = (signal, delay s) sends it that signal then."""
        argv, env = self.lab.archctl_command("tier", POLICY, "--yes", "--json", config=self.config)
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, env=env)
        signalled = None
        hung = False
        try:
            if kill:
                try:
                    out, err = proc.communicate(timeout=kill[1])
                except subprocess.TimeoutExpired:
                    proc.send_signal(kill[0])
                    signalled = kill[0]
                    out, err = proc.communicate(timeout=self.args.run_timeout)
            else:
                out, err = proc.communicate(timeout=self.args.run_timeout)
        except subprocess.TimeoutExpired:
            hung = True
            proc.kill()
            out, err = proc.communicate()
        rc = proc.returncode
        doc = None
        try:
            doc = json.loads(out) if out.strip() else None
        except ValueError:
            doc = None
        error = (doc or {}).get("error") or {}
        policy = {}
        for p in (doc or {}).get("tier", []) or []:
            if p.get("policy") == POLICY:
                policy = p
        if not error and isinstance(policy.get("error"), dict):
            error = policy["error"]
        entry = {"night": night, "run": None, "rc": rc, "seconds": round(time.monotonic() - started, 1),
                 "signal": signal.Signals(signalled).name if signalled else None, "hung": hung,
                 "error_code": error.get("code"), "error_message": error.get("message"),
                 "hint": error.get("hint") or ("hint:" in err and err[err.index("hint:"):].splitlines()[0]) or None,
                 "stop": (doc or {}).get("stopped", {}).get("reason") if doc else None,
                 "archived": policy.get("archived"), "evicted": policy.get("evicted"),
                 "released": policy.get("released"), "goal_met": policy.get("goal_met"),
                 "stderr_tail": "\n".join(err.strip().splitlines()[-8:]),
                 "wrong_password": self.wrong[0] if self.wrong else None}
        self.runs.append(entry)
        return entry

    def snapshot(self):
        """{qB id: set of nodes holding it complete} and the set on the cache, for the night's figures."""
        complete = collections.defaultdict(set)
        on_cache = set()
        for name in NODES:
            try:
                for t in self.lab.qb(name).info():
                    if t["hash"] in self.torrents or t.get("infohash_v1") in self.torrents:
                        tid = self.tid_of(t)
                        if name == "cache1":
                            on_cache.add(tid)
                        if t["progress"] == 1:
                            complete[tid].add(name)
            except (HttpError, OSError) as e:
                log(f"  (snapshot: {name} did not answer: {e})")
        return complete, on_cache

    def tid_of(self, t):
        for key in ("hash", "infohash_v1"):
            if t.get(key) in self.torrents:
                return t[key]
        for tid in self.torrents:
            if t.get("infohash_v2", "").startswith(tid):
                return tid
        return t["hash"]

    def night(self, n, faulty):
        record = {"night": n, "faults": [], "runs": [], "events": [], "landed": []}
        record["aged_ledgers"] = self.age_state()
        # Faults that last: a fill emptied, a password put right, once their nights are over.
        if self.filled is not None:
            self.filled -= 1
            if self.filled <= 0:
                os.unlink(self.fill_path)
                record["events"].append("archive1's user file removed")
                self.filled = None
        if self.wrong is not None:
            node, left = self.wrong
            self.wrong = (node, left - 1) if left > 1 else None
            if self.wrong is None:
                self.write_config()
                record["events"].append(f"{node}'s right qBittorrent password back in the config")
        before_complete, before_cache = self.snapshot()
        ids = self.new_torrents(n)
        free_before = free_bytes(self.lab.node("cache1")["qb_root"])
        faults = self.draw_faults(n) if faulty else []
        kill = None
        events = []
        record["short"] = []
        for fault in faults:
            self.faults[fault] += 1
            record["short"].append(fault)
            if fault in ("sigkill", "sigterm"):
                sig = signal.SIGKILL if fault == "sigkill" else signal.SIGTERM
                kill = (sig, round(self.rng.uniform(0.05, self.run_seconds), 2))
                record["faults"].append(f"{fault} {kill[1]}s into the first run")
            elif fault in ("syncthing", "qbittorrent"):
                node = self.rng.choice(NODES)
                at = self.moment()
                down = round(self.rng.uniform(3, 25), 1)
                stop = (self.lab.stop_st if fault == "syncthing" else self.lab.stop_qb)
                start = (self.lab.start_st if fault == "syncthing" else self.lab.start_qb)
                events.append([(at, f"{fault} {node} stopped", lambda s=stop, x=node: s(x)),
                               (at + down, f"{fault} {node} started", lambda s=start, x=node: s(x))])
                record["short"][-1] += f":{node}"
                record["faults"].append(f"{node}'s {fault} stopped {at}s into the night, for {down}s")
            elif fault == "fill_archive1":
                self.filled = self.rng.randint(1, 3)
                if self.rng.random() < 0.5:  # under a job that staged for archive1 (docs/design.md "A job that cannot land")
                    events.append([(0.01, "archive1 filled", self.fill_when_staged)])
                    when = "when a job's staging appears there"
                else:
                    at = self.moment()
                    events.append([(at, "archive1 filled", self.fill_archive1)])
                    when = f"{at}s into the night"
                record["faults"].append(f"archive1 filled by a user's file {when}, for {self.filled} night(s)")
            elif fault == "wrong_password":
                node = self.rng.choice(NODES)
                self.wrong = (node, self.rng.randint(1, 2))
                self.episodes[node] += 1
                wrong = self.lab.node(node)["qb"]["password_file"] + ".wrong"  # a new mistake each time
                fd = os.open(wrong, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(f"not-the-password-{n}-{self.rng.getrandbits(32)}\n")
                record["short"][-1] += f":{node}"
                self.write_config()
                record["faults"].append(f"{node}'s qBittorrent password wrong in the config for {self.wrong[1]} night(s)")
        log(f"night {n}: {len(ids)} new torrents, cache free {human(free_before)} (goal {human(GOAL)}); "
            f"faults: {'; '.join(record['faults']) or 'none'}")
        night_start = time.monotonic()
        threads, done = self.timed(events)
        first = sum(1 for g in events for e in g if e[0] == 0)
        while len(done) < first:  # faults at 0 s are in place before the first run starts
            time.sleep(0.05)
        for i in range(1 + self.args.reruns):
            entry = self.archctl_run(n, kill=kill if i == 0 else None)
            entry["run"] = i + 1
            record["runs"].append(entry)
            log(f"  run {i + 1}: exit {entry['rc']} in {entry['seconds']}s"
                + (f" ({entry['signal']} sent)" if entry["signal"] else "")
                + (f" stop: {entry['stop']}" if entry["stop"] else "")
                + (f" error: {entry['error_code']}: {entry['error_message']}" if entry["error_code"] else "")
                + (f" archived {entry['archived']} evicted {entry['evicted']}" if entry["archived"] is not None else ""))
            if entry["rc"] == 10 or entry["signal"] or entry["hung"]:
                time.sleep(self.args.rerun_gap)  # the next cron tick
                continue
            break
        runs_end = time.monotonic()
        if threads:
            for t in threads:
                t.join()
            for what, at, failed in done:
                # A fault lands when it happens before the night's last run ended.
                landed = at <= runs_end
                record["events"].append(f"{what} {at - night_start:.1f}s into the night"
                                        + ("" if landed else " (after the night's runs)")
                                        + (f" FAILED: {failed}" if failed else ""))
                if what.endswith("stopped") or what.startswith("archive1 filled"):
                    record["landed"].append(landed)
            for name in NODES:  # a stop scheduled after a start cannot happen; make sure all run
                self.lab.start_qb(name)
                self.lab.start_st(name)
        if kill:
            record["landed"].append(bool(record["runs"][0]["signal"]))
        if record["runs"] and record["runs"][0]["rc"] == 0 and not kill:
            self.run_seconds = 0.7 * self.run_seconds + 0.3 * record["runs"][0]["seconds"]
        self.landed += sum(record["landed"])
        after_complete, after_cache = self.snapshot()
        evicted = [t for t in before_cache | set(ids) if t not in after_cache]
        archived = [t for t, nodes in after_complete.items()
                    if (nodes - {"cache1"}) and not (before_complete.get(t, set()) - {"cache1"})]
        record["evicted_bytes"] = sum(self.torrents[t]["size"] for t in evicted)
        record["archived_bytes"] = sum(self.torrents[t]["size"] for t in archived)
        record["free_after"] = free_bytes(self.lab.node("cache1")["qb_root"])
        self.archived_total += record["archived_bytes"]
        self.evicted_total += record["evicted_bytes"]
        for e in record["events"]:
            log("  event:", e)
        log(f"  night {n} ends: exit codes {[r['rc'] for r in record['runs']]}, archived {human(record['archived_bytes'])}, "
            f"evicted {human(record['evicted_bytes'])}, cache free {human(record['free_after'])}")
        self.nights.append(record)

    def clear_faults(self):
        if self.filled is not None and os.path.exists(self.fill_path):
            os.unlink(self.fill_path)
        self.filled = None
        if self.wrong is not None:
            self.wrong = None
        self.write_config()
        for name in NODES:
            self.lab.start_qb(name)
            self.lab.start_st(name)

    # -------------------------------------------------------------------------------- checks
    def problem(self, text):
        self.problems.append(text)
        log("PROBLEM:", text)

    def check_goal(self):
        free = free_bytes(self.lab.node("cache1")["qb_root"])
        ok = free >= GOAL
        log(f"check: cache free {human(free)} {'>=' if ok else '<'} goal {human(GOAL)}")
        if not ok:
            self.problem(f"the goal does not hold after the closing nights: the cache has {free} B free, the goal is {GOAL} B")

    def check_torrents(self):
        qbs = {name: self.lab.qb(name) for name in NODES}
        for tid, t in sorted(self.torrents.items(), key=lambda kv: kv[1]["name"]):
            holders = {}
            for name, qb in qbs.items():
                info = qb.info([tid])
                if info:
                    holders[name] = info[0]
            if not any(h["progress"] == 1 for h in holders.values()):
                for name in holders:  # no node says complete: ask each one to look at its bytes
                    qbs[name].recheck(tid)
                time.sleep(2)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    holders = {name: qbs[name].info([tid])[0] for name in holders if qbs[name].info([tid])}
                    if any(h["progress"] == 1 for h in holders.values()) or not any(
                            "checking" in h["state"].lower() for h in holders.values()):
                        break
                    time.sleep(0.5)
            good = []
            for name, h in holders.items():
                if h["progress"] != 1:
                    continue
                wrong = []
                for f in qbs[name].files(tid):
                    path = os.path.join(h["save_path"], f["name"])
                    want = t["files"].get(f["name"])
                    if want is None:
                        wrong.append(f"{f['name']}: not a file that was written")
                    elif not os.path.isfile(path):
                        wrong.append(f"{f['name']}: missing at {path}")
                    elif sha256_of(path) != want:
                        wrong.append(f"{f['name']}: sha256 differs from what was written")
                if wrong:
                    self.problem(f"torrent {t['name']} ({tid[:12]}) on {name}: qBittorrent says complete but "
                                 + "; ".join(wrong))
                else:
                    good.append(name)
            t["complete_on"] = good
            if not good:
                self.problem(f"torrent {t['name']} ({tid[:12]}, night {t['night']}, {t['size']} B) is complete on no node "
                             f"(listed on {sorted(holders) or 'none'}: "
                             f"{ {n: (h['state'], round(h['progress'], 3)) for n, h in holders.items()} })")
        held = collections.Counter(n for t in self.torrents.values() for n in t.get("complete_on", []))
        log(f"check: {len(self.torrents)} torrents; complete copies with unchanged bytes: {dict(held)}")

    def check_runs(self):
        for r in self.runs:
            where = f"night {r['night']} run {r['run']}"
            if r["hung"]:
                self.problem(f"{where}: archctl did not end within {self.args.run_timeout}s (killed); stderr:\n{r['stderr_tail']}")
                continue
            allowed = {0, 1, 10}
            if r["signal"] == "SIGKILL":
                allowed.add(-signal.SIGKILL)
            if r["signal"] == "SIGTERM":
                allowed.add(-signal.SIGTERM)
            if r["rc"] not in allowed:
                self.problem(f"{where}: exit {r['rc']} (allowed {sorted(allowed)}); stderr:\n{r['stderr_tail']}")
            if r["rc"] == 1:
                if not r["hint"]:
                    self.problem(f"{where}: exit 1 without a hint naming the fix: {r['error_code']}: {r['error_message']}\n"
                                 f"{r['stderr_tail']}")
                login = r["error_code"] == "QB_AUTH" or any(
                    w in (r["error_message"] or "").lower() for w in ("password", "login", "credentials"))
                if r["wrong_password"] and not login:
                    self.problem(f"{where}: exit 1 while {r['wrong_password']}'s password was wrong, but for something else: "
                                 f"{r['error_code']}: {r['error_message']} (hint: {r['hint']})\n{r['stderr_tail']}")
                if not r["wrong_password"]:
                    outage = any(w in (r["error_message"] or "") for w in ("unreachable", "cannot reach", "connection refused"))
                    why = (" -- a service outage is a wait (exit 10, docs/design.md \"Budgets, outages and stops\"), "
                           "not a failure that needs a person" if outage else "")
                    self.problem(f"{where}: exit 1 with no fault that needs a person in place{why}: {r['error_code']}: "
                                 f"{r['error_message']} (hint: {r['hint']})\n{r['stderr_tail']}")
        for record in self.nights[-self.args.clean_nights:]:
            last = record["runs"][-1]["rc"] if record["runs"] else None
            if record["faults"] == [] and last != 0:
                self.problem(f"closing night {record['night']} (no faults) ended with exit {last}: "
                             f"{record['runs'][-1]['stderr_tail']}")
        log(f"check: {len(self.runs)} runs checked for exit codes and hints")

    def check_no_ban(self):
        for name in NODES:
            try:
                self.lab.qb(name).version()
            except Exception as e:
                self.problem(f"{name}'s qBittorrent refuses the right login now (banned?): {e}")
            logs = os.path.join(self.lab.node(name)["qb"]["profile"], "qBittorrent", "data", "logs")
            lines = []
            for entry in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
                if entry.startswith("qbittorrent.log"):  # qBittorrent moves a full log to .bak
                    with open(os.path.join(logs, entry), errors="replace") as f:
                        lines += f.readlines()
            banned = [line for line in lines if "banned" in line.lower()]
            if banned:
                self.problem(f"{name}'s qBittorrent banned an address: {banned[0].strip()}")
            failures = [line for line in lines if "login failure" in line]
            self.login_failures[name] = len(failures)
            # A run killed with SIGKILL between the refusal and its record may leave it unrecorded,
            # so the next run sends the password once more: one failure more per such kill.
            kills = sum(1 for r in self.runs if r["signal"] == "SIGKILL" and r["wrong_password"] == name)
            if len(failures) > self.episodes[name] + kills:
                self.problem(f"{name}'s qBittorrent logged {len(failures)} failed logins for {self.episodes[name]} wrong "
                             f"password(s) and {kills} run(s) killed with SIGKILL under one: a refused password must be "
                             f"sent once (docs/design.md \"Credentials fail once\"); last: {failures[-1].strip()}")
        log(f"check: every qBittorrent takes the right login; none logged a ban; failed logins {dict(self.login_failures)} "
            f"for wrong passwords {dict(self.episodes)}")

    def show_status(self):
        """What `archctl status` says is left for a person after the closing nights (printed, not
        checked: the checks above are what must hold)."""
        rc, out, err = self.lab.archctl("status", "--json", config=self.config)
        try:
            doc = json.loads(out)
        except ValueError:
            log(f"status: exit {rc}: {err.strip()[-300:]}")
            return
        attention = doc.get("attention") or []
        log(f"status: exit {rc}; {len(attention)} item(s) need attention"
            + "".join(f"\n    {json.dumps(a)[:300]}" for a in attention))

    def table(self, wall):
        codes = collections.Counter(r["rc"] for r in self.runs)
        lines = [
            "",
            f"seed {self.args.seed}, {len(self.nights)} nights ({self.args.nights} with faults, "
            f"{self.args.clean_nights} without), {len(self.runs)} runs, wall time {wall / 60:.1f} min",
            f"{'night':>5}  {'new':>3}  {'faults':<60} {'exit codes':<22} {'archived':>10} {'evicted':>10} {'free':>10}",
        ]
        for r in self.nights:
            new = sum(1 for t in self.torrents.values() if t["night"] == r["night"])
            faults = ", ".join(r["short"]) or "-"
            lines.append(f"{r['night']:>5}  {new:>3}  {faults[:60]:<60} {','.join(str(x['rc']) for x in r['runs']):<22} "
                         f"{human(r['archived_bytes']):>10} {human(r['evicted_bytes']):>10} {human(r['free_after']):>10}")
        lines += [
            f"exit codes: {', '.join(f'{k}: {v}' for k, v in sorted(codes.items()))}",
            f"faults injected: {', '.join(f'{k} {v}' for k, v in sorted(self.faults.items()))} "
            f"({sum(self.faults.values())}; {self.landed} of the kills, outages and fills happened while a run was going on)",
            f"failed logins logged by qBittorrent: {self.login_failures} for wrong passwords {dict(self.episodes)}",
            f"errors of exit-1 runs: {dict(collections.Counter(r['error_code'] for r in self.runs if r['rc'] == 1))}",
            f"jobs released from a target without room: {sum(r['released'] or 0 for r in self.runs)}",
            f"stop reasons of exit-10 runs: {dict(collections.Counter(r['stop'] for r in self.runs if r['rc'] == 10))}",
            f"torrents created: {len(self.torrents)} ({human(sum(t['size'] for t in self.torrents.values()))}); "
            f"bytes archived {human(self.archived_total)}, evicted {human(self.evicted_total)}",
        ]
        print("\n".join(lines), flush=True)

    def main(self):
        started = time.monotonic()
        log(f"seed {self.args.seed}; {self.args.nights} nights with faults, then {self.args.clean_nights} without")
        try:
            self.set_up()
            log(f"lab in {self.lab.dir}; config {self.config}")
            for n in range(1, self.args.nights + 1):
                self.night(n, faulty=True)
            self.clear_faults()
            log("faults cleared")
            for n in range(self.args.nights + 1, self.args.nights + self.args.clean_nights + 1):
                self.night(n, faulty=False)
            self.check_goal()
            self.check_torrents()
            self.check_runs()
            self.check_no_ban()
            self.show_status()
        except Exception:
            self.problem("the soak itself failed:\n" + traceback.format_exc())
        finally:
            wall = time.monotonic() - started
            if self.nights:
                self.table(wall)
            if self.args.report:
                with open(self.args.report, "w") as f:
                    json.dump({"seed": self.args.seed, "nights": self.nights, "problems": self.problems,
                               "faults": dict(self.faults), "wall_s": round(wall)}, f, indent=1, default=str)
            self.tear_down()
        if self.problems:
            print(f"\nFAILED (seed {self.args.seed}): {len(self.problems)} problem(s):", flush=True)
            for p in self.problems:
                print(" -", p)
            print(f"reproduce: {sys.argv[0]} --seed {self.args.seed} --nights {self.args.nights} --keep", flush=True)
            return 1
        print(f"\nOK (seed {self.args.seed}): every check holds", flush=True)
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random, printed)")
    parser.add_argument("--nights", type=int, default=24, help="nights with faults (default 24)")
    parser.add_argument("--clean-nights", type=int, default=2, help="closing nights without faults (default 2)")
    parser.add_argument("--reruns", type=int, default=6, help="reruns a night while archctl exits 10 (default 6)")
    parser.add_argument("--rerun-gap", type=float, default=3.0, help="seconds between a run that exited 10 and its rerun (default 3)")
    parser.add_argument("--run-timeout", type=int, default=600, help="a run taking longer counts as hung (s)")
    parser.add_argument("--archctl", default=os.environ.get("ARCHCTL_BIN", ""), help="the archctl binary (default $ARCHCTL_BIN)")
    parser.add_argument("--dir", help="where the lab goes (default a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the lab directory (state, logs) afterwards")
    parser.add_argument("--report", help="write every night and run as JSON to this file")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    if args.archctl:
        args.archctl = os.path.abspath(args.archctl)
    return Soak(args).main()


if __name__ == "__main__":
    sys.exit(main())
