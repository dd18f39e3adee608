"""The archctl demo, driven by examples/demo.sh: a lab of two real nodes, one archive job, then
the eviction of the cache copy it made safe."""

import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

os.environ["ARCHCTL_BIN"] = os.path.abspath(sys.argv[1])

import flows  # noqa: E402
from lab.lab import Lab  # noqa: E402


def say(text):
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def run(lab, *args, check=True):
    shown = " ".join(shlex.quote(a) for a in args)
    print(f"$ archctl {shown}", flush=True)
    rc, out, err = lab.archctl(*args, timeout=600)
    sys.stdout.write(out)
    sys.stdout.write(err)
    if check and rc != 0:
        raise SystemExit(f"archctl {shown} exited {rc}")
    return rc, out


def main():
    keep = os.environ.get("ARCHCTL_DEMO_KEEP") == "1"
    with Lab(nodes=[("seedbox", "cache"), ("nas", "archive")], keep=keep) as lab:
        say(f"lab: 2 qBittorrent + 2 Syncthing on 127.0.0.1, in {lab.dir}")
        # archctl reads each torrent from qBittorrent's BT_backup instead of exporting it.
        with open(lab.config_path, "w") as f:
            f.write(lab.config_text(bt_backup=("seedbox", "nas")))
        cache = lab.node("seedbox")
        save = os.path.join(cache["qb_root"], "linux")
        flows.write_payload(save, {"Some.Linux.ISO.Collection/disc1.iso": 24 * 1024 * 1024,
                                   "Some.Linux.ISO.Collection/disc2.iso": 8 * 1024 * 1024 + 123,
                                   "Some.Linux.ISO.Collection/README.txt": 2048,
                                   "Some.Linux.ISO.Collection/extras/checksums.txt": 300}, seed=7)
        torrent = os.path.join(lab.dir, "collection.torrent")
        info = flows.create_torrent(os.path.join(save, "Some.Linux.ISO.Collection"), torrent)
        tid = flows.seed_cache(lab, "seedbox", torrent, save)
        say(f"seedbox seeds '{info['name']}' ({info['kind']}, qB id {tid[:12]})")
        say("plan: what archive would do (read-only; there is no route yet)")
        rc, out = run(lab, "plan", "archive", tid[:12])
        token = out.strip().split("--confirm ")[-1].split()[0] if "--confirm " in out else None
        say("archive: route on demand, then stage → sync → merge → verify (qBittorrent's recheck commits) → cleanup")
        run(lab, "archive", tid[:12], *(["--confirm", token] if token else ["--yes"]))
        say("status")
        run(lab, "status", check=False)
        run(lab, "route", "list")
        run(lab, "job", "list")
        say("archive again: nothing to do")
        run(lab, "archive", tid[:12], "--yes")
        say("status of the resource: each node's copy, and how much of the cache copy the archive holds")
        run(lab, "status", tid[:12])
        say("plan evict: which archive node proves each file (read-only)")
        run(lab, "plan", "evict", tid[:12], "--from", "seedbox")
        say("evict: revalidate the proofs, remove the seedbox torrent without its data, unlink its own files")
        run(lab, "evict", tid[:12], "--from", "seedbox", "--yes")
        run(lab, "status", tid[:12])
        say("done; the lab is being torn down" + (" (kept: ARCHCTL_DEMO_KEEP=1)" if keep else ""))


if __name__ == "__main__":
    main()
