#!/usr/bin/python3
"""An archive copy that will stay, on real qBittorrent + Syncthing nodes, driving the built binary.

archctl counts an archive copy only while nothing is set to take it away or has changed it
behind archctl's back:
- share limits: a torrent archctl adds to an archive node carries no ratio or seeding-time limit
  (ratio_limit and seeding_time_limit -1), so a global "remove torrent and its files" or "pause"
  limit on the archive's qBittorrent never removes or stops it; `plan archive` says when such a
  global limit is set there; a node configured `share_limits = "global"` keeps the global limits
  (-2) and its copy does not count for evict while a limit that removes is enabled;
- shared files: an archive copy whose files another torrent on that node also references does not
  count for evict (`plan evict` and `status RES` name the other torrent), unless
  `[evict] count_shared_copies = true`;
- in-place rewrites: a file rewritten in place with its mtime restored has a new ctime; `plan
  evict` names the ctime and evict refuses when the bytes differ; when only the inode's metadata
  changed, evict piece-checks that file on its own (the "revalidated" event's "pieces_checked")
  and goes on;
- archctl's own changes (the hard links of an unarchive's staging) keep the proof: no ctime
  complaint and no piece check."""

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
setUpModule = LAB.set_up
archctl = LAB.archctl

LAYOUT = {"pay/a.bin": 120000, "pay/b.bin": 200000, "pay/sub/c.dat": 70000, "pay/d.txt": 12}
COUNTER = [0]

# qBittorrent's global share-limit preferences (app/preferences); max_ratio_act: 0 pause,
# 1 remove the torrent, 2 super seeding, 3 remove the torrent and its files.
LIMIT_KEYS = ("max_ratio_enabled", "max_ratio", "max_seeding_time_enabled", "max_seeding_time", "max_ratio_act")
NO_LIMITS = {"max_ratio_enabled": False, "max_ratio": -1, "max_seeding_time_enabled": False, "max_seeding_time": -1,
             "max_ratio_act": 0}
STOPPED = ("pausedUP", "stoppedUP")


def new_resource(prefix, kind="hybrid", layout=LAYOUT):
    """A new torrent seeding on cache1 under a name no other test uses."""
    COUNTER[0] += 1
    name = f"ws-{prefix}-{COUNTER[0]}"
    seed = 7100 + COUNTER[0]
    info, tid, save, tfile = flows.seed_resource(LAB, name, layout, seed, kind=kind)
    return tid, name, save, seed


def digests(root):
    """Every file below root: relative path -> (size, sha256)."""
    out = {}
    for rel in flows.tree(root):
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[rel] = (os.path.getsize(path), hashlib.sha256(f.read()).hexdigest())
    return out


def archive_save(name):
    return os.path.join(LAB.node("archive1")["qb_root"], name)


def archive(tc, tid, *extra):
    rc, out, err = archctl("archive", tid[:12], "--from", "cache1", "--to", "archive1", "--yes", *extra, timeout=300)
    tc.assertEqual(rc, 0, f"archive {tid[:12]}: {err}{out}")


def evict(tid, *extra):
    return archctl("evict", tid[:12], "--from", "cache1", "--yes", *extra, timeout=300)


def text_of(*args):
    """stdout and stderr of one archctl run, together."""
    rc, out, err = archctl(*args, timeout=120)
    return out + err


def evict_job(tid):
    jobs = json.loads(archctl("job", "list", "--all", "--json")[1])["jobs"]
    found = [j for j in jobs if j["resource"] == tid and j.get("op") == "evict"]
    return found[-1]["id"] if found else None


def events_of(job):
    rc, out, err = archctl("job", "show", job, "--json")
    assert rc == 0, err + out
    return json.loads(out)["events"]


def archive_torrent(tid):
    return LAB.qb("archive1").torrent(tid)


