#!/usr/bin/python3
"""The benchmark runner behind bench/run.sh (not a test): every row of issue 18 side by side with
the tool a user would run instead, in one run on one lab (two nodes, cache1 and archive1, one
route). Prints each row as it finishes (stderr), then the table (stdout), and writes the same as
JSON to bench/results/<YYYY-MM-DD>[-HHMM].json.

    ARCHCTL_BIN=build/bench/cli/archctl bench/runner.py [--quick] [--only ROW[,ROW]] [--repeat N]

Rows: 1 archive end to end (1 GiB hybrid, bt_backup set: goal <= 1.10x, with archctl's
torrents/export requests and the source qBittorrent web interface's longest answer during the
run), 2 torrent verify, 3 hard-link staging, 4 copy staging, 5 status over 2 x 2,000 torrents,
6 plan of a 100,000-file torrent, 7 a state dir of 50,000 finished jobs (bench/state_bench.py),
8 archctl's own reads per archived byte (measured during rows 1 and 4). Row 9 runs only when
named (--only 9: ~40 GB of disk, 15-25 minutes): archive of an 8 GiB hybrid of 1 MiB pieces end
to end with bt_backup set (goal <= 1.15x; the source web interface's longest answer during the
run, goal <= 2 s), and beside it what qBittorrent's own torrents/export of that torrent costs (its
time and the web interface's longest answer meanwhile) — the request the run did without.
Timed rows run --repeat times (default 3; row 9 once unless --repeat is given) and report
medians. Exit 0 whether goals are met or not; 1 when a row could not be measured (its error is in
the table).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import measure  # noqa: E402
from measure import log, median  # noqa: E402

FULL = {"archive_mib": 1024, "link_files": 100_000, "link_files_small": 10_000, "copy_mib": 1024,
        "torrents": 2000, "plan_files": 100_000, "jobs": 50_000, "big_mib": 8192, "big_piece": 1 << 20}
QUICK = {"archive_mib": 64, "link_files": 10_000, "link_files_small": 1_000, "copy_mib": 64,
         "torrents": 200, "plan_files": 5_000, "jobs": 1_000, "big_mib": 256, "big_piece": 1 << 20}
ALL_ROWS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
DEFAULT_ROWS = (1, 2, 3, 4, 5, 6, 7, 8)  # row 9 (8 GiB) only when named
MIB = 1024 * 1024


class Bench:
    def __init__(self, args, binary):
        self.args = args
        self.bin = binary
        self.sizes = QUICK if args.quick else FULL
        self.repeat = args.repeat
        self.rows = []        # table rows, in row order
        self.failed = []      # (row, error) of rows that could not be measured
        self.lab = None
        self.route = None
        self.resource = None  # row 1's last seeded hybrid (row 2 verifies it)
        self.scratch = None
        self.status_endpoints = "not listed"

    # -- table
    def add(self, row, what, archctl, reference, ratio, goal, met, note="", samples=None):
        """One table row; `samples` (raw per-run numbers) goes to the JSON only."""
        entry = {"row": row, "what": what, "archctl": archctl, "reference": reference, "ratio": ratio,
                 "goal": goal, "met": met, "note": note, "samples": samples or {}}
        self.rows.append(entry)
        log(f"row {row}: {what}: archctl {archctl} | reference {reference} | ratio {ratio} | goal {goal} | "
            f"{'met' if met else 'NOT met' if met is not None else 'n/a'}{' | ' + note if note else ''}")

    def fail(self, row, what, error):
        self.failed.append((row, error))
        self.add(row, what, "not measured", "", "", "", None, error)

    # -- the lab
    def start_lab(self):
        import flows
        from lab.lab import Lab
        log("starting the lab (cache1, archive1, one route)")
        self.lab = Lab(nodes=[("cache1", "cache"), ("archive1", "archive")])
        self.lab.__enter__()
        self.route = flows.pair_route(self.lab, "cache1", "archive1")
        self.scratch = tempfile.mkdtemp(prefix="bench-", dir=self.lab.dir)

    def stop_lab(self):
        if self.lab is not None:
            self.lab.__exit__(None, None, None)

    # -- rows 1 and 8a: archive end to end
    def row_archive(self, want1, want8):
        import archive_bench
        size = self.sizes["archive_mib"] * MIB
        samples = []
        for i in range(self.repeat):
            log(f"row 1: seeding a {size // MIB} MiB hybrid (run {i + 1}/{self.repeat})")
            res = archive_bench.seed_hybrid(self.lab, size, f"r{i + 1}")
            m = archive_bench.archive_once(self.lab, self.route, res, bt_backup=True)
            log(f"row 1: run {i + 1}: archctl {m['archctl_s']:.2f} s; sync {m['sync_s']:.2f} s + "
                f"qB recheck {m['recheck_s']:.2f} s = {m['baseline_s']:.2f} s; "
                f"archctl read_bytes {m['io']['read_bytes']}, rchar {m['io']['rchar']}; "
                f"torrents/export requests {m['exports']}; source web interface's longest answer "
                f"{m['ui_max_s']:.2f} s ({m['ui_asks']} asks{self._ui_errors(m)})")
            samples.append(m)
            self.resource = res
        ratio = median([m["archctl_s"] / m["baseline_s"] for m in samples])
        if want1:
            self.add(1, f"archive {size // MIB} MiB hybrid end to end (bt_backup set) vs Syncthing sync + qB recheck",
                     f"{median([m['archctl_s'] for m in samples]):.2f} s",
                     f"{median([m['baseline_s'] for m in samples]):.2f} s", f"{ratio:.2f}x", "<= 1.10x",
                     ratio <= 1.10,
                     f"median of {len(samples)}; ratio = median of per-run ratios; archctl's torrents/export "
                     f"requests per run: {', '.join(str(m['exports']) for m in samples)}; the source qB web "
                     f"interface's longest answer during the runs: {max(m['ui_max_s'] for m in samples):.2f} s",
                     {k: [round(m[k], 3) for m in samples] for k in ("archctl_s", "sync_s", "recheck_s", "ui_max_s")}
                     | {"exports": [m["exports"] for m in samples]})
        if want8:
            rb = median([m["io"]["read_bytes"] / res.size for m in samples])
            rc = median([m["io"]["rchar"] / res.size for m in samples])
            self.add(8, "archive (hard-link path): archctl's read_bytes | rchar per archived byte",
                     f"{rb:.4f} | {rc:.4f}", "", "", "0 (<= 0.01)", rb <= 0.01 and rc <= 0.01,
                     "/proc/<pid>/io of archctl at exit; node ops in-process (transport local); page cache warm, "
                     "so rchar is the witness of payload reads")

    @staticmethod
    def _ui_errors(m):
        return f", {len(m['ui_errors'])} failed: {m['ui_errors'][0]}" if m["ui_errors"] else ""

    # -- row 9: archive of a large hybrid of small pieces, and the export it does without
    def row_big(self):
        import archive_bench
        size, piece = self.sizes["big_mib"] * MIB, self.sizes["big_piece"]
        runs = self.repeat if self.args.repeat_given else 1
        samples = []
        for i in range(runs):
            # The payload, the archived copy and the baseline's two copies: four times the size.
            free = shutil.disk_usage(self.lab.dir).free
            if free < 4.5 * size:
                raise RuntimeError(f"{free // MIB} MiB free below {self.lab.dir}: a run of row 9 needs "
                                   f"{int(4.5 * size) // MIB} MiB")
            log(f"row 9: seeding a {size // MIB} MiB hybrid of {piece // 1024} KiB pieces (run {i + 1}/{runs})")
            t0 = time.monotonic()
            res = archive_bench.seed_hybrid(self.lab, size, f"big{i + 1}", piece_length=piece, timeout=3600)
            seed_s = time.monotonic() - t0
            log(f"row 9: seeded in {seed_s:.0f} s (generated, torrent created, qB recheck)")
            m = archive_bench.archive_once(self.lab, self.route, res, timeout=3600, bt_backup=True)
            m["seed_s"] = seed_s
            log(f"row 9: run {i + 1}: archctl {m['archctl_s']:.2f} s; sync {m['sync_s']:.2f} s + "
                f"qB recheck {m['recheck_s']:.2f} s = {m['baseline_s']:.2f} s; torrents/export requests "
                f"{m['exports']}; source web interface's longest answer {m['ui_max_s']:.2f} s "
                f"({m['ui_asks']} asks{self._ui_errors(m)})")
            samples.append(m)
            if i + 1 < runs:  # the last run's torrent stays for the export below
                t0 = time.monotonic()
                archive_bench.remove_run(self.lab, self.route, res, m)
                log(f"row 9: run {i + 1}'s data removed in {time.monotonic() - t0:.0f} s")
        # The source qB is idle again (the baseline ran on the target): one export of the last
        # resource, as archctl would have asked without bt_backup.
        log("row 9: qBittorrent's own torrents/export of that torrent")
        e = archive_bench.export_cost(self.lab, res, timeout=3600)
        log(f"row 9: torrents/export {e['export_s']:.2f} s ({e['bytes']} bytes); web interface's longest answer "
            f"meanwhile {e['ui_max_s']:.2f} s ({e['ui_asks']} asks{self._ui_errors(e)})")
        ratio = median([m["archctl_s"] / m["baseline_s"] for m in samples])
        ui = max(m["ui_max_s"] for m in samples)
        exports = [m["exports"] for m in samples]
        what = f"{size // MIB} MiB hybrid, {piece // 1024} KiB pieces"
        self.add(9, f"archive {what}, end to end (bt_backup set) vs Syncthing sync + qB recheck",
                 f"{median([m['archctl_s'] for m in samples]):.2f} s",
                 f"{median([m['baseline_s'] for m in samples]):.2f} s", f"{ratio:.2f}x", "<= 1.15x", ratio <= 1.15,
                 f"{'median of %d' % len(samples) if len(samples) > 1 else 'one run'}; baseline = sync "
                 f"{median([m['sync_s'] for m in samples]):.1f} s + qB recheck "
                 f"{median([m['recheck_s'] for m in samples]):.1f} s; archctl's torrents/export requests: "
                 f"{', '.join(map(str, exports))}",
                 {k: [round(m[k], 3) for m in samples] for k in ("archctl_s", "sync_s", "recheck_s", "seed_s")}
                 | {"exports": exports})
        self.add(9, f"archive {what}: the source qB web interface's longest answer during the run",
                 f"{ui:.2f} s", "", "", "<= 2 s", ui <= 2.0,
                 f"GET app/version every 0.25 s, {sum(m['ui_asks'] for m in samples)} asks"
                 + (f"; {sum(len(m['ui_errors']) for m in samples)} failed" if any(m["ui_errors"] for m in samples)
                    else ""),
                 {"ui_max_s": [round(m["ui_max_s"], 3) for m in samples]})
        self.add(9, f"qB's own torrents/export of that torrent (the request the run did without): time | "
                    f"web interface's longest answer meanwhile",
                 f"{sum(exports)} asked", f"{e['export_s']:.1f} s | {e['ui_max_s']:.1f} s", "", "", None,
                 f"archctl column: its torrents/export requests in {len(samples)} run(s); reference: one GET "
                 f"torrents/export on the idle source qB ({e['bytes']} bytes of .torrent), the probe's "
                 f"{e['ui_asks']} asks meanwhile{self._ui_errors(e)}",
                 {"export_s": round(e["export_s"], 3), "ui_max_s": round(e["ui_max_s"], 3), "bytes": e["bytes"]})

    # -- row 2: torrent verify
    def row_verify(self):
        import archive_bench
        import flows
        res = self.resource
        if res is None:
            log("row 2: seeding a hybrid (row 1 did not run)")
            res = archive_bench.seed_hybrid(self.lab, self.sizes["archive_mib"] * MIB, "v")
        measure.warm(res.paths())
        qb = self.lab.qb("cache1")
        verify, recheck = [], []
        for i in range(self.repeat):
            r = measure.run([self.bin, "torrent", "verify", res.tfile, res.save]).check("archctl torrent verify")
            verify.append(r.wall)
            qb.delete(res.tid, delete_files=False)
            flows.wait(lambda: not qb.info([res.tid]), what="torrent removed")
            with open(res.tfile, "rb") as f:
                qb.add_torrent(f.read(), res.save, paused=True)
            flows.wait(lambda: qb.info([res.tid]), what="torrent listed")
            recheck.append(archive_bench.timed_recheck(qb, res.tid))
            log(f"row 2: run {i + 1}: archctl torrent verify {verify[-1]:.2f} s, qB recheck {recheck[-1]:.2f} s")
        speedup = median([b / a for a, b in zip(verify, recheck)])
        self.add(2, f"torrent verify of the {res.size // MIB} MiB hybrid (warm) vs qB's own recheck",
                 f"{median(verify):.2f} s", f"{median(recheck):.2f} s", f"{speedup:.2f}x faster", ">= 3.5x faster",
                 speedup >= 3.5, f"median of {len(verify)}",
                 {"verify_s": [round(x, 3) for x in verify], "recheck_s": [round(x, 3) for x in recheck]})
        rates = measure.openssl_speed()
        one_core = 1 / (1 / rates["sha1"] + 1 / rates["sha256"])
        cores = os.cpu_count() or 1
        limit = cores * one_core
        rate = res.size / median(verify)
        self.add(2, "torrent verify throughput vs the hashing limit (nproc x 1/(1/sha1+1/sha256), openssl speed)",
                 f"{rate / 1e6:.0f} MB/s", f"{limit / 1e6:.0f} MB/s", f"{rate / limit:.0%}", ">= 90%",
                 rate / limit >= 0.9,
                 f"openssl speed 16384 B: sha1 {rates['sha1'] / 1e6:.0f} MB/s, sha256 {rates['sha256'] / 1e6:.0f} MB/s, "
                 f"{cores} cores")

    # -- rows 3 and 4: staging through `archctl node serve`
    def _stage_beside(self, label, work, qb, sync, tag, source_base, files, method, check, ref_name, ref_commands,
                      ref_prefix, remove_ref):
        """Runs a stage request through `node serve` and then the reference tool, self.repeat
        times side by side, removing both outputs between runs; returns (archctl walls, reference walls)."""
        ours, ref = [], []
        for i in range(self.repeat):
            request = os.path.join(work, f"req{tag}{i}.json")
            job_dir = os.path.join(sync, "route", f"job{tag}{i}")
            self._request(request, job_dir, source_base, files, method)
            r, resp = self._serve(request, qb, sync)
            check(resp)
            copy = f"{ref_prefix}{i}"
            t0 = time.monotonic()
            for command in ref_commands(copy):
                subprocess.run(command, check=True)
            ref.append(time.monotonic() - t0)
            ours.append(r.wall)
            log(f"{label} run {i + 1}: archctl stage ({method}) {r.wall:.2f} s, {ref_name} {ref[-1]:.2f} s")
            t0 = time.monotonic()
            remove_ref(copy)
            shutil.rmtree(job_dir)
            os.sync()
            log(f"{label}: outputs removed in {time.monotonic() - t0:.1f} s")
        return ours, ref

    def _serve(self, request, qb, sync):
        r = measure.run([self.bin, "node", "serve", "--root", qb, "--root", sync], stdin_path=request)
        r.check("archctl node serve")
        lines = [json.loads(line) for line in r.out.splitlines() if '"type":"response"' in line.replace(" ", "")]
        if not lines or not lines[-1].get("ok") or not lines[-1]["result"].get("complete"):
            raise RuntimeError(f"stage did not complete: {r.out[-600:]}")
        return r, lines[-1]

    @staticmethod
    def _request(path, job_dir, source_base, files, method):
        args = {"job_dir": job_dir, "source_base": source_base, "files": files, "method": method}
        with open(path, "w") as f:
            f.write(json.dumps({"type": "request", "id": 1, "op": "stage", "args": args}) + "\n")

    def _make_tree(self, n, tree):
        files = []
        for i in range(n):
            rel = f"d{i % 100:03d}/f{i:06d}.bin"
            path = os.path.join(tree, rel)
            if i < 100:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            data = (b"%d\n" % i) * 16
            with open(path, "wb") as f:
                f.write(data)
            files.append({"index": i, "path": rel, "size": len(data)})
        return files

    def row_link(self):
        work = os.path.join(self.scratch, "stage")
        qb, sync = os.path.join(work, "qb"), os.path.join(work, "sync")
        os.makedirs(os.path.join(sync, "route"), exist_ok=True)
        times = {}
        for n in (self.sizes["link_files_small"], self.sizes["link_files"]):
            log(f"row 3: making a tree of {n} files")
            tree = os.path.join(qb, f"tree{n}")
            t0 = time.monotonic()
            files = self._make_tree(n, tree)
            log(f"row 3: tree made in {time.monotonic() - t0:.1f} s")
            t0 = time.monotonic()
            os.sync()  # the tree's own metadata must not land in archctl's first fsync
            log(f"row 3: sync after making the tree: {time.monotonic() - t0:.1f} s")
            def linked_all(resp, n=n):
                if resp["result"].get("files_linked") != n:
                    raise RuntimeError(f"stage linked {resp['result'].get('files_linked')} of {n} files")
            times[n] = self._stage_beside(
                f"row 3: {n} files", work, qb, sync, f"{n}-", tree, files, "hardlink", linked_all,
                "cp -al", lambda copy, tree=tree: [["cp", "-al", tree, copy]], os.path.join(qb, f"cp{n}-"), shutil.rmtree)
        big, small = self.sizes["link_files"], self.sizes["link_files_small"]
        ours, ref = times[big]
        ratio = median([a / b for a, b in zip(ours, ref)])
        self.add(3, f"hard-link staging of {big} files incl. durable manifest (node serve) vs cp -al",
                 f"{median(ours):.2f} s", f"{median(ref):.2f} s", f"{ratio:.2f}x", "<= 1.3x", ratio <= 1.3,
                 f"median of {len(ours)}", {f"{k}_{n}_s": [round(x, 3) for x in times[n][i]]
                                            for n in times for i, k in enumerate(("archctl", "cp"))})
        scale = median(ours) / median(times[small][0])
        goal = big / small * 1.1
        self.add(3, f"hard-link staging scaling: t({big} files) / t({small} files)",
                 f"{median(ours):.2f} s", f"{median(times[small][0]):.2f} s", f"{scale:.1f}",
                 f"<= {goal:g}", scale <= goal, f"cp -al: {median(ref) / median(times[small][1]):.1f}")

    def row_copy(self, want4, want8):
        work = os.path.join(self.scratch, "copy")
        qb, sync = os.path.join(work, "qb"), os.path.join(work, "sync")
        os.makedirs(os.path.join(sync, "route"), exist_ok=True)
        size = self.sizes["copy_mib"] * MIB
        src = os.path.join(qb, "big.bin")
        measure.generate(src, size, 4)
        files = [{"index": 0, "path": "big.bin", "size": size}]
        measure.warm([src])  # both sides start from a warm page cache
        os.sync()            # and with no dirty pages of the generated file left to throttle a writer
        if want4:
            def copied_all(resp):
                if resp["result"].get("bytes_copied") != size:
                    raise RuntimeError(f"stage copied {resp['result'].get('bytes_copied')} of {size} bytes")
            # `sync FILE` is the fsync of the copy.
            ours, ref = self._stage_beside(
                "row 4: copy", work, qb, sync, "", qb, files, "copy", copied_all,
                "cp + fsync", lambda copy: [["cp", src, copy], ["sync", copy]], os.path.join(sync, "cp-"), os.unlink)
            ratio = median([a / b for a, b in zip(ours, ref)])
            self.add(4, f"copy staging of {size // MIB} MiB incl. xxh3-128 + fsync (node serve) vs cp + fsync",
                     f"{median(ours):.2f} s", f"{median(ref):.2f} s", f"{ratio:.2f}x", "<= 1.15x", ratio <= 1.15,
                     f"median of {len(ours)}; warm page cache",
                     {"archctl_s": [round(x, 3) for x in ours], "cp_fsync_s": [round(x, 3) for x in ref]})
        if want8:
            # One more run from a cold cache for the source: its read_bytes are then real disk reads.
            measure.drop_cache([src])
            request = os.path.join(work, "req-cold.json")
            self._request(request, os.path.join(sync, "route", "job-cold"), qb, files, "copy")
            r, resp = self._serve(request, qb, sync)
            io = resp.get("io", {})
            self.add(8, "copy staging: node serve's read_bytes | rchar per staged byte (source cache dropped)",
                     f"{r.io['read_bytes'] / size:.6f} | {r.io['rchar'] / size:.6f}", "", "",
                     "<= 1 (+ 1 MiB fixed)",
                     # A constant few KiB (the process's own metadata and binary pages) is not
                     # a per-byte cost: allow 1 MiB once, never a second read of the payload.
                     (r.io["read_bytes"] - (1 << 20)) / size <= 1.0 and (r.io["rchar"] - (1 << 20)) / size <= 1.0,
                     f"/proc/<pid>/io at exit; the response's io: read_bytes {io.get('read_bytes')}, "
                     f"rchar {io.get('rchar')}")
        shutil.rmtree(work)

    # -- row 5: status over 2 nodes x N torrents
    def row_status(self):
        import collection
        n = self.sizes["torrents"]
        for node in ("cache1", "archive1"):
            ids, seconds = collection.add_stopped_torrents(self.lab, node, n)
            log(f"row 5: {len(ids)} stopped torrents added to {node} in {seconds:.1f} s")
        times = []
        for i in range(self.repeat):
            argv, env = self.lab.archctl_command("status", "--json")
            r = measure.run(argv, env=env)
            if r.rc not in (0, 10):
                r.check("archctl status")
            times.append(r.wall)
            log(f"row 5: run {i + 1}: archctl status {r.wall:.2f} s (exit {r.rc})")
        counts, source = self._status_requests(r.out)
        self.add(5, f"status over 2 nodes x {n} torrents: wall time", f"{median(times):.2f} s", "", "",
                 "<= 1 s", median(times) <= 1.0, f"median of {len(times)}",
                 {"status_s": [round(x, 3) for x in times]})
        worst = max(counts.get(node, 0) for node in ("cache1", "archive1"))
        self.add(5, "status: qB requests per node", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), "", "",
                 "<= 3 per node", worst <= 3,
                 f"counted from {source}; both nodes: {self.status_endpoints}")

    def _status_requests(self, doc_text):
        """qB requests per node of one status: from the --json document when it reports them, else
        from the -vv request log (one line per HTTP request)."""
        try:
            found = _find_key(json.loads(doc_text), "requests")
        except ValueError:
            found = None
        if isinstance(found, dict) and found and all(isinstance(v, int) for v in found.values()):
            return found, "status --json (\"requests\")"
        argv, env = self.lab.archctl_command("status", "-vv")
        r = measure.run(argv, env=env)
        counts = {"cache1": 0, "archive1": 0}
        endpoints = {}
        for line in r.err.splitlines():
            m = re.search(r"qbittorrent '([^']+)': (\S+) (\S+)", line, re.I)
            if m:
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
                key = m.group(3).split("?")[0].replace("/api/v2/", "")
                endpoints[key] = endpoints.get(key, 0) + 1
        self.status_endpoints = ", ".join(f"{k} x{v}" for k, v in sorted(endpoints.items()))
        return counts, "the -vv request log of `archctl status -vv`"

    # -- row 6: plan of a torrent of many files
    def row_plan(self):
        import flows
        n = self.sizes["plan_files"]
        save = os.path.join(self.lab.node("cache1")["qb_root"], "bench-many")
        top = os.path.join(save, "many")
        log(f"row 6: making a hybrid of {n} files")
        for i in range(n):
            d = os.path.join(top, f"d{i // 1000:03d}")
            if i % 1000 == 0:
                os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i:06d}.txt"), "wb") as f:
                f.write(b"%d\n" % i)
        tfile = os.path.join(self.lab.dir, "bench-many.torrent")
        info = flows.create_torrent(top, tfile, kind="hybrid")
        tid = info["qb_id"]
        qb = self.lab.qb("cache1")
        with open(tfile, "rb") as f:
            qb.add_torrent(f.read(), save, paused=True, skip_checking=True)
        flows.wait(lambda: (lambda t: t and t[0]["progress"] == 1)(qb.info([tid])), timeout=600,
                   what="the many-file torrent listed complete", interval=0.5)
        walls, cpus = [], []
        for i in range(self.repeat):
            argv, env = self.lab.archctl_command("plan", "archive", tid[:12])
            r = measure.run(argv, env=env, timeout=600).check("archctl plan archive")
            walls.append(r.wall)
            cpus.append(r.cpu)
            log(f"row 6: run {i + 1}: plan archive {r.wall:.2f} s, archctl CPU {r.cpu:.2f} s")
        wall, cpu = median(walls), median(cpus)
        self.add(6, f"plan archive of a {n}-file hybrid: wall time", f"{wall:.2f} s", "", "", "<= 2 s", wall <= 2.0,
                 f"median of {len(walls)}", {"wall_s": [round(x, 3) for x in walls], "cpu_s": [round(x, 3) for x in cpus]})
        share = median([c / w for c, w in zip(cpus, walls)])
        self.add(6, "plan archive: archctl's own CPU (user+sys, wait4 rusage) / wall", f"{cpu:.2f} s",
                 f"{wall:.2f} s", f"{share:.0%}", "<= 20%", share <= 0.2)

    # -- row 7: a state dir of many finished jobs
    def row_state(self):
        script = os.environ.get("ARCHCTL_BENCH_STATE_SCRIPT") or os.path.join(ROOT, "bench", "state_bench.py")
        if not os.path.exists(script):
            self.add(7, "state dir of finished jobs: status, resume, job list, create", "not measured", "", "",
                     "<= 200 ms each; create O(1)", None, f"{os.path.relpath(script, ROOT)} is not there yet")
            return
        n = self.sizes["jobs"]
        env = dict(os.environ)
        if self.lab is not None:  # for a script that copies a real finished job of the lab
            env.update(ARCHCTL_BENCH_LAB_STATE=self.lab.state_dir, ARCHCTL_BENCH_LAB_CONFIG=self.lab.config_path,
                       ARCHCTL_BENCH_LAB_DIR=self.lab.dir, ARCHCTL_BENCH_ROOT=ROOT)
        log(f"row 7: {script} {self.bin} {n}")
        proc = subprocess.run([sys.executable, script, self.bin, str(n)], capture_output=True, text=True, env=env,
                              timeout=1800)
        sys.stderr.write(proc.stderr)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"{script} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-600:]}")
        doc = json.loads(lines[-1])
        jobs = doc.get("jobs", n)
        for key, what in (("status_s", "status"), ("resume_s", "resume (nothing to do)"),
                          ("job_list_s", "job list (warm)"), ("job_list_cold_s", "job list (cold cache)")):
            if key in doc:
                self.add(7, f"{what} with {jobs} finished jobs", f"{doc[key] * 1000:.0f} ms", "", "", "<= 200 ms",
                         doc[key] <= 0.2)
        if "create_s" in doc and "create_empty_s" in doc:
            ratio = doc["create_s"] / doc["create_empty_s"]
            self.add(7, f"create one more job with {jobs} finished jobs vs in a near-empty state dir",
                     f"{doc['create_s'] * 1000:.0f} ms", f"{doc['create_empty_s'] * 1000:.0f} ms", f"{ratio:.2f}x",
                     "O(1) (<= 1.5x)", ratio <= 1.5)
        elif "create_s" in doc:
            self.add(7, f"create one more job with {jobs} finished jobs", f"{doc['create_s'] * 1000:.0f} ms", "", "",
                     "O(1) (<= 200 ms)", doc["create_s"] <= 0.2, "no near-empty comparison: judged by 200 ms")

    # -- the run
    def run(self, only):
        log(f"archctl: {self.bin} ({version(self.bin)}); sizes: {'quick' if self.args.quick else 'full'}; "
            f"repeat {self.repeat}; rows {','.join(map(str, only))}")
        need_lab = bool(set(only) & {1, 2, 5, 6, 8, 9})
        started = time.monotonic()
        try:
            if need_lab:
                self.start_lab()
            else:
                self.scratch = tempfile.mkdtemp(prefix="archctl-bench-")
            log(f"/proc/<pid>/io of an exited, unreaped child: {measure.check_zombie_io(self.scratch)['rchar']} "
                f"rchar for an 8 MiB cat")
            # Order: rows that need a quiet qB first (row 5 fills both qBs with torrents); row 7
            # after row 1, whose finished job a state script may clone.
            steps = [(1, "archive end to end", lambda: self.row_archive(1 in only, 8 in only), {1, 8}),
                     (9, "archive of an 8 GiB hybrid of small pieces", self.row_big, {9}),
                     (2, "torrent verify", self.row_verify, {2}),
                     (6, "plan of a many-file torrent", self.row_plan, {6}),
                     (7, "state dir of finished jobs", self.row_state, {7}),
                     (5, "status over many torrents", self.row_status, {5}),
                     (3, "hard-link staging", self.row_link, {3}),
                     (4, "copy staging", lambda: self.row_copy(4 in only, 8 in only), {4, 8})]
            for row, what, fn, rows in steps:
                if not rows & set(only):
                    continue
                t0 = time.monotonic()
                try:
                    fn()
                except Exception as e:  # one row's failure does not stop the others
                    traceback.print_exc(file=sys.stderr)
                    self.fail(row, what, f"{type(e).__name__}: {e}".splitlines()[0][:300])
                log(f"row {row} took {time.monotonic() - t0:.0f} s")
        except BaseException:
            self.clean_up()
            raise
        return time.monotonic() - started

    def clean_up(self):
        """Stop the lab and remove what the run made (slow on a disk mounted with discard)."""
        t0 = time.monotonic()
        self.stop_lab()
        if self.scratch and self.lab is None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        log(f"lab stopped and data removed in {time.monotonic() - t0:.0f} s")


def _find_key(doc, key):
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    if isinstance(doc, list):
        for v in doc:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def version(binary):
    try:
        return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError as e:
        return f"cannot run: {e}"


def table(rows):
    head = ("row", "what", "archctl", "reference", "ratio", "goal", "met?")
    body = [(str(r["row"]), r["what"], str(r["archctl"]), str(r["reference"]), str(r["ratio"]), str(r["goal"]),
             "yes" if r["met"] else "NO" if r["met"] is not None else "-") for r in rows]
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    fmt = " | ".join("{:<%d}" % w for w in widths)
    lines = [fmt.format(*head), "-+-".join("-" * w for w in widths)] + [fmt.format(*b) for b in body]
    notes = [f"  row {r['row']} ({r['what'][:40]}...): {r['note']}" for r in rows if r["note"]]
    return "\n".join(lines + ["", "notes:"] + notes)


def results_path():
    now = datetime.datetime.now()
    folder = os.path.join(ROOT, "bench", "results")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, now.strftime("%Y-%m-%d") + ".json")
    if os.path.exists(path):
        path = os.path.join(folder, now.strftime("%Y-%m-%d-%H%M") + ".json")
    return path


def parse_rows(text):
    rows = []
    for item in text.split(","):
        if not item.strip().isdigit() or int(item) not in ALL_ROWS:
            raise argparse.ArgumentTypeError(f"unknown row {item!r}: rows are {','.join(map(str, ALL_ROWS))}")
        rows.append(int(item))
    return sorted(set(rows))


def main():
    parser = argparse.ArgumentParser(description="issue 18's benchmark rows, side by side with the reference tools")
    parser.add_argument("--quick", action="store_true", help="small sizes and one run per row (a smoke run)")
    parser.add_argument("--only", type=parse_rows, default=list(DEFAULT_ROWS), metavar="ROW[,ROW]",
                        help="run only these rows (1-9; 8 is measured within 1 and 4; 9 runs only when named)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per timed row (default 3, --quick 1; row 9 once unless given)")
    args = parser.parse_args()
    args.repeat_given = args.repeat is not None
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    binary = os.environ.get("ARCHCTL_BIN", "")
    if not binary or not os.access(binary, os.X_OK):
        print(f"bench: error: ARCHCTL_BIN {binary!r} is not an executable; run bench/run.sh (it builds one)",
              file=sys.stderr)
        return 2
    binary = os.path.abspath(binary)
    os.environ["ARCHCTL_BIN"] = binary
    bench = Bench(args, binary)
    seconds = bench.run(args.only)
    print(table(bench.rows), flush=True)
    doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "archctl": binary,
           "version": version(binary), "quick": args.quick, "repeat": args.repeat, "rows_run": args.only,
           "host": {"nproc": os.cpu_count(), "kernel": platform.release(), "load_avg": os.getloadavg()},
           "seconds": round(seconds, 1), "rows": bench.rows,
           "failed": [{"row": r, "error": e} for r, e in bench.failed]}
    path = results_path()
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    log(f"rows measured in {seconds:.0f} s; JSON in {os.path.relpath(path, ROOT)}")
    bench.clean_up()
    return 1 if bench.failed else 0


if __name__ == "__main__":
    sys.exit(main())
