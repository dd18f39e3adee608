#!/usr/bin/python3
"""A far end that does not speak the node protocol, and a node fed requests no archctl sends: the
built binary against real exec far ends (shell and Python scripts) and a real `archctl node
serve`. archctl ends, quotes what the far end printed and leaves no process behind; its memory
stays bounded; SIGTERM and SIGINT end it within seconds in every wait; `node serve` answers an
overlong line and absurd numbers with an error and then the next request, and ends on SIGTERM.

No qBittorrent or Syncthing is started: the node's services point at a closed port, so `node
check` fails those checks at once and its transport check is the one under test."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ARCHCTL = os.environ.get("ARCHCTL_BIN", "archctl")
WORK = None
COUNTER = [0]
PIDFILES = []  # every far end's pid file: a failed test must not leave its process group behind
MIB = 1 << 20


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="archctl-far-end-")
    os.chmod(WORK, 0o700)


def tearDownModule():
    for pidfile in PIDFILES:
        try:
            pgid = read_pid(pidfile)
            with open(f"/proc/{pgid}/cmdline", "rb") as f:
                ours = WORK.encode() in f.read()  # still this suite's script, not a reused pid
            if ours:
                os.killpg(pgid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
    shutil.rmtree(WORK, ignore_errors=True)


def fresh_dir(name):
    COUNTER[0] += 1
    path = os.path.join(WORK, f"{name}-{COUNTER[0]}")
    os.makedirs(path, mode=0o700)
    return path


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def toml_str(s):
    return json.dumps(s)


def config_for(far_end_argv, timeout="5s"):
    """A config whose one node 'far' is reached through `far_end_argv`; its services are on a closed port."""
    d = fresh_dir("config")
    for sub in ("state", "qb", "sync"):
        os.makedirs(os.path.join(d, sub), mode=0o700)
    secret = write(os.path.join(d, "secret"), "not-a-real-secret\n")
    text = "\n".join([
        f"state_dir = {toml_str(os.path.join(d, 'state'))}",
        "[nodes.far]",
        'role = "archive"',
        f"qb_root = {toml_str(os.path.join(d, 'qb'))}",
        f"sync_root = {toml_str(os.path.join(d, 'sync'))}",
        'transport = "exec"',
        "exec = [" + ", ".join(toml_str(a) for a in far_end_argv) + "]",
        f"timeout = {toml_str(timeout)}",
        "[nodes.far.qbittorrent]",
        'url = "http://127.0.0.1:1"',
        'username = "admin"',
        f"password_file = {toml_str(secret)}",
        "[nodes.far.syncthing]",
        'url = "http://127.0.0.1:1"',
        f"api_key_file = {toml_str(secret)}",
        "",
    ])
    return write(os.path.join(d, "config.toml"), text)


def shell_far_end(body):
    """A far end script that records its pid (and so its process group) in a file, then runs `body`."""
    d = fresh_dir("far")
    pidfile = os.path.join(d, "pid")
    PIDFILES.append(pidfile)
    script = write(os.path.join(d, "far.sh"), f"#!/bin/sh\necho $$ > '{pidfile}'\n{body}\n", 0o700)
    return script, pidfile


def read_pid(path):
    with open(path) as f:
        return int(f.read())


def group_members(pgid):
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Run:
    """archctl started in the background; wait() reaps it with its own peak RSS (os.wait4)."""

    def __init__(self, argv):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, "out"), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, "err"), daemon=True)]
        for t in self._readers:
            t.start()

    def _read(self, stream, which):
        data = stream.read()
        setattr(self, which, data)

    def wait(self, timeout):
        """(exit status, peak RSS in KiB, seconds since start); kills archctl and fails on a hang."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                os.wait4(self.proc.pid, 0)
                self.proc.returncode = -9
                raise AssertionError(f"archctl still running after {timeout}s (it never ended)")
            time.sleep(0.05)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        for t in self._readers:
            t.join(10)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, usage.ru_maxrss, time.monotonic() - self.started


def node_check(config):
    return Run([ARCHCTL, "--config", config, "node", "check", "far"])


