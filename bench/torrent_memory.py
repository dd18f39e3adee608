#!/usr/bin/python3
"""Peak memory of `archctl torrent create / show / show --json / verify / verify --json` on trees
of many tiny files (a benchmark, never a test: nothing is asserted).

    python3 bench/torrent_memory.py ARCHCTL_BIN [N=100000[,1000000]] [--kind hybrid|v1|v2] [--keep DIR]

For each N it writes a tree of N files of about 100 bytes (1,000 per directory) in a temporary
directory (or DIR), creates its torrent, and runs each command under /usr/bin/time -f %M (peak
resident set in KB). The goal is at most 500 bytes per file plus 50 MB. Prints one line per
command (KB, bytes per file above 50 MB, seconds) and, as its LAST stdout line, one JSON object
{"N": {"create": {"kb": .., "bytes_per_file": .., "seconds": ..}, ...}}. A hybrid of 1,000,000
files with these names is larger than the 128 MiB a .torrent may be: create refuses it (exit 1,
TORRENT_CREATE, its peak is still measured) and the other commands are then left out; use
--kind v2 for it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

FLAT_MB = 50


def make_tree(root, n):
    per = 1000
    for i in range(n):
        d = os.path.join(root, "dir%04d" % (i // per))
        if i % per == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "file%07d.dat" % i), "wb") as f:
            f.write((b"%d " % i) * 12)


def timed(cmd):
    """(peak KB, seconds, rc) of one command; its output is thrown away."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%M %e", "-o", t.name] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        kb, seconds = t.read().split()[-2:]
    if p.returncode not in (0, 1):
        print(f"bench: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode()[-400:]}", file=sys.stderr)
    return int(kb), float(seconds), p.returncode


def measure(binary, n, kind, base):
    tree = os.path.join(base, f"t{n}")
    if not os.path.isdir(tree):
        make_tree(tree, n)
    torrent = os.path.join(base, f"t{n}-{kind}.torrent")
    rows = {
        "create": [binary, "torrent", "create", tree, "-o", torrent, "--kind", kind],
        "show": [binary, "torrent", "show", torrent],
        "show_json": [binary, "--json", "torrent", "show", torrent],
        "verify": [binary, "torrent", "verify", torrent, base],
        "verify_json": [binary, "--json", "torrent", "verify", torrent, base],
    }
    out = {}
    for name, cmd in rows.items():
        if name != "create" and out["create"]["rc"] != 0:
            print(f"{n:>9} {kind:<6} {name:<12} left out: create failed", flush=True)
            continue
        kb, seconds, rc = timed(cmd)
        per_file = max(0, kb * 1024 - FLAT_MB * 1024 * 1024) / n
        out[name] = {"kb": kb, "bytes_per_file": round(per_file), "seconds": seconds, "rc": rc}
        print(f"{n:>9} {kind:<6} {name:<12} {kb:>9} KB  {per_file:>6.0f} B/file  {seconds:>7.2f} s", flush=True)
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[1]
    sizes = [100000]
    kind = "hybrid"
    keep = None
    rest = argv[2:]
    while rest:
        arg = rest.pop(0)
        if arg == "--kind":
            kind = rest.pop(0)
        elif arg == "--keep":
            keep = rest.pop(0)
        else:
            sizes = [int(x) for x in arg.split(",")]
    base = keep or tempfile.mkdtemp(prefix="archctl-torrent-mem-")
    try:
        results = {str(n): measure(binary, n, kind, base) for n in sizes}
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
