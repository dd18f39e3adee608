#!/usr/bin/python3
"""A state directory with N finished jobs (a year of nightly runs): how long `job list`,
`status`, `resume` (nothing to do) and creating one more job take.

    python3 bench/state_bench.py ARCHCTL_BIN [N=50000] [--before OLD_ARCHCTL_BIN] [--keep DIR] [--no-clear]

It starts a tiny lab (tests/lab/lab.py: one cache and one archive node, a route), archives one
small resource for real, and copies that finished job's directory N times with new ids into a
fresh state directory (the content keeps the real job's shape; only the id changes). The binary
then runs once untimed (`job list`, which builds whatever index it keeps; that time is reported
as index_build_s). Timed, against the live lab so `status` probes reachable nodes:
  - job_list_cold_s: `job list` after dropping the page cache (as root: /proc/sys/vm/drop_caches;
    otherwise posix_fadvise(DONTNEED) on every file of the state directory: "cold-ish")
  - job_list_s, status_s, resume_s: warm, median of 3; status_empty_s is `status` with no jobs at
    all (node probes, routes, placements: what status costs outside the jobs)
  - create_s: `archive RES --yes` of a new resource crashed right after its job is defined
    (ARCHCTL_TEST_CRASH_AT=job.defined): plan + job creation, median of 3 resources;
    create_empty_s is the same with an empty state directory, for the O(1) comparison
  - job_list_all_s, job_list_all_json_s: `job list --all` and `job list --all --json` (every
    finished job printed, to a pipe read to its end), once each, with their peak RSS in KiB
    (job_list_all_rss_kb, job_list_all_json_rss_kb, from /usr/bin/time -f %M)
  - job_clear_s, job_clear_rss_kb: `job clear`, last (it removes every finished job), and
    after_clear_jobs, the rows `job list --all --json` shows after it (0); --no-clear leaves it out
The LAST stdout line is one JSON object with those times in seconds and "jobs": N. With
--before, OLD_ARCHCTL_BIN is measured first on the same state directory (before the new binary
builds its index there) and its JSON object is printed on the line before.

With --keep DIR the state directory is DIR/state and outlives the run: a later run with the same
N reuses its jobs (and whatever index a binary built there) instead of writing N copies again
(a job takes about 20 KiB and 5 inodes: a million take about 20 GB and minutes to write). Before each binary is measured, the
state directory is tidied back to the N copies: the jobs the create step left (crashed right after
their definition, so unfinished) and everything outside jobs/ and index/ (reservations, routes of
an earlier lab) are removed, so `resume` always has nothing to do. `job clear` empties the state
directory, so after it the N copies are written again before another binary is measured (and a
later --keep run writes them again). Delete DIR when done.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def timed(lab, state, *args, env=None, expect=(0,)):
    argv, full_env = lab.archctl_command(*args, state=state, env=env)
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, stdin=subprocess.DEVNULL, timeout=3600)
    dt = time.monotonic() - t0
    if proc.returncode not in expect:
        raise RuntimeError(f"archctl {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return dt, proc


def timed_rss(lab, state, *args, expect=(0,)):
    """(seconds, peak RSS in KiB, stdout) of one run under /usr/bin/time -f %M."""
    argv, full_env = lab.archctl_command(*args, state=state)
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=full_env, stdin=subprocess.DEVNULL, timeout=7200)
        dt = time.monotonic() - t0
        if proc.returncode not in expect:
            raise RuntimeError(f"archctl {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        kb = int(rss.read().strip().splitlines()[-1])
    return dt, kb, proc.stdout


def median_of(n, fn):
    return statistics.median(fn() for _ in range(n))


def drop_caches(state):
    if os.geteuid() == 0:
        try:
            subprocess.run(["sync"], check=False)
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return "drop_caches"
        except OSError:
            pass
    for dirpath, _, files in os.walk(state):
        for name in files:
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "fadvise"


def job_id(i):
    t = time.gmtime(1735689600 + i * 600)  # from 2025-01-01, one every 10 minutes
    return time.strftime("%Y%m%d-%H%M%S", t) + f"-{i & 0xffff:04x}"


def replicate(template_dir, template_id, state, n):
    """N copies of the job directory, each with its own id (in its name and its content)."""
    files = {}
    for name in os.listdir(template_dir):
        if name == "lock":
            continue
        with open(os.path.join(template_dir, name), "rb") as f:
            files[name] = f.read()
    jobs = os.path.join(state, "jobs")
    os.makedirs(jobs, exist_ok=True)
    tid = template_id.encode()
    for i in range(n):
        new = job_id(i)
        d = os.path.join(jobs, new)
        os.mkdir(d)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data.replace(tid, new.encode()))


def tidy(state, n):
    """Back to the N copies: drop the jobs a create step left and whatever else archctl wrote
    outside jobs/ and index/ (a reservation, a route's state of another lab)."""
    bench_ids = {job_id(i) for i in range(n)}
    jobs = os.path.join(state, "jobs")
    active = os.path.join(state, "index", "active")
    for name in os.listdir(jobs):
        if name not in bench_ids:
            shutil.rmtree(os.path.join(jobs, name))
            try:
                os.unlink(os.path.join(active, name))
            except FileNotFoundError:
                pass
    for name in os.listdir(state):
        if name not in ("jobs", "index"):
            path = os.path.join(state, name)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)