class BabblingFarEnd(unittest.TestCase):
    """Far ends that print bytes instead of the protocol: archctl stops at their first bytes."""

    def test_a_far_end_dripping_bytes_without_a_newline_is_refused_and_killed(self):
        script, pidfile = shell_far_end("sleep 600 &\nwhile :; do printf x; sleep 1; done")
        run = node_check(config_for([script], timeout="5s"))
        code, _, _ = run.wait(60)
        out = run.out.decode()
        self.assertEqual(code, 1, out + run.err.decode())
        self.assertRegex(out, r"FAIL\s+transport\s+node 'far' printed 'x")
        self.assertIn("instead of the node protocol", out)
        self.assertIn("archctl node serve", out)
        pgid = read_pid(pidfile)
        wait_for(lambda: not group_members(pgid), 10, "the far end's process group to be gone")

    def test_a_far_end_whose_stderr_holds_terminal_escapes_is_quoted_escaped(self):
        # What the far end said on stderr reaches the person as visible text, in the check line
        # and in --json (as JSON escapes), never as a control sequence.
        script, _ = shell_far_end("printf 'bad \\033]0;PWNED\\007 \\033[2J end\\n' >&2\nexit 3")
        config = config_for([script])
        run = node_check(config)
        code, _, _ = run.wait(60)
        out, err = run.out.decode(), run.err.decode()
        self.assertEqual(code, 1, out + err)
        self.assertIn("bad \\x1b]0;PWNED\\x07 \\x1b[2J end", out)
        self.assertNotIn("\x1b", out + err)
        self.assertNotIn("\x07", out + err)
        run = Run([ARCHCTL, "--config", config, "node", "check", "far", "--json"])
        code, _, _ = run.wait(60)
        doc = json.loads(run.out.decode())
        transport = next(c for c in doc["checks"] if c["check"] == "transport")
        self.assertIn("bad \x1b]0;PWNED\x07 \x1b[2J end", transport["error"]["hint"])

    def test_a_far_end_streaming_endlessly_is_refused_with_bounded_memory(self):
        for body, expect in (("exec tr '\\000' x < /dev/zero", "printed 'xxxxxxxx"),
                             ("printf '{\"type\":\"hello\",\"a\":\"'; exec tr '\\000' x < /dev/zero", "longer than 64.0 MiB")):
            with self.subTest(body=body):
                script, pidfile = shell_far_end(body)
                run = node_check(config_for([script], timeout="5s"))
                code, peak_kib, _ = run.wait(120)
                out = run.out.decode()
                self.assertEqual(code, 1, out + run.err.decode())
                self.assertIn(expect, out)
                # The line buffer stops at the 64 MiB limit (the sanitizer build adds its own
                # overhead); it used to grow for as long as the far end wrote.
                self.assertLess(peak_kib, 512 * 1024, f"peak RSS {peak_kib} KiB")
                print(f"test_far_end: archctl peak RSS {peak_kib // 1024} MiB against a far end running {body!r}", file=sys.stderr)
                pgid = read_pid(pidfile)
                wait_for(lambda: not group_members(pgid), 10, "the far end's process group to be gone")


DEAF_FAR_END = r'''
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
send({"type": "hello", "protocol": 4, "archctl": "deaf", "pid": os.getpid(), "roots": []})
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") != "request":
        continue
    if m["op"] == "open_roots":
        roots = [{"path": p, "fs_type": "ext4", "fs_id": "1", "capabilities": {}} for p in m["args"]["roots"]]
        send({"type": "response", "id": m["id"], "ok": True, "result": {"roots": roots}})
        continue
    # Any operation: keepalives forever, the cancel a stop sends never read.
    while True:
        send({"type": "progress", "id": m["id"], "keepalive": True})
        time.sleep(0.3)
'''


class Signals(unittest.TestCase):
    """SIGTERM and SIGINT end archctl within seconds while it waits on a far end."""

    def stop_and_wait(self, run, signo, pidfile):
        wait_for(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 20, "the far end to start")
        time.sleep(1.0)
        self.assertIsNone(run.proc.poll(), "archctl ended before the signal")
        sent = time.monotonic()
        run.proc.send_signal(signo)
        code, _, _ = run.wait(30)
        ended_after = time.monotonic() - sent
        pgid = read_pid(pidfile)
        wait_for(lambda: not group_members(pgid), 10, "the far end's process group to be gone")
        return code, ended_after

    def test_a_signal_while_waiting_for_a_hello_ends_archctl_and_its_far_end(self):
        for signo, text in ((signal.SIGTERM, "stopped by SIGTERM"), (signal.SIGINT, "interrupted (Ctrl-C)")):
            with self.subTest(signal=signo):
                # A line begun and never finished, a byte every half second: within the timeout.
                script, pidfile = shell_far_end("sleep 600 &\nprintf '{'\nwhile :; do printf ' '; sleep 0.5; done")
                run = node_check(config_for([script], timeout="60s"))
                code, ended_after = self.stop_and_wait(run, signo, pidfile)
                out = run.out.decode()
                self.assertIn(f"{text} while waiting for node 'far'", out, out + run.err.decode())
                self.assertNotEqual(code, 0)
                print(f"test_far_end: ended {ended_after:.2f}s after {signal.Signals(signo).name} (hello wait)", file=sys.stderr)

    def test_a_signal_during_a_call_the_far_end_never_answers_ends_archctl_and_kills_it(self):
        d = fresh_dir("deaf")
        pidfile = os.path.join(d, "pid")
        PIDFILES.append(pidfile)
        far = write(os.path.join(d, "deaf.py"), DEAF_FAR_END, 0o700)
        script = write(os.path.join(d, "deaf.sh"), f"#!/bin/sh\necho $$ > '{pidfile}'\nexec /usr/bin/python3 '{far}'\n", 0o700)
        run = node_check(config_for([script], timeout="60s"))
        code, ended_after = self.stop_and_wait(run, signal.SIGTERM, pidfile)
        out = run.out.decode()
        self.assertIn("stopped by SIGTERM: node 'far' did not stop", out, out + run.err.decode())
        self.assertNotEqual(code, 0)
        print(f"test_far_end: ended {ended_after:.2f}s after SIGTERM (call the far end ignores)", file=sys.stderr)