@contextlib.contextmanager
def archive_limits(**prefs):
    """Global share-limit preferences on archive1's qBittorrent for the duration, then the old
    values back."""
    qb = LAB.qb("archive1")
    before = qb.json("app/preferences")
    old = {k: before[k] for k in LIMIT_KEYS if k in before}
    wanted = {**NO_LIMITS, **prefs}
    try:
        qb.post("app/setPreferences", json=json.dumps(wanted))
        now = qb.json("app/preferences")
        for k, v in wanted.items():
            if k in now and isinstance(v, bool):
                assert now[k] == v, f"archive1 preference {k} is {now[k]}, want {v}"
        yield
    finally:
        qb.post("app/setPreferences", json=json.dumps(old))


@contextlib.contextmanager
def state_config(text):
    """<state dir>/config.toml holding `text` for the duration (the layer above the lab's config),
    then what was there before."""
    path = os.path.join(LAB.state_dir, "config.toml")
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    try:
        with open(path, "w") as f:
            f.write(text)
        yield
    finally:
        if old is None:
            if os.path.exists(path):
                os.unlink(path)
        else:
            with open(path, "w") as f:
                f.write(old)


def victim_file(tid):
    """(qB index, path on archive1's disk) of a file that is not the first and has 64 KiB or more."""
    save_path = archive_torrent(tid)["save_path"].rstrip("/")
    files = sorted(LAB.qb("archive1").files(tid), key=lambda f: f["index"])
    for f in files:
        if f["index"] != 0 and f["size"] >= 65536:
            return f["index"], os.path.join(save_path, f["name"])
    raise AssertionError(f"no file after the first with 64 KiB or more: {files}")


class InPlaceRewrite(unittest.TestCase):
    """An archive file changed in place behind archctl's back, its mtime restored: the ctime
    tells. Other bytes: refused. The same bytes: evict checks that file's pieces on its own."""

    def rewrite(self, kind):
        tid, name, save, _ = new_resource(f"rw-{kind}", kind=kind)
        archive(self, tid)
        before = digests(save)
        index, path = victim_file(tid)
        st = os.stat(path)
        middle = st.st_size // 2
        with open(path, "r+b") as f:
            f.seek(middle)
            old = f.read(4)
            f.seek(middle)
            f.write(bytes(b ^ 0xFF for b in old))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        now = os.stat(path)
        self.assertEqual((now.st_size, now.st_ino, now.st_mtime_ns), (st.st_size, st.st_ino, st.st_mtime_ns))
        self.assertNotEqual(now.st_ctime_ns, st.st_ctime_ns, "the rewrite must change the ctime")

        text = text_of("plan", "evict", tid[:12], "--from", "cache1")
        self.assertIn("ctime", text, f"plan evict must name the changed ctime:\n{text}")
        rc, out, err = evict(tid)
        self.assertEqual(rc, 1, f"evict over an archive file rewritten in place must be refused:\n{err}{out}")
        self.assertEqual(digests(save), before, "every cache file must stay byte-identical")

    def metadata_only(self, kind):
        tid, name, save, _ = new_resource(f"meta-{kind}", kind=kind)
        archive(self, tid)
        index, path = victim_file(tid)
        st = os.stat(path)
        os.chmod(path, 0o600)
        os.chmod(path, stat.S_IMODE(st.st_mode))
        now = os.stat(path)
        self.assertEqual((now.st_size, now.st_ino, now.st_mtime_ns), (st.st_size, st.st_ino, st.st_mtime_ns))
        self.assertNotEqual(now.st_ctime_ns, st.st_ctime_ns, "chmod must change the ctime")

        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, f"evict without --verify-archive: {err}{out}")
        job = evict_job(tid)
        self.assertIsNotNone(job, "the evict job is listed")
        revalidated = [e for e in events_of(job) if e["type"] == "revalidated"]
        self.assertTrue(revalidated, "the evict job has a revalidated event")
        checked = [e.get("pieces_checked") for e in revalidated]
        self.assertIn({"archive1": str(index)}, checked,
                      f"a revalidated event must piece-check exactly file {index} on archive1: {checked}")

    def test_a_rewrite_v1(self):
        self.rewrite("v1")

    def test_b_rewrite_hybrid(self):
        self.rewrite("hybrid")

    def test_c_metadata_only_v1(self):
        self.metadata_only("v1")

    def test_d_metadata_only_hybrid(self):
        self.metadata_only("hybrid")


