"""A collection of torrents on a real qBittorrent, for the batch and tier suites: seeded torrents
with payload, category and tags (seed_collection), and thousands of stopped payload-less torrents
for cost checks (add_stopped_torrents).

Facts of qBittorrent 4.5.2 these helpers rely on (checked against the lab):
- torrents/add takes `category` and `tags` (comma-separated); an unknown category is created by
  the add itself, but seed_collection creates each category first (torrents/createCategory; 409
  when it exists) so the category's save path is never guessed by qB.
- One torrents/add request may carry many `torrents` parts; every part is added.
- After add (paused) + recheck of a payload that is on disk: progress 1, state pausedUP,
  completion_on = the second the recheck finished (qB checks one torrent at a time, about a
  second apart here), last_activity = added_on, ratio 0, seeding_time = completion_on - added_on
  (the time spent checking). None of them can be set through the WebUI API; only completion_on
  can be split on purpose (seed in two calls some seconds apart), so the suites select by
  category, tag, name and size, which are deterministic.
"""

import hashlib
import os
import random
import time

import flows
from lab.lab import HttpError, _multipart


def _top_of(layout):
    tops = {rel.split("/")[0] for rel in layout}
    if len(tops) != 1:
        raise ValueError(f"a layout needs exactly one top entry, got {sorted(tops)}")
    return tops.pop()


def create_category(qb, category):
    """Create `category` on qB unless it exists (qB answers 409 then)."""
    try:
        qb.post("torrents/createCategory", category=category, savePath="")
    except HttpError as e:
        if e.status != 409:
            raise


def add_with(qb, data, save_path, category="", tags=()):
    """torrents/add of one .torrent, stopped, with category and tags."""
    fields = {"savepath": save_path, "autoTMM": "false", "paused": "true", "stopped": "true",
              "skip_checking": "false", "contentLayout": "Original", "useDownloadPath": "false"}
    if category:
        fields["category"] = category
    if tags:
        fields["tags"] = ",".join(tags)
    body, ctype = _multipart(fields, [("torrents", "c.torrent", data)])
    text = qb.call("POST", "torrents/add", body=body, content_type=ctype).decode().strip()
    if text == "Fails.":
        raise HttpError(200, text, "torrents/add")


def seed_collection(lab, node, spec, seed=1, timeout=120):
    """Seed every entry of `spec` on `node`: dicts {name, category, tags, layout {rel: size},
    kind ("hybrid" default, "v1", "v2")}. The payload goes below <qb_root>/<name> (layout paths
    relative to it, one top entry: a directory or a single file), the .torrent to
    <lab dir>/<name>.torrent (archctl torrent create, 32 KiB pieces); each is added stopped
    with its category and tags, then all are rechecked and awaited complete (pausedUP, progress 1).
    Returns the qB ids in spec order."""
    qb = lab.qb(node)
    for category in sorted({e.get("category", "") for e in spec} - {""}):
        create_category(qb, category)
    ids = []
    for i, entry in enumerate(spec):
        save = os.path.join(lab.node(node)["qb_root"], entry["name"])
        flows.write_payload(save, entry["layout"], seed=seed * 1000 + i)
        tfile = os.path.join(lab.dir, f"{entry['name']}.torrent")
        info = flows.create_torrent(os.path.join(save, _top_of(entry["layout"])), tfile,
                                    kind=entry.get("kind", "hybrid"), piece_length=32768)
        with open(tfile, "rb") as f:
            add_with(qb, f.read(), save, entry.get("category", ""), entry.get("tags", ()))
        ids.append(info["qb_id"])
    flows.wait(lambda: len(qb.info(ids)) == len(ids), timeout=timeout, what="collection listed")
    qb.post("torrents/recheck", hashes="|".join(ids))

    def complete():
        return all(t["state"] == "pausedUP" and t["progress"] == 1 for t in qb.info(ids))
    flows.wait(complete, timeout=timeout, what="collection rechecked complete")
    return ids


# --------------------------------------------------------------------------------------------
# Payload-less torrents

def bencode(value):
    if isinstance(value, int):
        return b"i%de" % value
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return b"%d:%s" % (len(value), value)
    if isinstance(value, list):
        return b"l" + b"".join(bencode(v) for v in value) + b"e"
    if isinstance(value, dict):
        items = sorted((k.encode() if isinstance(k, str) else k, v) for k, v in value.items())
        return b"d" + b"".join(bencode(k) + bencode(v) for k, v in items) + b"e"
    raise TypeError(f"cannot bencode {type(value).__name__}")


