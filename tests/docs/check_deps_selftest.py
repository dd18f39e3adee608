#!/usr/bin/python3
"""tests/docs/check_deps.py fails when it should: a copy of tests/deps.sh without `file` (which
cpack's DEB generator runs) or without procps (pgrep) fails it naming the program, the caller's
file:line and the package; so do a table without a called program's row and a row claiming a
package a minbase root does not have. The sources' readers find what the suites call through
the ways they call it (wrappers, module constants, argv lists, command substitutions)."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ARCHCTL_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(HERE, "check_deps.py")
DEPS = os.path.join(ROOT, "tests", "deps.sh")
TABLE = os.path.join(ROOT, "tests", "deps_programs.tsv")
sys.path.insert(0, HERE)
import check_deps  # noqa: E402


def run_check(*args, env=None):
    full = dict(os.environ, ARCHCTL_SOURCE_DIR=ROOT, **(env or {}))
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True, env=full, timeout=120)


def deps_without(package, directory):
    """A copy of deps.sh whose packages list lacks `package`."""
    with open(DEPS, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^packages=\((.*?)^\)", text, re.M | re.S)
    body = re.sub(rf"(?<![\w.+-]){re.escape(package)}(?![\w.+-])", "", m.group(1))
    assert body != m.group(1), f"{package} is not in the packages list of {DEPS}"
    path = os.path.join(directory, f"deps-without-{package}.sh")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:m.start(1)] + body + text[m.end(1):])
    return path


def table_with(directory, drop=None, replace=None):
    with open(TABLE, encoding="utf-8") as f:
        lines = f.readlines()
    out = []
    for line in lines:
        program = line.split("\t", 1)[0]
        if program == drop:
            continue
        if replace and program == replace[0]:
            line = replace[1] + "\n"
        out.append(line)
    path = os.path.join(directory, "table.tsv")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(out)
    return path


def cmake_line(pattern):
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if pattern in line:
                return number
    raise AssertionError(f"no '{pattern}' in CMakeLists.txt")


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="archctl-check-deps-")
        self.addCleanup(self.tmp.cleanup)

    def test_the_real_deps_sh_passes(self):
        r = run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"^check_deps: ok: \d+ programs")

    def test_deps_without_file_fails_at_the_cpack_setting(self):
        deps = deps_without("file", self.tmp.name)
        line = cmake_line("set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)")
        for r in (run_check("--deps", deps), run_check(env={"ARCHCTL_DEPS_SH": deps})):
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(f"check_deps: CMakeLists.txt:{line}: calls 'file' (package file; CPack's DEB generator "
                          "with CPACK_DEBIAN_PACKAGE_SHLIBDEPS), which ", r.stdout)
            self.assertIn("does not install: add file to its packages list", r.stdout)
            self.assertIn("check_deps: FAILED: 1 problem(s)", r.stdout)

    def test_deps_without_procps_fails_at_the_pgrep_call(self):
        r = run_check("--deps", deps_without("procps", self.tmp.name))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"tests/integration/test_ssh\.py:\d+: calls 'pgrep' \(package procps\)")

    def test_a_called_program_without_a_row_fails(self):
        r = run_check("--table", table_with(self.tmp.name, drop="tmux"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"tests/integration/test_panel\.py:\d+: calls 'tmux', which has no row in ")

    def test_a_package_outside_minbase_is_not_essential(self):
        table = table_with(self.tmp.name, replace=("file", "file\tfile\tessential\tclaimed"))
        r = run_check("--table", table, env={"ARCHCTL_DEPS_SH": deps_without("file", self.tmp.name)})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("calls 'file' (package file; CPack's DEB generator with CPACK_DEBIAN_PACKAGE_SHLIBDEPS): "
                      "file is not in a minbase root", r.stdout)

    def test_a_row_nothing_calls_is_stale(self):
        with open(TABLE, encoding="utf-8") as f:
            text = f.read()
        path = os.path.join(self.tmp.name, "table.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "cowsay\tcowsay\tdeps\tnothing calls it\n")
        r = run_check("--table", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("'cowsay' is called nowhere", r.stdout)


class Readers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="archctl-check-deps-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_python_calls(self):
        path = self.write("suite.py", """#!/usr/bin/python3
import shutil
import subprocess
TOOL = "/usr/bin/qbittorrent-nox"
def run(*argv):
    return subprocess.run(list(argv), capture_output=True)
def sh(argv, env=None):
    return subprocess.run(argv, env=env)
def start(port):
    argv = [TOOL, f"--port={port}"]
    return subprocess.Popen(argv)
def ssh():
    return ["ssh", "-F", "/dev/null", "host"]
class T:
    def test(self):
        run("mkfs.ext4", "-q")
        sh(["zsh", "-f", "-c", "x"])
        subprocess.run(ssh() + ["true"])
        if shutil.which("systemd-analyze"):
            pass
        cmd(command=["sleep", "60"])
        data = ["libc6", "libstdc++6"]
        self.archctl(["archive", "--yes"])
        subprocess.run([os.environ["ARCHCTL_BIN"], "--help"])
""")
        calls = check_deps.PythonFile(path).scan()
        found = sorted((c.program, c.line, c.check) for c in calls)
        self.assertEqual(found, [("mkfs.ext4", 16, False), ("python3", 1, False), ("qbittorrent-nox", 10, False),
                                 ("sleep", 21, False), ("ssh", 13, False), ("systemd-analyze", 19, True),
                                 ("zsh", 17, False)])

    def test_shell_calls(self):
        path = self.write("script.sh", """#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
log() { echo "x: $(date +%T) $*" >&2; }
packages=(
  cmake file   # not commands
)
for arg in "$@"; do
  case "$arg" in
    --fast|-f) fast=1 ;;
    *) tail -n 1 "$arg" >/dev/null 2>&1 ;;
  esac
done
if ! command -v sudo >/dev/null; then
  log "no sudo"
fi
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}" >/dev/null
CC=clang CXX=clang++ cmake -S "$root" -B build -G Ninja \\
  -DX=1
mirror="${MIRROR:-$(awk '$2 == "bookworm" { print $1; exit }' /etc/apt/sources.list)}"
echo 'grep is only text here' | sort -r
exec "$root/build/archctl" --version
""")
        calls = check_deps.ShellScript(path).scan()
        found = sorted((c.program, c.line, c.check) for c in calls)
        self.assertEqual(found, [("apt-get", 17, False), ("awk", 20, False), ("bash", 1, False), ("clang", 18, False),
                                 ("clang++", 18, False), ("cmake", 18, False), ("date", 4, False),
                                 ("dirname", 3, False), ("env", 1, False), ("env", 17, False),
                                 ("ninja", 18, False), ("sort", 21, False), ("sudo", 14, True),
                                 ("tail", 11, False)])

    def test_cmake_calls(self):
        path = self.write("CMakeLists.txt", """project(x VERSION 1 LANGUAGES CXX)
find_package(PkgConfig REQUIRED)
find_program(CLANG clang++)
find_program(TOOL NAMES gdb lldb DOC "a debugger")
add_executable(tool main.cpp)
add_test(NAME t COMMAND tool --x)
add_test(NAME u COMMAND /usr/bin/python3 check.py)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
""")
        found = sorted((c.program, c.line) for c in check_deps.cmake_calls([path]))
        self.assertEqual(found, [("c++", 1), ("clang++", 3), ("dpkg", 10), ("dpkg-shlibdeps", 8), ("file", 8),
                                 ("gdb", 4), ("lldb", 4), ("pkg-config", 2), ("python3", 7), ("strip", 9)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
