"""Measuring helpers of the benchmarks (not tests): a process run with wall time, CPU time and its
own /proc/<pid>/io read at exit, median of samples, payload generation, page-cache control.

The I/O counters of a child are read from its zombie: os.waitid(..., WEXITED | WNOWAIT) waits for
the exit without reaping, /proc/<pid>/io is still there (and sums every thread of the process and
every child it reaped), then os.wait4 reaps it and gives its rusage. check_zombie_io() proves that
on this kernel before a run relies on it.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def log(text):
    """Progress line on stderr (the table goes to stdout)."""
    print(f"bench: {text}", file=sys.stderr, flush=True)


class Run:
    """The outcome of run(): rc, stdout, stderr, wall seconds, cpu seconds (user + sys) and the
    process's own counters from /proc/<pid>/io (rchar, read_bytes, ...)."""

    def __init__(self, rc, out, err, wall, cpu, io):
        self.rc, self.out, self.err, self.wall, self.cpu, self.io = rc, out, err, wall, cpu, io

    def check(self, what):
        if self.rc != 0:
            raise RuntimeError(f"{what} exited {self.rc}: {(self.err or self.out).strip()[-800:]}")
        return self


def read_proc_io(pid):
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}


def run(argv, env=None, stdin_path=None, timeout=1800):
    """Run argv to its end; stdout and stderr go through temporary files (no pipe to drain while
    the child is waited for without reaping)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        try:
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=err, env=env)
        finally:
            if stdin_path:
                stdin.close()
        killer = threading.Timer(timeout, proc.kill)  # a hung run ends as a failed one
        killer.start()
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        finally:
            killer.cancel()
        wall = time.monotonic() - t0
        io = read_proc_io(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                   wall, usage.ru_utime + usage.ru_stime, io)


def check_zombie_io(scratch):
    """Prove that run() sees a child's reads: cat of an 8 MiB file must report rchar >= 8 MiB."""
    path = os.path.join(scratch, "zombie-io.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(8 << 20))
    r = run(["cat", path], stdin_path=None)
    os.unlink(path)
    if r.rc != 0 or r.io.get("rchar", 0) < (8 << 20):
        raise RuntimeError(f"/proc/<pid>/io of an exited, unreaped child is not usable here: {r.io}")
    return r.io


def median(values):
    return statistics.median(values)


def generate(path, size, seed):
    """`size` incompressible bytes at `path` (AES-CTR keystream: fast), reproducible by seed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cmd = (f"openssl enc -aes-128-ctr -nosalt -pass pass:archctl-bench-{int(seed)} -in /dev/zero 2>/dev/null"
           f" | head -c {int(size)} > '{path}'")
    subprocess.run(["bash", "-c", cmd], check=False)
    if os.path.getsize(path) != size:
        raise RuntimeError(f"cannot generate {path}: openssl enc gave {os.path.getsize(path)} of {size} bytes")


def warm(paths):
    """Read files once so every contender starts from a warm page cache."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(8 << 20):
                pass


def drop_cache(paths):
    """Evict these files' pages from the page cache (fsync first: dirty pages cannot be dropped),
    without root and without touching other users' cache."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def openssl_speed(seconds=2):
    """Single-core bytes/s of SHA-1 and SHA-256 at 16384-byte blocks (`openssl speed`)."""
    out = subprocess.run(["openssl", "speed", "-seconds", str(seconds), "-bytes", "16384", "sha1", "sha256"],
                         capture_output=True, text=True, check=True).stdout
    rates = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("sha1", "sha256") and parts[-1].endswith("k"):
            rates[parts[0]] = float(parts[-1][:-1]) * 1000
    if set(rates) != {"sha1", "sha256"}:
        raise RuntimeError(f"cannot read `openssl speed` output: {out[-400:]}")
    return rates
