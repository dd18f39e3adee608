"""Shared steps for the job-engine suites: seeding a cache node with a real torrent, pairing a
route by hand, and reading what qBittorrent and the disks say afterwards."""

import json
import os
import random
import subprocess
import time

from lab.lab import Lab  # noqa: F401  (re-exported for the suites)

BIN = os.environ.get("ARCHCTL_BIN", "")


def write_payload(root, layout, seed=1):
    """layout: {relative path: size}. Random content, reproducible by seed."""
    rng = random.Random(seed)
    for rel, size in layout.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            left = size
            while left:
                n = min(left, 4 << 20)
                f.write(rng.randbytes(n))
                left -= n


def create_torrent(source, out, kind="hybrid", piece_length=None):
    argv = [BIN, "torrent", "create", source, "-o", out, "--kind", kind]
    if piece_length:
        argv += ["--piece-length", str(piece_length)]
    subprocess.run(argv, check=True, capture_output=True)
    shown = subprocess.run([BIN, "torrent", "show", out, "--json"], check=True, capture_output=True, text=True)
    return json.loads(shown.stdout)["torrent"]


def wait(predicate, timeout=60, what="condition", interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def seed_cache(lab, node, torrent_path, save_path, skip=()):
    """Add the torrent to `node`'s qBittorrent with its data in place, verified by a recheck."""
    qb = lab.qb(node)
    with open(torrent_path, "rb") as f:
        data = f.read()
    qb.add_torrent(data, save_path, paused=True)
    info = json.loads(subprocess.run([BIN, "torrent", "show", torrent_path, "--json"], check=True,
                                     capture_output=True, text=True).stdout)["torrent"]
    tid = info["qb_id"]
    wait(lambda: qb.info([tid]), what="torrent listed")
    if skip:
        qb.file_prio(tid, list(skip), 0)
    qb.recheck(tid)
    wait(lambda: (lambda t: t and t[0]["state"] in ("pausedUP",) and t[0]["progress"] == 1)(qb.info([tid])),
         what="cache recheck complete")
    return tid


def pair_route(lab, cache, archive, route_id="archctl-test-route"):
    """A hand-made route: one sendreceive folder shared by exactly the two devices."""
    a, b = lab.st(cache), lab.st(archive)
    na, nb = lab.node(cache), lab.node(archive)
    ida, idb = a.my_id(), b.my_id()
    a.request("PUT", f"config/devices/{idb}", {"deviceID": idb, "name": archive, "addresses": [nb["st"]["address"]]})
    b.request("PUT", f"config/devices/{ida}", {"deviceID": ida, "name": cache, "addresses": [na["st"]["address"]]})
    for st, node, me, peer in ((a, na, ida, idb), (b, nb, idb, ida)):
        path = os.path.join(node["sync_root"], route_id)
        st.request("PUT", f"config/folders/{route_id}", {
            "id": route_id, "label": route_id, "path": path, "type": "sendreceive",
            "devices": [{"deviceID": me}, {"deviceID": peer}], "ignorePerms": True,
            "fsWatcherEnabled": True, "fsWatcherDelayS": 1, "rescanIntervalS": 3600,
            "versioning": {"type": "", "params": {}}})
    wait(lambda: a.get("system/connections")["connections"].get(idb, {}).get("connected"), what="devices connected")
    wait(lambda: a.db_status(route_id)["state"] == "idle" and b.db_status(route_id)["state"] == "idle", what="route idle")
    return route_id


def tree(root):
    """Every path below root (files and dirs), relative, sorted; ignores Syncthing's folder marker
    and the route check's nonce files."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not rel.startswith(".stfolder") and not rel.startswith(".archctl-nonce-"):
                out.append(rel)
    return sorted(out)


def stat_of(path):
    st = os.stat(path)
    return (st.st_ino, st.st_mode, st.st_mtime_ns, st.st_size)


def archctl_paused_at(lab, point, *args, env=None, timeout=120):
    """Start archctl in the background with ARCHCTL_TEST_PAUSE_AT=<point>:<gate> and wait until it
    is paused there. Returns release(): opens the gate and returns (rc, stdout, stderr)."""
    gate = os.path.join(lab.dir, f"gate-{time.monotonic_ns()}")
    full_env = dict(os.environ)
    full_env.pop("ARCHCTL_CONFIG", None)
    full_env.setdefault("NO_COLOR", "1")
    full_env["XDG_CONFIG_HOME"] = os.path.join(lab.dir, "xdg-config")
    full_env.update(env or {})
    full_env["ARCHCTL_TEST_PAUSE_AT"] = f"{point}:{gate}"
    argv = [BIN, "--config", lab.config_path, "--state", lab.state_dir, *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=full_env)
    try:
        wait(lambda: os.path.exists(gate + ".paused") or proc.poll() is not None, timeout=timeout, what=f"pause at {point}")
    except AssertionError:
        proc.kill()
        proc.communicate()
        raise
    if proc.poll() is not None:
        out, err = proc.communicate()
        raise AssertionError(f"archctl ended (rc {proc.returncode}) before pausing at {point}: {err}{out}")

    def release(run_timeout=300):
        with open(gate, "w"):
            pass
        out, err = proc.communicate(timeout=run_timeout)
        return proc.returncode, out, err

    return release


def job_of(lab, tid):
    """The newest job id on resource `tid` (qB id)."""
    jobs = json.loads(lab.archctl("job", "list", "--json")[1])["jobs"]
    return [j for j in jobs if j["resource"] == tid][-1]["id"]


def set_location(lab, node, tid, location):
    """qBittorrent moves the torrent's files to `location` (torrents/setLocation)."""
    lab.qb(node).post("torrents/setLocation", hashes=tid, location=location)


def pause_folder(lab, node, folder, paused=True):
    """Pause or unpause a Syncthing folder on `node` through its REST config."""
    lab.st(node).request("PATCH", f"config/folders/{folder}", {"paused": paused})


def placement_snapshot(lab, node, tid, save_path):
    """What a placement is, for before/after comparisons: qB's selection, progress, run state,
    save path and tags, every file below the save path with size and content hash, and the part
    file (present, size, md5)."""
    import hashlib
    qb = lab.qb(node)
    t = qb.info([tid])
    if not t:
        return {"present": False}
    t = t[0]
    files = sorted((f["index"], f["priority"] > 0, round(f["progress"], 6)) for f in qb.files(tid))
    disk = {}
    for rel in tree(save_path):
        p = os.path.join(save_path, rel)
        if os.path.isfile(p) and not rel.startswith(".archctl"):
            with open(p, "rb") as f:
                disk[rel] = (os.path.getsize(p), hashlib.md5(f.read()).hexdigest())
    running = t["state"] not in ("pausedUP", "pausedDL", "stoppedUP", "stoppedDL")
    return {"present": True, "files": files, "running": running, "save_path": t["save_path"].rstrip("/"),
            "tags": t.get("tags", ""), "category": t.get("category", ""), "disk": disk}
