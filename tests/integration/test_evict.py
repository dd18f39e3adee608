#!/usr/bin/python3
"""evict end to end on real qBittorrent + Syncthing nodes, driving the built binary: coverage on
one and on two archive nodes, refusal with the missing files, files other torrents reference and
unknown files, proof drift between plan and deletion, a crash at every crash point, the piece
check of --verify-archive and the hold tag."""

import glob
import hashlib
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive"), ("archive2", "archive")],
                     routes=[("cache1", "archive1", "archctl-test-r1"), ("cache1", "archive2", "archctl-test-r2")])
setUpModule = LAB.set_up
archctl = LAB.archctl
LAYOUT = {"pay/a.bin": 300000, "pay/sub/b.bin": 70001, "pay/sub/dir/c.dat": 40000, "pay/d.txt": 12, "pay/empty.bin": 0}
COUNTER = [0]
INFO = {}
HOLD = "archctl-hold"


def new_resource(kind="hybrid", layout=LAYOUT, skip=()):
    COUNTER[0] += 1
    name = f"ev-{COUNTER[0]}"
    info, tid, save, _ = flows.seed_resource(LAB, name, layout, 500 + COUNTER[0], kind=kind, skip=skip)
    INFO[tid] = info
    return tid, name, save


def partfile_header(pieces, piece_size):
    """A libtorrent part file header with no slot in use (docs/torrent-format.md "Part files")."""
    data = pieces.to_bytes(4, "big") + piece_size.to_bytes(4, "big") + b"\xff\xff\xff\xff" * pieces
    return data + b"\0" * (-len(data) % 1024)


def archive(tid, to="archive1", files=None):
    args = ["archive", tid[:12], "--from", "cache1", "--to", to, "--yes"]
    if files:
        args += ["--files", files]
    rc, out, err = archctl(*args, timeout=300)
    assert rc == 0, f"archive {tid[:12]} to {to}: {err}"


def listing(root):
    """Full tree with inode, size and mtime of every file: the before/after comparison."""
    out = {}
    for rel in flows.tree(root):
        path = os.path.join(root, rel)
        st = os.lstat(path)
        out[rel] = ("dir", 0, 0) if os.path.isdir(path) else ("file", st.st_ino, st.st_size)
    return out