class OwnChanges(unittest.TestCase):
    """An unarchive's staging hard-links the archive files (their ctime changes): archctl's own
    change keeps the proof."""

    def test_unarchive_staging_keeps_the_proof(self):
        tid, name, save, _ = new_resource("own")
        archive(self, tid)
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, f"first evict: {err}{out}")
        rc, out, err = archctl("unarchive", tid[:12], "--from", "archive1", "--to", "cache1", "--yes", timeout=300)
        self.assertEqual(rc, 0, f"unarchive: {err}{out}")

        text = text_of("plan", "evict", tid[:12], "--from", "cache1")
        self.assertNotIn("ctime", text, f"archctl's own hard links must not count as a change:\n{text}")
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, f"second evict: {err}{out}")
        job = evict_job(tid)
        self.assertIsNotNone(job, "the evict job is listed")
        checked = [e.get("pieces_checked") for e in events_of(job) if e["type"] == "revalidated"]
        self.assertFalse(any(checked), f"no piece check is needed after archctl's own change: {checked}")


class ShareLimits(unittest.TestCase):
    """Global share limits on the archive's qBittorrent never remove or stop a copy archctl
    placed there; a node that opts into them gets no eviction while a limit that removes is set."""

    def test_a_remove_with_files_limit_does_not_take_the_archive_copy(self):
        kinds = ("v1", "v2", "hybrid")
        with archive_limits(max_ratio_enabled=True, max_ratio=0, max_ratio_act=3):
            placed = []
            for kind in kinds:
                tid, name, save, _ = new_resource(f"ratio-{kind}", kind=kind)
                original = digests(save)
                archive(self, tid)
                t = archive_torrent(tid)
                self.assertIsNotNone(t, f"{kind}: the archive torrent is listed after archive")
                self.assertEqual(t["ratio_limit"], -1, f"{kind}: archive torrent ratio_limit")
                self.assertEqual(t["seeding_time_limit"], -1, f"{kind}: archive torrent seeding_time_limit")
                placed.append((kind, tid, name, original))
            for kind, tid, name, original in placed:
                rc, out, err = evict(tid)
                self.assertEqual(rc, 0, f"{kind}: evict: {err}{out}")
            time.sleep(30)
            for kind, tid, name, original in placed:
                t = archive_torrent(tid)
                self.assertIsNotNone(t, f"{kind}: the archive torrent is still listed 30 s after evict")
                self.assertEqual(t["progress"], 1, f"{kind}: archive torrent progress")
                self.assertEqual(digests(archive_save(name)), original, f"{kind}: the archive files keep the original bytes")

    def test_b_pause_on_seeding_time_does_not_stop_the_archive_copy(self):
        with archive_limits(max_seeding_time_enabled=True, max_seeding_time=0, max_ratio_act=0):
            tid, name, save, _ = new_resource("seedtime")
            archive(self, tid)
            time.sleep(15)
            t = archive_torrent(tid)
            self.assertIsNotNone(t, "the archive torrent is listed")
            self.assertNotIn(t["state"], STOPPED, "a global seeding-time limit must not stop the archive copy")

    def test_c_plan_archive_names_a_global_share_limit(self):
        tid, name, save, _ = new_resource("plan")
        with archive_limits(max_ratio_enabled=True, max_ratio=1000, max_ratio_act=0):
            text = text_of("plan", "archive", tid[:12], "--from", "cache1", "--to", "archive1")
        self.assertIn("share limit", text.lower(), f"plan archive must mention archive1's share limit:\n{text}")

    def test_d_global_share_limits_opt_out_blocks_evict(self):
        with state_config('[nodes.archive1]\nshare_limits = "global"\n'), \
                archive_limits(max_ratio_enabled=True, max_ratio=1000, max_ratio_act=3):
            tid, name, save, _ = new_resource("optout")
            archive(self, tid)
            t = archive_torrent(tid)
            self.assertIsNotNone(t, "the archive torrent is listed")
            self.assertEqual(t["ratio_limit"], -2, "share_limits = \"global\" keeps the global ratio limit")
            before = digests(save)
            text = text_of("plan", "evict", tid[:12], "--from", "cache1")
            self.assertIn("share limit", text.lower(), f"plan evict must mention archive1's share limit:\n{text}")
            rc, out, err = evict(tid)
            self.assertEqual(rc, 1, f"evict while a removing share limit applies must be refused:\n{err}{out}")
            self.assertEqual(digests(save), before, "every cache file must stay byte-identical")


    def test_e_tier_under_a_remove_with_files_limit_leaves_a_copy(self):
        # The nightly policy archives and evicts; the archive's global limit removes torrents
        # with their files at ratio 0. The copy tier made must still be there afterwards.
        qb = LAB.qb("cache1")
        tid, name, save, _ = new_resource("tier")
        original = digests(save)
        qb.post("torrents/createCategory", category="tier-stay", savePath="")
        qb.post("torrents/setCategory", hashes=tid, category="tier-stay")
        policy = "\n".join(["[tier.stay]", 'cache = "cache1"', 'archive = ["archive1"]', 'keep_free = "1B"',
                            'archive_when = { categories = ["tier-stay"] }', 'evict = "always"', ""])
        with state_config(policy), archive_limits(max_ratio_enabled=True, max_ratio=0, max_ratio_act=3):
            rc, out, err = LAB.archctl("tier", "stay", "--yes", timeout=600)
            self.assertEqual(rc, 0, f"tier: {err}{out}")
            self.assertIsNone(qb.torrent(tid), f"tier evicted the cache copy: {err}")
            time.sleep(30)
            t = archive_torrent(tid)
            self.assertIsNotNone(t, "the archive torrent tier placed is still listed 30 s later")
            self.assertEqual(t["progress"], 1, "archive torrent progress")
            self.assertEqual(digests(archive_save(name)), original, "the archive files keep the original bytes")


