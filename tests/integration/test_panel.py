#!/usr/bin/python3
"""The progress panel in a real terminal: an archive runs inside tmux at 80 and at 120 columns
while the archive node's Syncthing receives slowly (a rate limit that also holds on the LAN), so
the sync step repaints for a while. Every captured line (wrapped lines joined) fits the width,
the percentage and the ETA are on screen, the panel never scrolls (one frame in the whole
history), and after Ctrl-C the last frame still shows the percentage reached, not 0.0%."""

import os
import re
import shlex
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])
SOCKET = f"archctl-panel-{os.getpid()}"
PERCENT = re.compile(r"(\d+\.\d)%")


def setUpModule():
    LAB.set_up()
    # About 200 KiB/s into archive1: a few MiB take long enough to watch, in many files so the
    # bytes present on the archive grow step by step.
    LAB.st("archive1").request("PATCH", "config/options", {"maxRecvKbps": 200, "limitBandwidthInLan": True})
    unittest.addModuleCleanup(lambda: subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True))


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, timeout=30)


def panel_lines(lines):
    """The panel's two lines of every frame on screen."""
    out = []
    for i, line in enumerate(lines):
        if "ETA" in line:
            out += lines[i:i + 2]
    return out


def screen(session):
    """The pane's whole history with wrapped lines joined: a wrapped line shows as a long one."""
    return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", session).stdout.rstrip("\n").split("\n")


class Panel(unittest.TestCase):
    def run_in_tmux(self, width, seed):
        name = f"panel-{width}"
        layout = {f"pay/part{i:02d}.bin": 96 * 1024 for i in range(80)}
        _, tid, _, _ = flows.seed_resource(LAB, name, layout, seed)
        argv, env = LAB.archctl_command("archive", tid[:12], "--yes")
        env = {k: v for k, v in env.items() if k.startswith(("ARCHCTL", "XDG", "NO_COLOR", "PATH", "HOME", "LANG", "LC_"))}
        env.pop("COLUMNS", None)
        script = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = f"env {script} {' '.join(shlex.quote(a) for a in argv)}; echo EXIT=$?; sleep 600"
        session = f"w{width}"
        r = tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", "24", command)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(tmux, "kill-session", "-t", session)

        def moving():
            lines = screen(session)
            frames = [line for line in lines if "ETA" in line]
            if any("EXIT=" in line for line in lines):
                self.fail("archive ended before the panel could be read:\n" + "\n".join(lines))
            if frames and "[sync" in frames[-1] and float(PERCENT.search(frames[-1]).group(1)) > 0:
                return lines
            return None

        lines = flows.wait(moving, timeout=120, what=f"a sync frame with progress at {width} columns", interval=0.3)
        # A few more repaints, each checked.
        for _ in range(6):
            for line in panel_lines(lines):
                self.assertLess(len(line), width, f"a line wraps at {width} columns: {line!r}")
            frames = [line for line in lines if "ETA" in line]
            self.assertEqual(len(frames), 1, "the panel repaints in place, never scrolls:\n" + "\n".join(lines))
            self.assertRegex(frames[0], r"\d+\.\d%")
            self.assertRegex(frames[0], r"ETA (\d+:\d\d:\d\d|--:--:--)")
            time.sleep(0.5)
            lines = screen(session)
        if width >= 120:
            self.assertIn("[sync 2/5]", frames[0])
        reached = float(PERCENT.search(frames[0]).group(1))

        tmux("send-keys", "-t", session, "C-c")
        lines = flows.wait(lambda: (lambda ls: ls if any("EXIT=" in line for line in ls) else None)(screen(session)),
                           timeout=120, what="archive to stop after Ctrl-C")
        text = "\n".join(lines)
        self.assertIn("EXIT=10", text)
        frames = [line for line in lines if "ETA" in line]
        self.assertTrue(frames, text)
        last = float(PERCENT.search(frames[-1]).group(1))
        self.assertGreaterEqual(last, reached, "the final frame keeps the percentage reached:\n" + text)
        self.assertGreater(last, 0.0, text)
        for line in panel_lines(lines):
            self.assertLess(len(line), width, f"a line wraps at {width} columns: {line!r}")

    def test_80_columns(self):
        self.run_in_tmux(80, 811)

    def test_120_columns(self):
        self.run_in_tmux(120, 812)


if __name__ == "__main__":
    unittest.main(verbosity=2)
