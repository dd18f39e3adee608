"""Shared support for the integration suites: the lab of a suite file (SuiteLab), seeding a
cache node with a real torrent, pairing a route by hand, and reading what qBittorrent and the
disks say afterwards."""

import hashlib
import json
import os
import random
import subprocess
import time
import unittest

from lab.lab import Lab

BIN = os.environ.get("ARCHCTL_BIN", "")


def stop_lab(lab):
    """Stop every process the lab started; fail if one still runs."""
    lab.__exit__(None, None, None)
    lab.assert_all_stopped()


def start_lab(nodes, extra_qb=0, routes=(), add_cleanup=unittest.addModuleCleanup):
    """Start a lab and register stop_lab for it with `add_cleanup` at once: unittest runs module
    and class cleanups after tearDownModule/tearDownClass and also when setUpModule/setUpClass
    fails part way, so a failed set-up still stops what it started. Then pair `routes`, each
    (cache, archive) or (cache, archive, route id). Returns (lab, route ids)."""
    lab = Lab(nodes=nodes, extra_qb=extra_qb)
    lab.__enter__()  # stops what it started if the start fails
    add_cleanup(stop_lab, lab)
    return lab, [pair_route(lab, *route) for route in routes]


def class_lab(cls, nodes, extra_qb=0, routes=()):
    """A lab of one test class, for a setUpClass; stopped by a class cleanup."""
    lab, _ = start_lab(nodes, extra_qb=extra_qb, routes=routes, add_cleanup=cls.addClassCleanup)
    return lab


class SuiteLab:
    """The one lab of a suite file, shared by all its test classes (labs are expensive):

        LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")],
                             routes=[("cache1", "archive1")], extra_qb=0)
        setUpModule = LAB.set_up

    set_up() starts the lab and pairs the routes (a suite with more to do in setUpModule calls
    it there); a module cleanup stops the lab and checks that nothing it started still runs.
    Once started, attributes are the Lab's (LAB.node, LAB.qb, LAB.dir, ...); LAB.route is the
    first route's id, LAB.routes all of them. LAB.archctl may be bound before the start."""

    def __init__(self, nodes, extra_qb=0, routes=()):
        self._nodes = [tuple(n) for n in nodes]
        self._extra_qb = extra_qb
        self._routes = [tuple(r) for r in routes]
        self._lab = None
        self.routes = []

    def set_up(self):
        if self._lab is not None:
            raise RuntimeError("the suite's lab is already started")
        self._lab, self.routes = start_lab(self._nodes, extra_qb=self._extra_qb, routes=self._routes)

    @property
    def route(self):
        return self.routes[0]

    def archctl(self, *args, **kw):
        return self.lab.archctl(*args, **kw)

    @property
    def lab(self):
        if self._lab is None:
            raise RuntimeError("the suite's lab is not started (setUpModule = LAB.set_up)")
        return self._lab

    def __getattr__(self, name):
        if name.startswith("__") or "_lab" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.lab, name)


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


def seed_resource(lab, name, layout, seed, kind="hybrid", skip=(), node="cache1"):
    """A new resource on `node`: the payload `layout` (its top directory "pay") written below
    <qb_root>/<name>, <lab dir>/<name>.torrent made from it with 32 KiB pieces, and seeded there.
    Returns (torrent info, qB id, save path, torrent file)."""
    save = os.path.join(lab.node(node)["qb_root"], name)
    write_payload(save, layout, seed=seed)
    tfile = os.path.join(lab.dir, f"{name}.torrent")
    info = create_torrent(os.path.join(save, "pay"), tfile, kind=kind, piece_length=32768)
    tid = seed_cache(lab, node, tfile, save, skip=skip)
    if tid != info["qb_id"]:
        raise AssertionError(f"{tfile}: qBittorrent id {tid} read from the metainfo, {info['qb_id']} by torrent show")
    return info, tid, save, tfile