class SharedFiles(unittest.TestCase):
    """The archive copy's files are also another torrent's on the archive node (a v1 torrent of
    the same payload): that torrent may remove them, so they do not count unless configured."""

    def test_archive_copy_shared_with_another_torrent(self):
        COUNTER[0] += 1
        name = f"ws-shared-{COUNTER[0]}"
        seed = 7100 + COUNTER[0]
        dest = archive_save(name)
        flows.write_payload(dest, LAYOUT, seed=seed)
        v1_file = os.path.join(LAB.dir, f"{name}-v1.torrent")
        flows.create_torrent(os.path.join(dest, "pay"), v1_file, kind="v1", piece_length=32768)
        other = flows.seed_cache(LAB, "archive1", v1_file, dest)
        _, tid, save, _ = flows.seed_resource(LAB, name, LAYOUT, seed, kind="hybrid")
        self.assertNotEqual(other, tid)

        rc, out, err = archctl("archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 0, f"archive over the files of another torrent: {err}{out}")
        before = digests(save)

        text = text_of("plan", "evict", tid[:12], "--from", "cache1")
        self.assertIn("shared with torrent", text, f"plan evict must name the other torrent:\n{text}")
        rc, out, err = evict(tid)
        self.assertEqual(rc, 1, f"evict over shared archive files must be refused:\n{err}{out}")
        self.assertEqual(digests(save), before, "every cache file must stay byte-identical")
        text = text_of("status", tid[:12])
        self.assertIn("shared with", text, f"status must say the archive copy is shared:\n{text}")

        with state_config("[evict]\ncount_shared_copies = true\n"):
            rc, out, err = evict(tid)
        self.assertEqual(rc, 0, f"evict with count_shared_copies = true: {err}{out}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