class Serve:
    """`archctl node serve --root DIR` with its stdin and stdout as pipes."""

    def __init__(self, root):
        self.proc = subprocess.Popen([ARCHCTL, "node", "serve", "--root", root], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.hello = json.loads(self.proc.stdout.readline())

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, request_id):
        """The response for `request_id` (progress lines skipped)."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError("node serve ended: " + self.proc.stderr.read().decode(errors="replace")[-2000:])
            m = json.loads(line)
            if m["type"] == "response" and m["id"] == request_id:
                return m

    def close(self):
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    def call(self, request_id, op, args):
        self.send({"type": "request", "id": request_id, "op": op, "args": args})
        return self.answer(request_id)


class NodeServe(unittest.TestCase):
    """`node serve` refuses what no archctl sends, and serves the next request."""

    def test_absurd_partfile_build_numbers_are_refused_and_the_next_request_served(self):
        root = fresh_dir("serve")
        serve = Serve(root)
        absurd = serve.call(2, "partfile_build", {"to": root + "/.absurd.parts", "piece_count": 4294967295,
                                                  "piece_size": 4294967295,
                                                  "pieces": [{"piece": 0, "length": 18446744073709551615, "ranges": []}]})
        self.assertFalse(absurd["ok"])
        self.assertEqual(absurd["error"]["code"], "BAD_REQUEST")
        huge = serve.call(3, "partfile_build", {"to": root + "/.huge.parts", "piece_count": 100000000,
                                                "piece_size": 16384, "pieces": []})
        self.assertFalse(huge["ok"])
        self.assertEqual(huge["error"]["code"], "BAD_REQUEST")
        self.assertEqual(os.listdir(root), [])
        self.assertTrue(serve.call(4, "info", {})["ok"])
        serve.proc.stdin.close()
        self.assertEqual(serve.proc.wait(30), 0)
        serve.close()

    def test_an_overlong_line_is_refused_in_time_of_the_limit_and_sigterm_ends_serve(self):
        root = fresh_dir("serve")
        serve = Serve(root)
        written = [0]
        refused_at = []
        go_on = threading.Event()

        def writer():
            block = b"x" * MIB
            serve.proc.stdin.write(b'{"type":"request","id":7,"op":"info","args":{"x":"')
            for _ in range(300):  # a 300 MB line
                if _ == 100:
                    go_on.wait(120)  # the refusal must come before this much of the line is sent
                serve.proc.stdin.write(block)
                written[0] += len(block)
            serve.proc.stdin.write(b'"}}\n')
            serve.proc.stdin.flush()

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        refusal = json.loads(serve.proc.stdout.readline())
        refused_at.append(written[0])
        go_on.set()
        self.assertFalse(refusal["ok"])
        self.assertIn("longer than 64.0 MiB", refusal["error"]["message"])
        self.assertLessEqual(refused_at[0], 100 * MIB)
        t.join(120)
        self.assertFalse(t.is_alive())
        self.assertTrue(serve.call(8, "info", {})["ok"])
        # Idle, waiting for the next line: SIGTERM ends it.
        serve.proc.send_signal(signal.SIGTERM)
        self.assertTrue(wait_within(serve.proc.pid, 30), "node serve still running 30s after SIGTERM")
        _, status, usage = os.wait4(serve.proc.pid, 0)
        serve.proc.returncode = os.waitstatus_to_exitcode(status)
        serve.close()
        print(f"test_far_end: node serve refused a 300 MB line after {refused_at[0] // MIB} MiB of it; "
              f"peak RSS {usage.ru_maxrss // 1024} MiB", file=sys.stderr)
        self.assertLess(usage.ru_maxrss, 512 * 1024, f"peak RSS {usage.ru_maxrss} KiB")


def wait_within(pid, timeout):
    """True once `pid` has exited (still to be reaped), False after `timeout` (then it is killed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.wait4(pid, 0)
    return False


if __name__ == "__main__":
    unittest.main(verbosity=2)