def stub_torrent(name, size, rng, piece_length=16384):
    """A single-file v1 .torrent of `size` bytes with random piece hashes (no payload exists).
    Returns (metainfo bytes, v1 info hash)."""
    pieces = -(-size // piece_length)
    info = {"name": name, "length": size, "piece length": piece_length, "pieces": rng.randbytes(20 * pieces)}
    return bencode({"info": info, "created by": "archctl-lab"}), hashlib.sha1(bencode(info)).hexdigest()


def add_stopped_torrents(lab, node, n, per_request=100, category="stubs", seed=7, timeout=300):
    """Add `n` distinct payload-less single-file torrents to `node`'s qB, stopped, in category
    `category`, save path <qb_root>/stubs, `per_request` torrents per torrents/add request.
    Returns when qB lists all of them: (ids, seconds taken)."""
    qb = lab.qb(node)
    rng = random.Random(seed)
    save = os.path.join(lab.node(node)["qb_root"], "stubs")
    os.makedirs(save, exist_ok=True)
    create_category(qb, category)
    started = time.monotonic()
    ids = []
    fields = {"savepath": save, "autoTMM": "false", "paused": "true", "stopped": "true", "skip_checking": "false",
              "contentLayout": "Original", "useDownloadPath": "false", "category": category}
    for first in range(0, n, per_request):
        files = []
        for i in range(first, min(n, first + per_request)):
            data, v1 = stub_torrent(f"stub-{seed}-{i:05d}.bin", 16384 * (1 + i % 7) + i, rng)
            files.append(("torrents", f"stub-{i}.torrent", data))
            ids.append(v1)
        body, ctype = _multipart(fields, files)
        text = qb.call("POST", "torrents/add", body=body, content_type=ctype, timeout=120).decode().strip()
        if text == "Fails.":
            raise HttpError(200, text, "torrents/add")
    flows.wait(lambda: len(qb.json("torrents/info", category=category)) >= n, timeout=timeout,
               what=f"{n} stopped torrents listed", interval=0.5)
    return ids, time.monotonic() - started


# --------------------------------------------------------------------------------------------
# Complete tiny torrents

def add_complete_torrents(lab, node, n, category="bulk", seed=11, per_request=100, timeout=300):
    """Add `n` distinct complete single-file v1 torrents to `node`'s qB, stopped, in category
    `category`: each payload (1,000-1,999 bytes, one piece) is written to <qb_root>/<category>
    with its real piece hash, and added with skip_checking, so qB lists it complete (pausedUP,
    progress 1) without a recheck. `per_request` torrents per torrents/add request. Returns when
    qB lists all of them complete: (ids, seconds taken)."""
    qb = lab.qb(node)
    rng = random.Random(seed)
    save = os.path.join(lab.node(node)["qb_root"], category)
    os.makedirs(save, exist_ok=True)
    create_category(qb, category)
    started = time.monotonic()
    ids = []
    fields = {"savepath": save, "autoTMM": "false", "paused": "true", "stopped": "true", "skip_checking": "true",
              "contentLayout": "Original", "useDownloadPath": "false", "category": category}
    for first in range(0, n, per_request):
        files = []
        for i in range(first, min(n, first + per_request)):
            name = f"{category}-{seed}-{i:05d}.bin"
            payload = rng.randbytes(1000 + i % 1000)
            with open(os.path.join(save, name), "wb") as f:
                f.write(payload)
            info = {"name": name, "length": len(payload), "piece length": 16384, "pieces": hashlib.sha1(payload).digest()}
            files.append(("torrents", f"{name}.torrent", bencode({"info": info, "created by": "archctl-lab"})))
            ids.append(hashlib.sha1(bencode(info)).hexdigest())
        body, ctype = _multipart(fields, files)
        text = qb.call("POST", "torrents/add", body=body, content_type=ctype, timeout=120).decode().strip()
        if text == "Fails.":
            raise HttpError(200, text, "torrents/add")

    def complete():
        listed = qb.json("torrents/info", category=category)
        return len(listed) >= n and all(t["progress"] == 1 for t in listed)
    flows.wait(complete, timeout=timeout, what=f"{n} complete torrents listed", interval=0.5)
    return ids, time.monotonic() - started