def staged_path(job_dir, index):
    """Where a job's payload file `index` lies in its staging directory: p/<index // 1000>/<index>
    (the shards of lib/node/wire/job_layout.hpp)."""
    return os.path.join(job_dir, "p", str(index // 1000), str(index))


def staging_empty(lab, route, nodes=("cache1", "archive1")):
    """Wait (30 s at most) until the route's folder holds no staging on any of `nodes`."""
    for node in nodes:
        folder = os.path.join(lab.node(node)["sync_root"], route)
        try:
            wait(lambda: tree(folder) == [], timeout=30, what=f"staging removed on {node}")
        except AssertionError as e:
            raise AssertionError(f"{e}: left in {folder}: {tree(folder)}") from None


def _bencoded_end(data, at):
    """The offset just past the bencoded value that starts at data[at]."""
    kind = data[at:at + 1]
    if kind == b"i":
        return data.index(b"e", at) + 1
    if kind in (b"l", b"d"):
        at += 1
        while data[at:at + 1] != b"e":
            at = _bencoded_end(data, at)
        return at + 1
    colon = data.index(b":", at)
    return colon + 1 + int(data[at:colon])


def _bencoded_items(data, at):
    """(key, value start, value end) of each entry of the bencoded dictionary at data[at]."""
    at += 1
    while data[at:at + 1] != b"e":
        key_end = _bencoded_end(data, at)
        value_end = _bencoded_end(data, key_end)
        yield data[data.index(b":", at) + 1:key_end], key_end, value_end
        at = value_end


def qb_id_of(data):
    """qBittorrent's id of the metainfo `data` (docs/torrent-format.md "Identity"): the first 40
    hex of the v2 info hash when the info dictionary has "meta version" 2, else the v1 info
    hash; both hash the exact bytes of the info value. Read here from the bencoded bytes rather
    than by one more `archctl torrent show` for every seeded torrent."""
    for key, start, end in _bencoded_items(data, 0):
        if key == b"info":
            info = data[start:end]
            v2 = any(k == b"meta version" and info[s:e] == b"i2e" for k, s, e in _bencoded_items(info, 0))
            return hashlib.sha256(info).hexdigest()[:40] if v2 else hashlib.sha1(info).hexdigest()
    raise ValueError("the .torrent has no info dictionary")


def seed_cache(lab, node, torrent_path, save_path, skip=()):
    """Add the torrent to `node`'s qBittorrent with its data in place, verified by a recheck."""
    qb = lab.qb(node)
    with open(torrent_path, "rb") as f:
        data = f.read()
    qb.add_torrent(data, save_path, paused=True)
    tid = qb_id_of(data)
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
    """Every path below root (files and dirs), relative, sorted; ignores Syncthing's folder marker,
    its local ignore file (.stignore, where a stopped job's hold is written) and the route check's
    nonce files."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not rel.startswith(".stfolder") and rel != ".stignore" and not rel.startswith(".archctl-nonce-"):
                out.append(rel)
    return sorted(out)


def stat_of(path):
    st = os.stat(path)
    return (st.st_ino, st.st_mode, st.st_mtime_ns, st.st_size)


def archctl_paused_at(lab, point, *args, env=None, timeout=120):
    """Start archctl in the background with ARCHCTL_TEST_PAUSE_AT=<point>:<gate> and wait until it
    is paused there. Returns release(): opens the gate and returns (rc, stdout, stderr); with
    `signo`, that signal is sent to the paused run first (a Ctrl-C at that moment)."""
    gate = os.path.join(lab.dir, f"gate-{time.monotonic_ns()}")
    pause = {"ARCHCTL_TEST_PAUSE_AT": f"{point}:{gate}"}
    argv, full_env = lab.archctl_command(*args, env={**(env or {}), **pause})
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

    def release(run_timeout=300, signo=None):
        if signo is not None:
            proc.send_signal(signo)
            time.sleep(0.2)
        with open(gate, "w"):
            pass
        out, err = proc.communicate(timeout=run_timeout)
        return proc.returncode, out, err

    return release


def crash_points_in(err):
    """The crash points a run with ARCHCTL_TEST_CRASH_LIST=1 passed, in order, each once."""
    points = []
    for line in err.splitlines():
        if line.startswith("archctl: crash-point "):
            p = line.split(" ", 2)[2]
            if p not in points:
                points.append(p)
    return points


def job_of(lab, tid):
    """The newest job id on resource `tid` (qB id)."""
    jobs = json.loads(lab.archctl("job", "list", "--all", "--json")[1])["jobs"]
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