def content(root):
    """Every file below root with inode, size, mtime and content hash: byte-identical or not."""
    out = {}
    for rel in flows.tree(root):
        path = os.path.join(root, rel)
        if os.path.isdir(path):
            out[rel] = "dir"
            continue
        st = os.lstat(path)
        with open(path, "rb") as f:
            out[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def archive_state(tid, node="archive1"):
    aq = LAB.qb(node)
    t = aq.info([tid])
    files = sorted((f["index"], f["name"], f["progress"], f["priority"]) for f in aq.files(tid)) if t else []
    return {"present": bool(t), "files": files, "tags": t[0].get("tags", "") if t else ""}


def evict(tid, *extra, env=None):
    return archctl("evict", tid[:12], "--from", "cache1", "--yes", "--json", *extra, env=env, timeout=300)


def events_of(job):
    rc, out, err = archctl("job", "show", job, "--json")
    assert rc == 0, err
    return json.loads(out)["events"]


def evict_job(tid):
    jobs = json.loads(archctl("job", "list", "--all", "--json")[1])["jobs"]
    found = [j for j in jobs if j["resource"] == tid and j["op"] == "evict"]
    return found[-1] if found else None


def owned_paths(layout=LAYOUT):
    """Every file and directory the torrent's manifest owns below the save path."""
    paths = set(layout)
    for rel in layout:
        d = os.path.dirname(rel)
        while d:
            paths.add(d)
            d = os.path.dirname(d)
    return paths


class Evict(unittest.TestCase):
    def assert_evicted(self, tid, name, before_cache, before_archives, nodes=("archive1",)):
        cache_root = LAB.node("cache1")["qb_root"]
        self.assertEqual(LAB.qb("cache1").info([tid]), [], "the cache torrent must be gone")
        after = listing(cache_root)
        expected = {k: v for k, v in before_cache.items() if not (k.startswith(name + "/") and k[len(name) + 1:] in owned_paths())}
        self.assertEqual(after, expected, "only manifest-owned files and directories may go")
        self.assertTrue(os.path.isdir(os.path.join(cache_root, name)), "the save path itself is not owned")
        for node in nodes:
            self.assertEqual(listing(LAB.node(node)["qb_root"]), before_archives[node], f"{node} must be untouched")
            st = archive_state(tid, node)
            self.assertTrue(st["present"], f"{node} must keep its placement")
            self.assertTrue(all(f[2] == 1 for f in st["files"] if f[3] > 0), st)
            self.assertTrue(any(f[3] > 0 for f in st["files"]), st)
            self.assertNotIn(HOLD, st["tags"])

    def snapshot(self, nodes=("archive1",)):
        return listing(LAB.node("cache1")["qb_root"]), {n: listing(LAB.node(n)["qb_root"]) for n in nodes}

    def test_a_evict_after_archive_then_rerun_is_a_no_op(self):
        tid, name, save = new_resource()
        archive(tid)
        before_cache, before_archives = self.snapshot()

        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--json")
        self.assertEqual(rc, 0, err)
        plan = json.loads(out)
        self.assertTrue(plan["coverage"]["complete"])
        self.assertEqual([f["nodes"] for f in plan["coverage"]["files"]], [["archive1"]] * len(LAYOUT))
        self.assertTrue(plan["token"])
        rc, text, err = archctl("plan", "evict", tid[:12], "--from", "cache1")
        self.assertEqual(rc, 0, err)
        self.assertIn("archive copies", text + err)
        self.assertIn("pay/sub/dir/c.dat", text + err)

        rc, out, err = archctl("evict", tid[:12], "--from", "cache1", "--confirm", plan["token"], "--json", timeout=300)
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        self.assertEqual(doc["job"]["outcome"], "done")
        self.assertEqual(doc["evicted"]["files_removed"], len(LAYOUT))
        self.assert_evicted(tid, name, before_cache, before_archives)

        job = evict_job(tid)
        self.assertIsNotNone(job)
        self.assertEqual(job["state"], "done")
        types = [e["type"] for e in events_of(job["id"])]
        for t in ("created", "held", "revalidated", "removed", "snapshot", "unlinked", "partfile", "released", "done"):
            self.assertIn(t, types)
        # Live evidence right before each deletion: the removal and the (one) batch of unlinks.
        self.assertEqual(types.count("revalidated"), 2, types)
        self.assertLess(types.index("revalidated"), types.index("removed"))
        self.assertLess(len(types) - 1 - types[::-1].index("revalidated"), types.index("unlinked"))
        rc, text, err = archctl("job", "show", job["id"])
        self.assertIn("revalidated live right before deleting: archive1 still holds", text)
        # File indices are labelled as indices ("holds 0" read as a count of none).
        self.assertRegex(text, r"proved: files? #\d")
        self.assertRegex(text, r"archive1 holds files? #\d[^ ]* \(generation \d+\)")
        self.assertRegex(text, r"archive1 still holds files? #\d")
        self.assertIn("data deletion disabled", text)
        rc, text, err = archctl("job", "list")
        row = [line for line in text.splitlines() if line.startswith(job["id"])][0]
        self.assertIn("evict", row)
        self.assertIn("cache1", row)
        self.assertNotIn("→", row)

        settled = listing(LAB.node("cache1")["qb_root"])
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err)
        self.assertTrue(json.loads(out)["nothing_to_do"])
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), settled)

    def test_b_coverage_split_over_two_archive_nodes(self):
        tid, name, save = new_resource()
        archive(tid, "archive1", "0-2")
        archive(tid, "archive2", "3-4")
        before_cache, before_archives = self.snapshot(("archive1", "archive2"))
        rc, out, err = archctl("plan", "evict", tid[:12], "--json")
        self.assertEqual(rc, 0, err)
        cov = json.loads(out)["coverage"]
        self.assertEqual(sorted(p["node"] for p in cov["proofs"]), ["archive1", "archive2"])
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assert_evicted(tid, name, before_cache, before_archives, ("archive1", "archive2"))

    def test_c_one_file_missing_is_refused_listing_it(self):
        tid, name, save = new_resource()
        archive(tid, "archive1", "0-3")
        before_cache, before_archives = self.snapshot()
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--json")
        self.assertEqual(rc, 1, err)
        doc = json.loads(out)
        self.assertFalse(doc["ok"])
        missing = doc["coverage"]["missing"]
        self.assertEqual([m["index"] for m in missing], [4])
        rc, out, err = evict(tid)
        self.assertEqual(rc, 1, err)
        self.assertIn("1 of 5 files have no archive copy", err)
        self.assertIn(missing[0]["path"], err)
        self.assertIn("--files 4", err)
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "nothing may be removed")
        self.assertEqual(self.snapshot(), (before_cache, before_archives))
        self.assertIsNone(evict_job(tid), "a refused eviction records no job")

    def test_d_referenced_file_and_unknown_file_survive(self):
        tid, name, save = new_resource()
        archive(tid)
        # Another torrent on the cache node whose single file is one of ours.
        shared = os.path.join(save, "pay/sub/b.bin")
        tfile = os.path.join(LAB.dir, f"{name}-shared.torrent")
        flows.create_torrent(shared, tfile, kind="v1", piece_length=32768)
        other = flows.seed_cache(LAB, "cache1", tfile, os.path.join(save, "pay/sub"))
        unknown = os.path.join(save, "pay/sub/dir/notes.txt")
        with open(unknown, "w") as f:
            f.write("mine\n")
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertTrue(os.path.isfile(shared), "a file another torrent references must survive")
        self.assertTrue(os.path.isfile(unknown), "an unknown file must survive")
        for rel in ("pay/a.bin", "pay/sub/dir/c.dat", "pay/d.txt", "pay/empty.bin"):
            self.assertFalse(os.path.exists(os.path.join(save, rel)), rel)
        self.assertTrue(os.path.isdir(os.path.join(save, "pay/sub/dir")))
        kept = json.loads(out)["evicted"]["kept"]
        reasons = {k["path"]: k["reason"] for k in kept}
        self.assertEqual(reasons.get(shared), "referenced by another torrent")
        self.assertIn(os.path.join(save, "pay/sub/dir"), reasons)
        self.assertEqual(len(LAB.qb("cache1").info([other])), 1)
        self.assertEqual(LAB.qb("cache1").torrent(other)["progress"], 1)
        LAB.qb("cache1").delete(other)

    def test_e_proof_drift_between_plan_and_deletion_is_refused(self):
        tid, name, save = new_resource()
        archive(tid)
        before_cache, _ = self.snapshot()
        rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_AT": "evict.held"})
        self.assertEqual(rc, 137, err)
        self.assertIn(HOLD, archive_state(tid)["tags"], "the hold tag marks the archive torrent while in flight")
        LAB.qb("archive1").file_prio(tid, [1], 0)
        flows.wait(lambda: any(f["index"] == 1 and f["priority"] == 0 for f in LAB.qb("archive1").files(tid)),
                   what="archive file deselected")
        rc, out, err = archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("PROOF_DRIFT", out)
        self.assertIn("file 1 'pay/d.txt' on 'archive1': skipped in qBittorrent", out)
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "the cache torrent must stay")
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), before_cache, "nothing may be deleted")
        self.assertNotIn(HOLD, archive_state(tid)["tags"], "a refused eviction drops its hold")
        self.assertEqual(evict_job(tid)["state"], "failed")
        LAB.qb("archive1").file_prio(tid, [1], 1)

    def test_f_verify_archive_refuses_a_corrupted_archive_byte(self):
        tid, name, save = new_resource()
        archive(tid)
        before_cache, _ = self.snapshot()
        victim = os.path.join(LAB.node("archive1")["qb_root"], name, "pay/a.bin")
        with open(victim, "r+b") as f:
            f.seek(123456)
            b = f.read(1)
            f.seek(123456)
            f.write(bytes([b[0] ^ 0x01]))
        rc, out, err = evict(tid, "--verify-archive")
        self.assertEqual(rc, 1, err + out)
        self.assertIn("PROOF_FAILED", out)
        self.assertIn("pay/a.bin", out)
        # Only the file that failed is listed, with what failed; verified files are not.
        self.assertIn("did not verify 1 file(s): ", out)
        self.assertRegex(out, r"'pay/a\.bin' \(corrupt: piece\(s\) [0-9]+ failed their hash\)")
        self.assertNotIn("(complete)", out + err)
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1)
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), before_cache)

    def test_g_verify_archive_on_a_clean_archive_evicts(self):
        tid, name, save = new_resource(kind="v1")
        archive(tid)
        before_cache, before_archives = self.snapshot()
        rc, out, err = evict(tid, "--verify-archive")
        self.assertEqual(rc, 0, err + out)
        self.assert_evicted(tid, name, before_cache, before_archives)
        events = events_of(evict_job(tid)["id"])
        reval = [e for e in events if e["type"] == "revalidated"][0]
        self.assertTrue(all(p["pieces"]["verified"] for p in reval["proofs"]))

    def test_h_archive_placement_not_committed_by_archctl_counts_by_a_piece_check(self):
        # An archive copy qBittorrent verified on its own, never through archctl: no stamp of
        # archctl's proves it, so evict checks its pieces itself before deleting anything.
        tid, name, save = new_resource()
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        dest = os.path.join(LAB.node("archive2")["qb_root"], name)
        flows.write_payload(dest, LAYOUT, seed=500 + COUNTER[0])
        flows.seed_cache(LAB, "archive2", tfile, dest)
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1")
        self.assertEqual(rc, 0, err)
        self.assertIn("no recheck committed by archctl; evict checks its pieces", out + err)
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(LAB.qb("cache1").info([tid]), [])
        reval = [e for e in events_of(evict_job(tid)["id"]) if e["type"] == "revalidated"][0]
        self.assertEqual(reval["pieces_checked"], {"archive2": "0-1,3-4"})  # the empty file needs no check

    def test_h2_an_archive_copy_that_is_the_same_file_is_refused(self):
        # The "archive copy" is the cache's own files (hard links: same device and inode), as two
        # nodes configured over one payload tree would see them: no second copy exists.
        tid, name, save = new_resource()
        tfile = os.path.join(LAB.dir, f"{name}.torrent")
        dest = os.path.join(LAB.node("archive2")["qb_root"], name)
        for rel in LAYOUT:
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            os.link(os.path.join(save, rel), os.path.join(dest, rel))
        flows.seed_cache(LAB, "archive2", tfile, dest)
        before = self.snapshot(("archive2",))
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--verify-archive", "--json")
        self.assertEqual(rc, 1, err + out)
        self.assertEqual(json.loads(out)["error"]["code"], "SHARED_STORAGE")
        rc, out, err = evict(tid, "--verify-archive")
        self.assertEqual(rc, 1, err + out)
        self.assertEqual(json.loads(out)["error"]["code"], "SHARED_STORAGE")
        self.assertIn("is the same file as the archive copy on 'archive2'", out)
        self.assertEqual(self.snapshot(("archive2",)), before, "nothing may be deleted")
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "the cache torrent stays")
        self.assertIsNone(evict_job(tid), "no job is created")

    def partfile_after_crash(self, content):
        tid, name, save = new_resource(kind="v1")
        archive(tid)
        rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_AT": "evict.step.unlink"})
        self.assertEqual(rc, 137, err)
        part = os.path.join(save, f".{tid}.parts")
        self.assertFalse(os.path.exists(part), "qBittorrent removes the part file of a torrent it deletes")
        with open(part, "wb") as f:
            f.write(content(INFO[tid]))
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        return part, json.loads(out)["evicted"]["partfile"]

    def test_i_a_part_file_whose_header_matches_is_removed(self):
        part, outcome = self.partfile_after_crash(lambda i: partfile_header(i["piece_count"], i["piece_length"]))
        self.assertEqual(outcome, "removed")
        self.assertFalse(os.path.exists(part))

    def test_j_a_part_file_that_is_not_this_torrents_is_kept(self):
        part, outcome = self.partfile_after_crash(lambda i: partfile_header(i["piece_count"] + 1, i["piece_length"]))
        self.assertTrue(outcome.startswith("kept: its header does not match this torrent"), outcome)
        self.assertTrue(os.path.exists(part))

    def test_k_drift_after_the_cache_torrent_is_removed_keeps_every_file(self):
        tid, name, save = new_resource()
        archive(tid)
        before_cache, before_archives = self.snapshot()
        rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_AT": "evict.step.remove"})
        self.assertEqual(rc, 137, err)
        self.assertEqual(LAB.qb("cache1").info([tid]), [])
        LAB.qb("archive1").file_prio(tid, [0], 0)
        flows.wait(lambda: any(f["index"] == 0 and f["priority"] == 0 for f in LAB.qb("archive1").files(tid)),
                   what="archive file deselected")
        rc, out, err = archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("CLEANUP_REQUIRED", out)
        self.assertIn("file 0 'pay/a.bin' on 'archive1': skipped in qBittorrent", out)
        self.assertIn("no file of it was unlinked", out)
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), before_cache, "no file may go once a proof drifted")
        self.assertIn(HOLD, archive_state(tid)["tags"], "the hold stays while the eviction is unfinished")
        job = evict_job(tid)
        self.assertEqual(job["state"], "cleanup_required")
        self.assertTrue(job["needs_attention"])
        # The archive copy comes back (selected again by its qBittorrent), but selecting a file
        # is a write to it (libtorrent bumps its mtime): its stamp no longer proves it, so a plain
        # rerun still refuses; a piece check proves the bytes and the eviction finishes.
        aq = LAB.qb("archive1")
        aq.file_prio(tid, [0], 1)
        flows.wait(lambda: all(f["priority"] > 0 and f["progress"] == 1 for f in aq.files(tid)), what="archive file reselected")
        rc, out, err = archctl("resume", "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("modified since archctl's recheck", out)
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), before_cache)
        rc, out, err = evict(tid, "--verify-archive")
        self.assertEqual(rc, 0, err + out)
        self.assert_evicted(tid, name, before_cache, {"archive1": listing(LAB.node("archive1")["qb_root"])})

    def test_l_cancel_before_removal_deletes_nothing_and_drops_the_hold(self):
        tid, name, save = new_resource()
        archive(tid)
        before_cache, _ = self.snapshot()
        rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_AT": "evict.step.hold"})
        self.assertEqual(rc, 137, err)
        job = evict_job(tid)["id"]
        rc, out, err = archctl("job", "cancel", job)
        self.assertEqual(rc, 0, err)
        self.assertEqual(evict_job(tid)["state"], "cancelled")
        self.assertNotIn(HOLD, archive_state(tid)["tags"])
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1)
        self.assertEqual(listing(LAB.node("cache1")["qb_root"]), before_cache)
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(LAB.qb("cache1").info([tid]), [])

    def test_m_a_file_skipped_on_the_cache_is_neither_required_nor_deleted(self):
        tid, name, save = new_resource(skip=(1,))
        skipped = [f for f in LAB.qb("cache1").files(tid) if f["index"] == 1][0]["name"]
        archive(tid)
        rc, out, err = archctl("plan", "evict", tid[:12], "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["coverage"]["required"]["count"], len(LAYOUT) - 1)
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(LAB.qb("cache1").info([tid]), [])
        self.assertTrue(os.path.isfile(os.path.join(save, skipped)), "a file the cache never proved is unknown content")
        for f in LAB.qb("archive1").files(tid):
            if f["index"] != 1:
                self.assertFalse(os.path.exists(os.path.join(save, f["name"])), f["name"])


class LiveProof(unittest.TestCase):
    """An archive copy counts only by live evidence, never by archctl's own records: the covering
    torrent in its qBittorrent now (state, file at 100%) and the archive node's stat of the file
    equal to what archctl's recheck committed. Each case: plan evict and status RES say the file
    has no proven copy, evict refuses naming it, and the cache copy stays byte-identical."""

    def archive_file(self, name, rel="pay/sub/b.bin"):
        return os.path.join(LAB.node("archive1")["qb_root"], name, rel)

    def assert_refused(self, tid, save, before, *needles, args=()):
        rc, out, err = evict(tid, *args)
        self.assertEqual(rc, 1, err + out)
        for needle in needles:
            self.assertIn(needle, out)
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "the cache torrent must stay")
        self.assertEqual(content(save), before, "the cache copy must stay byte-identical")

    def assert_not_covered(self, tid, needle):
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--json")
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertFalse(doc["coverage"]["complete"], doc)
        self.assertIn(needle, json.dumps(doc["coverage"]["files"]))
        rc, out, err = archctl("status", tid[:12])
        self.assertEqual(rc, 0, err + out)
        self.assertNotIn("every file has one", out)
        self.assertIn(needle, out)

    def assert_piece_check_due(self, tid, needle):
        """plan evict counts the file, noting that evict checks its pieces first, and why."""
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--json")
        self.assertEqual(rc, 0, err + out)
        doc = json.loads(out)
        self.assertTrue(doc["coverage"]["complete"], doc)
        notes = json.dumps(doc["coverage"]["notes"])
        self.assertIn(needle, notes)
        self.assertIn("evict checks its pieces", notes)

    def test_a_an_archive_file_deleted_on_disk(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        os.unlink(self.archive_file(name))
        self.assert_not_covered(tid, "archive1: absent on disk")
        self.assert_refused(tid, save, before, "NOT_COVERED", "pay/sub/b.bin", "archive1: absent on disk")

    def test_b_an_archive_file_replaced_by_one_of_another_size(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        path = self.archive_file(name)
        os.unlink(path)
        with open(path, "wb") as f:
            f.write(b"x" * 1000)
        self.assert_not_covered(tid, "size 1000 on disk, 70001 in the metainfo")
        self.assert_refused(tid, save, before, "pay/sub/b.bin", "size 1000 on disk")

    def test_c_an_archive_file_replaced_by_one_of_the_same_size(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        path = self.archive_file(name)
        st = os.stat(path)
        os.unlink(path)
        with open(path, "wb") as f:
            f.write(b"\0" * st.st_size)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        # Its stamp no longer proves it: it counts only once evict's own piece check reads its
        # bytes, and the zeros are not the payload.
        self.assert_piece_check_due(tid, "replaced since archctl's recheck")
        self.assert_refused(tid, save, before, "PROOF_FAILED", "pay/sub/b.bin")
        self.assert_refused(tid, save, before, "PROOF_FAILED", "pay/sub/b.bin", args=("--verify-archive",))

    def test_d_archive_torrent_re_added_with_skip_checking_over_a_missing_file(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        aq = LAB.qb("archive1")
        data = aq.export(tid)
        aq.delete(tid)
        flows.wait(lambda: not aq.info([tid]), what="archive torrent removed")
        os.unlink(self.archive_file(name))
        aq.add_torrent(data, os.path.join(LAB.node("archive1")["qb_root"], name), paused=False, skip_checking=True)
        flows.wait(lambda: aq.info([tid]) and aq.info([tid])[0]["state"] == "missingFiles", timeout=60,
                   what="archive torrent in missingFiles")
        # qBittorrent still reports every file at 100%: only the torrent's state and the disk tell.
        self.assertTrue(all(f["progress"] == 1 for f in aq.files(tid)))
        self.assert_not_covered(tid, "qBittorrent reports the torrent missingFiles")
        self.assert_refused(tid, save, before, "NOT_COVERED", "missingFiles")
        aq.delete(tid, delete_files=True)

    def test_e_a_file_deleted_between_plan_and_confirm(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        rc, out, err = archctl("plan", "evict", tid[:12], "--from", "cache1", "--json")
        self.assertEqual(rc, 0, err + out)
        token = json.loads(out)["token"]
        os.unlink(self.archive_file(name))
        rc, out, err = archctl("evict", tid[:12], "--from", "cache1", "--confirm", token, "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("pay/sub/b.bin", out)
        self.assertIn("absent on disk", out)
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1)
        self.assertEqual(content(save), before)

    def test_f_a_file_deleted_while_the_evict_is_held(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        release = flows.archctl_paused_at(LAB, "evict.held", "evict", tid[:12], "--from", "cache1", "--yes", "--json")
        os.unlink(self.archive_file(name))
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        self.assertIn("PROOF_DRIFT", out)
        self.assertRegex(out, r"file \d+ 'pay/sub/b.bin' on 'archive1': absent on disk")
        self.assertEqual(len(LAB.qb("cache1").info([tid])), 1, "the cache torrent must stay")
        self.assertEqual(content(save), before)
        self.assertEqual(evict_job(tid)["state"], "failed")
        self.assertNotIn(HOLD, archive_state(tid)["tags"])

    def test_g_the_covering_torrent_deleted_with_its_files_after_revalidation(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        release = flows.archctl_paused_at(LAB, "evict.revalidated", "evict", tid[:12], "--from", "cache1", "--yes", "--json")
        LAB.qb("archive1").delete(tid, delete_files=True)
        flows.wait(lambda: not LAB.qb("archive1").info([tid]), what="archive torrent deleted")
        rc, out, err = release()
        self.assertEqual(rc, 1, err + out)
        self.assertIn("'archive1' no longer has the archive placement", out)
        self.assertIn("no file of it was unlinked", out)
        # The cache torrent was removed (that step had been proven); every byte stays on disk.
        self.assertEqual(content(save), before, "no cache file may go once the archive copy is gone")
        job = evict_job(tid)
        self.assertEqual(job["state"], "cleanup_required")
        events = [e["type"] for e in events_of(job["id"])]
        self.assertNotIn("unlinked", events)
        # A rerun refuses again: there is still nothing proving the payload elsewhere.
        rc, out, err = archctl("resume", job["id"], "--json", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertEqual(content(save), before)

    def test_g2_an_archive_file_lost_between_two_unlink_batches_stops_the_next_batch(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        # Batches of two files; a crash right after the first batch is unlinked, before the
        # ledger records it.
        env = {"ARCHCTL_TEST_UNLINK_BATCH": "2", "ARCHCTL_TEST_CRASH_AT": "evict.unlinked"}
        rc, out, err = evict(tid, env=env)
        self.assertEqual(rc, 137, err + out)
        # The killed run's lock is left behind; job show says its process has ended.
        rc, shown, err = archctl("job", "show", evict_job(tid)["id"])
        self.assertEqual(rc, 0, err)
        self.assertRegex(shown, r"not running: pid \d+ on .* has ended")
        self.assertNotRegex(shown, r"(?m)^running: pid")
        now = content(save)
        gone = sorted(set(before) - set(now))
        self.assertEqual(len([g for g in gone if not os.path.isdir(os.path.join(save, g))]), 2, gone)
        os.unlink(self.archive_file(name, "pay/a.bin") if "pay/a.bin" in now else self.archive_file(name, "pay/sub/dir/c.dat"))
        rc, out, err = archctl("resume", "--json", env={"ARCHCTL_TEST_UNLINK_BATCH": "2"}, timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn("CLEANUP_REQUIRED", out)
        self.assertIn("the archive proof", out)
        self.assertIn("absent on disk", out)
        self.assertIn("2 of its 5 file(s) are no longer on the cache's disk", out)
        self.assertEqual(content(save), now, "nothing more may be deleted once a proof stops holding")
        job = evict_job(tid)
        self.assertEqual(job["state"], "cleanup_required")
        failed = [e for e in events_of(job["id"]) if e["type"] == "failed"][-1]
        self.assertEqual(len(failed["gone"]), 2, failed)

    def test_h_a_placement_committed_without_stamps_counts_by_evicts_piece_check(self):
        tid, name, save = new_resource()
        archive(tid)
        before = content(save)
        # A commit by an archctl that recorded no file stamps.
        for path in glob.glob(os.path.join(LAB.state_dir, "placements", "*", "archive1.json")):
            with open(path) as f:
                record = json.load(f)
            if record.get("detail", {}).get("qb_id") == tid:
                record["detail"].pop("stamps", None)
                with open(path, "w") as f:
                    json.dump(record, f)
        self.assert_piece_check_due(tid, "no file stamp from archctl's recheck")
        rc, out, err = evict(tid)
        self.assertEqual(rc, 0, err + out)
        self.assertEqual(LAB.qb("cache1").info([tid]), [])
        reval = [e for e in events_of(evict_job(tid)["id"]) if e["type"] == "revalidated"][0]
        self.assertEqual(reval["pieces_checked"], {"archive1": "0-1,3-4"})


class CrashMatrix(unittest.TestCase):
    def test_crash_at_every_point_then_rerun_converges(self):
        tid, name, save = new_resource()
        archive(tid)
        rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_LIST": "1"})
        self.assertEqual(rc, 0, err)
        points = flows.crash_points_in(err)
        self.assertIn("evict.removed", points)
        self.assertIn("unlink_owned.unlinked", points)
        covered = []
        for point in points + ["unlink_owned.unlinked:3", "job.event:4"]:
            tid, name, save = new_resource()
            archive(tid)
            before_cache, before_archives = Evict.snapshot(self)
            rc, out, err = evict(tid, env={"ARCHCTL_TEST_CRASH_AT": point})
            if rc != 137:
                self.assertEqual(rc, 0, f"{point}: {err}")
                continue
            covered.append(point)
            # A rerun that finds the cache torrent gone already says nothing about removing it.
            still_there = bool(LAB.qb("cache1").info([tid]))
            rc, out, err = evict(tid)
            self.assertEqual(rc, 0, f"rerun after a crash at {point}: {err}{out}")
            Evict.assert_evicted(self, tid, name, before_cache, before_archives)
            job = evict_job(tid)
            self.assertEqual(job["state"], "done", point)
            # Every file the killed run unlinked is accounted for, once, in the record and its
            # events, whatever the point (the unlink step records its intent first).
            self.assertEqual((job["files_done"], job["bytes_done"]), (len(LAYOUT), sum(LAYOUT.values())), point)
            recorded = [f for e in events_of(job["id"]) if e["type"] == "unlinked" for f in e["files"]]
            self.assertEqual(len(recorded), len(LAYOUT), f"{point}: {recorded}")
            self.assertEqual((out + err).count("removed torrent"), 1 if still_there else 0, f"{point}: {out}{err}")
        print(f"  evict crash points: {len(points)} listed, {len(covered)} covered: {covered}", file=sys.stderr)
        self.assertGreaterEqual(len(covered), 12)


if __name__ == "__main__":
    unittest.main(verbosity=2)
