#!/usr/bin/python3
"""The completion scripts in the real shells: bash (the function called with COMP_WORDS and
COMP_CWORD, COMPREPLY read back), zsh (`zsh -f`, compinit, compadd captured) and fish
(`complete -C`). Each completes commands, subcommands, the options a command takes, node names
from the config for --from/--to, job ids from the state for job show/cancel/rm and resume, and
tier policies for tier/plan tier; a global option's value (--config F) is never the command.
The committed scripts are the ones `archctl completion` generates. No service is needed: the
names come from the config and state files without contacting any node."""

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

BIN = os.environ["ARCHCTL_BIN"]
ROOT = os.environ["ARCHCTL_SOURCE_DIR"]
SCRIPTS = {"bash": "archctl.bash", "zsh": "_archctl", "fish": "archctl.fish"}
JOBS = ["20261202-050101-aaaa", "20261202-050202-bbbb"]

CONFIG = """
[nodes.seedbox]
role = "cache"
qb_root = "/srv/torrents"
sync_root = "/srv/sync"
[nodes.seedbox.qbittorrent]
url = "http://127.0.0.1:9"
username = "admin"
password = "x"
[nodes.seedbox.syncthing]
url = "http://127.0.0.1:9"
api_key = "x"

[nodes.nas]
role = "archive"
qb_root = "/tank/torrents"
sync_root = "/tank/sync"
[nodes.nas.qbittorrent]
url = "http://127.0.0.1:9"
username = "admin"
password = "x"
[nodes.nas.syncthing]
url = "http://127.0.0.1:9"
api_key = "x"

[tier.nightly]
cache = "seedbox"
archive = ["nas"]
keep_free = "1G"
archive_when = { completed_before = "14d" }
"""


def setUpModule():
    global TMP, CFG, ENV
    TMP = tempfile.mkdtemp(prefix="archctl-shells-")
    state = os.path.join(TMP, "state")
    CFG = os.path.join(TMP, "config.toml")
    with open(CFG, "w", encoding="utf-8") as f:
        f.write(f'state_dir = "{state}"\n' + CONFIG)
    for job in JOBS:
        os.makedirs(os.path.join(state, "jobs", job))
        with open(os.path.join(state, "jobs", job, "definition.json"), "w", encoding="utf-8") as f:
            f.write("{}\n")
    ENV = dict(os.environ)
    ENV["PATH"] = os.path.dirname(BIN) + os.pathsep + ENV.get("PATH", "")
    ENV["ARCHCTL_CONFIG"] = CFG
    ENV["HOME"] = TMP
    ENV.pop("ARCHCTL_STATE", None)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def script(shell):
    return os.path.join(ROOT, "completions", SCRIPTS[shell])


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, env=env or ENV, timeout=60)


def bash(line, env=None):
    """COMPREPLY for the command line `line` (the cursor at its end)."""
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    code = (f"source {shlex.quote(script('bash'))}; COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); "
            f"COMP_CWORD={len(words) - 1}; _archctl; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = run(["bash", "--norc", "--noprofile", "-c", code], env)
    assert r.returncode == 0, r.stderr
    return sorted(w for w in r.stdout.split("\n") if w)


def zsh(line):
    """The words zsh's completion offers (compadd captured) for `line`."""
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    code = ("autoload -Uz compinit; compinit -u -D; "
            "compadd() { local seen=0 a; for a in \"$@\"; do (( seen )) && print -r -- \"$a\"; [[ $a == -- ]] && seen=1; done; return 0 }; "
            "_files() { print -r -- '<files>' }; "
            f"words=({' '.join(shlex.quote(w) for w in words)}); CURRENT={len(words)}; "
            f"source {shlex.quote(script('zsh'))}")
    r = run(["zsh", "-f", "-c", code])
    assert r.returncode == 0, r.stderr
    # compadd itself keeps the candidates that match the word typed.
    return sorted(w for w in r.stdout.split("\n") if w and (w.startswith(words[-1]) or w == "<files>"))


def fish(line):
    r = run(["fish", "--no-config", "-c", f"source {shlex.quote(script('fish'))}; complete -C {shlex.quote(line)}"])
    assert r.returncode == 0, r.stderr
    return sorted(w.split("\t")[0] for w in r.stdout.split("\n") if w)


GLOBAL = {"--config", "--state", "--json", "--quiet", "--verbose", "--help"}


def help_options(*cmd):
    """The long options `--help` lists for the command, with the global ones it accepts too."""
    text = run([BIN, *cmd, "--help"]).stdout
    return set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M)) | GLOBAL


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}
COMMANDS = {"plan", "archive", "unarchive", "evict", "tier", "resume", "status", "route", "job", "config", "node",
            "torrent", "completion"}


