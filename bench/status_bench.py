#!/usr/bin/python3
"""`archctl status` over 2 nodes x N torrents, with and without P placements archctl knows (the
goal of issue 28: with placements <= 1.5x without, and <= 3 requests per qBittorrent).

    python3 bench/status_bench.py ARCHCTL_BIN [--torrents 2000] [--placements 100] [--repeat 5]
                                  [--kind single|hybrid|v1|v1small] [--before OLD_ARCHCTL_BIN]

It starts a lab (tests/lab/lab.py: cache1 and archive1, one route; node operations in-process,
transport "local") and gives each qBittorrent the same N torrents: N - P stopped payload-less
ones (collection.add_stopped_torrents) and P complete ones whose payload is on disk, the same
resources on both nodes. --kind says which: `single` (default) single-file v1 torrents
(collection.add_complete_torrents); `hybrid`, `v1` or `v1small` torrents of three files
(`archctl torrent create`, 16 KiB pieces, added with skip_checking): in `hybrid` and `v1` every
file spans two pieces and more, in `v1small` the middle file is 300 bytes and shares both its
pieces with the others. A v1 torrent of several files is the case docs/status.md "What status
reads" says is not flat: its entry cannot prove every file selected, so each placement costs
one torrents/files. Then, per binary, on fresh state directories:
  - status_none_s: `status --json` with no placement record and no job (the same nodes and
    torrents: what status costs outside the placements), median of --repeat
  - status_placements_s: the same on a state directory where each of the P resources has a
    placement record on both nodes, as a commit writes it (state/placements/<alias>/<node>.json
    under each alias, generation 1), after one untimed status that reads each resource's file
    table once (cache/files/; status_first_with_placements_s); median of --repeat, the runs of
    the two kinds alternating; ratio = status_placements_s / status_none_s
  - requests: one `status -vv --json` of each kind, its request log (one line per HTTP request)
    counted per service and node, and the qBittorrent endpoints listed
The wall time of `status` on the nodes before any torrent is added is status_empty_s. The LAST
stdout line is one JSON object; with --before, OLD_ARCHCTL_BIN is measured first on the same lab
and its object is printed on the line before.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUEST = re.compile(r"^(qBittorrent|Syncthing) '([^']+)': (GET|POST) (\S+) -> ")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def timed(lab, state, *args):
    argv, env = lab.archctl_command(*args, state=state)
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
    dt = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"archctl {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return dt, proc


def requests_of(lab, state):
    """{"qBittorrent cache1": n, ...} and {endpoint: n} of one `status -vv --json`."""
    _, proc = timed(lab, state, "-vv", "status", "--json")
    counts, endpoints = {}, {}
    for line in proc.stderr.splitlines():
        m = REQUEST.match(line)
        if not m:
            continue
        key = f"{m.group(1)} {m.group(2)}"
        counts[key] = counts.get(key, 0) + 1
        if m.group(1) == "qBittorrent":
            ep = m.group(4).split("?")[0].replace("/api/v2/", "")
            endpoints[ep] = endpoints.get(ep, 0) + 1
    return counts, endpoints, json.loads(proc.stdout)


def add_multi_file(lab, flows, p, kind):
    """P complete torrents of three files each (`kind`: hybrid or v1), the same on both nodes,
    added stopped with skip_checking; returns (qB id, [v1, v2 or just v1]) of each."""
    ids, resources = [], []
    for node in ("cache1", "archive1"):
        qb = lab.qb(node)
        save = os.path.join(lab.node(node)["qb_root"], "placed")
        for i in range(p):
            # Files of two pieces and more each have a piece no other file touches; `v1small` puts
            # a file of 300 bytes between them, which shares both its pieces.
            middle = 300 if kind == "v1small" else 36000
            layout = {f"m{i:04d}/a.bin": 40000 + i, f"m{i:04d}/b.bin": middle, f"m{i:04d}/c/d.bin": 33000 + i}
            flows.write_payload(save, layout, seed=500 + i)
            tfile = os.path.join(lab.dir, f"placed-{kind}-{i}.torrent")
            if node == "cache1":
                t = flows.create_torrent(os.path.join(save, f"m{i:04d}"), tfile, kind="v1" if kind == "v1small" else kind,
                                         piece_length=16384)
                ids.append(t["qb_id"])
                resources.append((t["qb_id"], [h for h in (t.get("v1"), t.get("v2")) if h]))
            with open(tfile, "rb") as f:
                qb.add_torrent(f.read(), save, paused=True, skip_checking=True)
        flows.wait(lambda: sum(1 for t in qb.info(ids) if t["progress"] == 1) == len(ids), timeout=300,
                   what=f"{p} complete {kind} torrents listed", interval=0.5)
    return resources


def record_placements(state, resources, nodes):
    """A placement record of each resource on each node, as a commit writes it: the same record
    under every alias (v1, v2) of the resource."""
    for i, (qb_id, aliases) in enumerate(resources):
        for alias in aliases:
            folder = os.path.join(state, "placements", alias)
            os.makedirs(folder, exist_ok=True)
            for node in nodes:
                with open(os.path.join(folder, f"{node}.json"), "w") as f:
                    json.dump({"generation": 1, "fingerprint": "f", "job_id": f"20261201-000000-{i:04x}",
                               "committed_at": "2026-12-01T00:00:00Z", "detail": {"qb_id": qb_id, "union": "0", "stamps": []}}, f)


def measure(lab, binary, work, tag, resources, repeat):
    os.environ["ARCHCTL_BIN"] = binary
    none_state, placed_state = os.path.join(work, f"state-{tag}-none"), os.path.join(work, f"state-{tag}-placed")
    for state in (none_state, placed_state):
        shutil.rmtree(state, ignore_errors=True)
        os.makedirs(state, mode=0o700)
    timed(lab, none_state, "status", "--json")  # untimed: whatever a first run sets up
    record_placements(placed_state, resources, ("cache1", "archive1"))
    first, _ = timed(lab, placed_state, "status", "--json")  # reads each resource's file table once
    # Alternately, so a load that comes and goes on the machine weighs on both alike.
    nones, placeds = [], []
    for _ in range(repeat):
        nones.append(timed(lab, none_state, "status", "--json")[0])
        placeds.append(timed(lab, placed_state, "status", "--json")[0])
    none, placed = statistics.median(nones), statistics.median(placeds)
    none_counts, none_endpoints, _ = requests_of(lab, none_state)
    counts, endpoints, doc = requests_of(lab, placed_state)
    ids = {qb_id for qb_id, _ in resources}
    shown = [r for r in doc["placements"] if r["resource"] in ids and all(p.get("present") for p in r["placements"])]
    covered = sum(1 for r in shown for c in r["coverage"] if c["covered"] == c["files"] and c["files"] > 0)
    result = {"binary": binary, "status_none_s": round(none, 4), "status_first_with_placements_s": round(first, 4),
              "status_placements_s": round(placed, 4), "ratio": round(placed / none, 3),
              "requests_none": none_counts, "requests_placements": counts,
              "qb_endpoints_none": none_endpoints, "qb_endpoints_placements": endpoints,
              "placements_shown": len(shown), "cache_copies_covered": covered, "repeat": repeat,
              "status_none_samples": [round(x, 3) for x in nones], "status_placements_samples": [round(x, 3) for x in placeds]}
    for k, v in result.items():
        log(f"  {tag} {k:32} {v}")
    return result


def main(argv):
    args = argv[1:]
    opts = {"--torrents": 2000, "--placements": 100, "--repeat": 5}
    before, kind = None, "single"
    for flag in list(opts) + ["--before", "--kind"]:
        if flag in args:
            i = args.index(flag)
            if flag == "--before":
                before = os.path.abspath(args[i + 1])
            elif flag == "--kind":
                kind = args[i + 1]
            else:
                opts[flag] = int(args[i + 1])
            del args[i:i + 2]
    if len(args) != 1 or kind not in ("single", "hybrid", "v1", "v1small"):
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(args[0])
    n, p, repeat = opts["--torrents"], opts["--placements"], opts["--repeat"]
    os.environ["ARCHCTL_BIN"] = binary
    sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "integration")]
    import collection  # noqa: E402
    import flows  # noqa: E402

    work = tempfile.mkdtemp(prefix="archctl-status-bench-")
    lab = None
    try:
        log("starting the lab")
        lab, _ = flows.start_lab([("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")],
                                 add_cleanup=lambda *a: None)
        empty_state = os.path.join(work, "state-empty")
        os.makedirs(empty_state, mode=0o700)
        timed(lab, empty_state, "status", "--json")
        empty = statistics.median(timed(lab, empty_state, "status", "--json")[0] for _ in range(repeat))
        resources = []
        for node in ("cache1", "archive1"):
            _, seconds = collection.add_stopped_torrents(lab, node, n - p)
            log(f"{node}: {n - p} stopped torrents added in {seconds:.1f} s")
            if kind == "single":
                ids, seconds = collection.add_complete_torrents(lab, node, p, category="placed")
                resources = [(v1, [v1]) for v1 in ids]
                log(f"{node}: {p} complete torrents added in {seconds:.1f} s")
        if kind != "single":
            started = time.monotonic()
            resources = add_multi_file(lab, flows, p, kind)
            log(f"{p} complete {kind} torrents of three files added to both nodes in {time.monotonic() - started:.1f} s")
        results = []
        if before:
            results.append(measure(lab, before, work, "before", resources, repeat))
        results.append(measure(lab, binary, work, "after" if before else "run", resources, repeat))
        for r in results:
            r.update(torrents_per_node=n, placements=p, kind=kind, status_empty_s=round(empty, 4))
            print(json.dumps(r))
        return 0
    finally:
        if lab is not None:
            flows.stop_lab(lab)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