def measure(lab, binary, state, work, tag, resources, n, clear):
    """The times of one binary on the state directory `state` (see the module doc)."""
    os.environ["ARCHCTL_BIN"] = binary
    tidy(state, n)
    index_build, _ = timed(lab, state, "job", "list")
    log(f"{tag}: first job list (index build if any): {index_build:.2f} s")
    how = drop_caches(state)
    job_list_cold, _ = timed(lab, state, "job", "list")
    job_list = median_of(3, lambda: timed(lab, state, "job", "list")[0])
    status = median_of(3, lambda: timed(lab, state, "status", expect=(0, 1, 10))[0])
    resume = median_of(3, lambda: timed(lab, state, "resume")[0])
    zero = os.path.join(work, f"zero-state-{tag}")
    status_empty = median_of(3, lambda: timed(lab, zero, "status", expect=(0, 1, 10))[0])
    crash = {"ARCHCTL_TEST_CRASH_AT": "job.defined"}
    create = statistics.median(timed(lab, state, "archive", r[:12], "--yes", env=crash, expect=(137,))[0] for r in resources[:3])
    empty = os.path.join(work, f"empty-state-{tag}")
    create_empty = statistics.median(
        timed(lab, empty, "archive", r[:12], "--yes", env=crash, expect=(137,))[0] for r in resources[3:6])
    result = {"jobs": 0, "job_list_s": round(job_list, 4), "job_list_cold_s": round(job_list_cold, 4),
              "resume_s": round(resume, 4), "status_s": round(status, 4), "status_empty_s": round(status_empty, 4),
              "create_s": round(create, 4), "create_empty_s": round(create_empty, 4),
              "index_build_s": round(index_build, 4), "cold": how, "binary": binary}
    tidy(state, n)  # the create step's jobs are unfinished: only the N finished copies remain
    t, kb, out = timed_rss(lab, state, "job", "list", "--all")
    result.update(job_list_all_s=round(t, 4), job_list_all_rss_kb=kb)
    t, kb, out = timed_rss(lab, state, "job", "list", "--all", "--json")
    shown = json.loads(out)["finished_shown"]
    result.update(job_list_all_json_s=round(t, 4), job_list_all_json_rss_kb=kb, job_list_all_shown=shown)
    if clear:
        t, kb, _ = timed_rss(lab, state, "job", "clear")
        result.update(job_clear_s=round(t, 4), job_clear_rss_kb=kb)
        _, after = timed(lab, state, "job", "list", "--all", "--json")
        result["after_clear_jobs"] = len(json.loads(after.stdout)["jobs"])
    for k, v in result.items():
        log(f"  {tag} {k:16} {v}")
    return result


def main(argv):
    args = argv[1:]
    before = None
    if "--before" in args:
        i = args.index("--before")
        before = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    clear = "--no-clear" not in args
    args = [a for a in args if a != "--no-clear"]
    keep = None
    if "--keep" in args:
        i = args.index("--keep")
        keep = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(args[0])
    n = int(args[1]) if len(args) > 1 else 50000
    os.environ["ARCHCTL_BIN"] = binary
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "integration")]
    import flows  # noqa: E402 (needs ARCHCTL_BIN first)

    work = tempfile.mkdtemp(prefix="archctl-state-bench-")
    lab = None
    try:
        log("starting the lab")
        lab, routes = flows.start_lab([("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")],
                                      add_cleanup=lambda *a: None)
        resources = []
        for k in range(13):
            _, tid, _, _ = flows.seed_resource(lab, f"bench{k}", {"pay/a.bin": 65536, "pay/b/c.bin": 4096}, seed=100 + k)
            resources.append(tid)
        log("archiving one resource for a real finished job")
        rc, out, err = lab.archctl("archive", resources[0][:12], "--yes", timeout=600)
        if rc != 0:
            raise RuntimeError(f"the template archive failed: {err[-2000:]}")
        jobs_dir = os.path.join(lab.state_dir, "jobs")
        template_id = sorted(os.listdir(jobs_dir))[-1]
        template = os.path.join(jobs_dir, template_id)

        state = os.path.join(keep or work, "state")
        stamp = os.path.join(keep, "bench.json") if keep else None
        def write_copies():
            if keep:
                shutil.rmtree(keep, ignore_errors=True)
                os.makedirs(keep)
            else:
                shutil.rmtree(state, ignore_errors=True)
            log(f"writing {n} copies of job {template_id}")
            t0 = time.monotonic()
            replicate(template, template_id, state, n)
            log(f"  {time.monotonic() - t0:.1f} s")
            if stamp:
                with open(stamp, "w") as f:
                    json.dump({"jobs": n}, f)

        if stamp and os.path.exists(stamp) and json.load(open(stamp)).get("jobs") == n:
            log(f"reusing the {n} jobs in {state}")
        else:
            write_copies()
        if before:
            # The same state directory, before the other binary builds anything in it.
            r = measure(lab, before, state, work, "before", resources[7:13], n, clear)
            r["jobs"] = n
            print(json.dumps(r))
            if clear:
                write_copies()
        result = measure(lab, binary, state, work, "after" if before else "run", resources[1:7], n, clear)
        if clear and stamp:
            os.unlink(stamp)  # the copies are gone: a later run writes them again
        result["jobs"] = n
        print(json.dumps(result))
        return 0
    finally:
        if lab is not None:
            flows.stop_lab(lab)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