class Generated(unittest.TestCase):
    def test_committed_scripts_are_the_generated_ones(self):
        for shell, name in SCRIPTS.items():
            with self.subTest(shell=shell):
                with open(script(shell), encoding="utf-8") as f:
                    committed = f.read()
                self.assertEqual(run([BIN, "completion", shell]).stdout, committed,
                                 f"completions/{name} is stale: copy build/completions/{name} over it")

    def test_names_helpers(self):
        self.assertEqual(run([BIN, "completion", "--nodes"]).stdout.split(), ["nas", "seedbox"])
        self.assertEqual(run([BIN, "completion", "--jobs"]).stdout.split(), JOBS)
        self.assertEqual(run([BIN, "completion", "--policies"]).stdout.split(), ["nightly"])
        broken = dict(ENV, ARCHCTL_CONFIG=os.path.join(TMP, "missing.toml"))
        r = run([BIN, "completion", "--nodes"], broken)
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_names_from_a_config_whose_secrets_this_user_cannot_read(self):
        # The service's secret files are often readable by its user only: the config does not
        # load for someone else, yet its tables still name the nodes and policies.
        locked = os.path.join(TMP, "locked.toml")
        with open(locked, "w", encoding="utf-8") as f:
            f.write(f'state_dir = "{TMP}/state"\n' +
                    CONFIG.replace('password = "x"', f'password_file = "{TMP}/no-such-secret"'))
        env = dict(ENV, ARCHCTL_CONFIG=locked)
        self.assertNotEqual(run([BIN, "status"], env).returncode, 0)
        self.assertEqual(run([BIN, "completion", "--nodes"], env).stdout.split(), ["nas", "seedbox"])
        self.assertEqual(run([BIN, "completion", "--policies"], env).stdout.split(), ["nightly"])
        self.assertEqual(run([BIN, "completion", "--jobs"], env).stdout.split(), JOBS)
        self.assertEqual(bash("archctl archive --from ", env), ["nas", "seedbox"])

    def test_unknown_shell_is_a_usage_error(self):
        r = run([BIN, "completion", "tcsh"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(run([BIN, "completion"]).returncode, 2)

    def test_bash_registers_the_function(self):
        r = run(["bash", "--norc", "--noprofile", "-c", f"source {shlex.quote(script('bash'))}; complete -p archctl"])
        self.assertEqual(r.stdout.strip(), "complete -F _archctl archctl")

    def test_zsh_script_goes_where_debian_zsh_looks(self):
        fpath = run(["zsh", "-f", "-c", "print -l $fpath"]).stdout.split()
        self.assertIn("/usr/share/zsh/vendor-completions", fpath)


class Completes(unittest.TestCase):
    def each(self, line, check):
        for shell, complete in SHELLS.items():
            with self.subTest(shell=shell, line=line):
                check(complete(line))

    def test_commands_also_after_global_options(self):
        for line in ["archctl ", f"archctl --config {CFG} ", f"archctl -v --state {TMP}/state "]:
            self.each(line, lambda got: self.assertTrue(COMMANDS <= set(got), got))

    def test_subcommands(self):
        self.each("archctl job ", lambda got: self.assertTrue({"list", "show", "cancel", "rm"} <= set(got), got))
        self.each("archctl plan ", lambda got: self.assertEqual(got, ["archive", "evict", "tier", "unarchive"]))

    def test_node_names_for_from_and_to(self):
        self.each("archctl archive --from ", lambda got: self.assertEqual(got, ["nas", "seedbox"]))
        self.each("archctl archive abcdef12 --to n", lambda got: self.assertEqual(got, ["nas"]))

    def test_node_names_from_the_config_on_the_line(self):
        env = dict(ENV, ARCHCTL_CONFIG=os.path.join(TMP, "missing.toml"))
        self.assertEqual(bash(f"archctl --config {CFG} archive --to ", env), ["nas", "seedbox"])
        self.assertEqual(bash("archctl archive --to ", env), [])

    def test_job_ids(self):
        for line in ["archctl job show ", "archctl job cancel 2026", "archctl resume "]:
            self.each(line, lambda got: self.assertEqual(got, JOBS))

    def test_tier_policies(self):
        for line in ["archctl tier ", "archctl plan tier "]:
            self.each(line, lambda got: self.assertEqual(got, ["nightly"]))
        self.each("archctl plan archive ", lambda got: self.assertNotIn("nightly", got))

    def test_each_command_offers_exactly_its_options(self):
        for cmd in ["plan", "archive", "evict", "tier", "status", "config"]:
            want = help_options(cmd)
            for shell, complete in SHELLS.items():
                with self.subTest(shell=shell, cmd=cmd):
                    got = {w for w in complete(f"archctl {cmd} --") if w.startswith("--")}
                    self.assertEqual(got, want)
        self.each("archctl plan --y", lambda got: self.assertEqual(got, []))


if __name__ == "__main__":
    unittest.main(verbosity=2)
