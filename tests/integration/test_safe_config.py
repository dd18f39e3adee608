#!/usr/bin/python3
"""Who may configure archctl (docs/design.md "Configuration", as git's safe.directory): a config
layer or a state directory that another user owns or that others can write is refused before
anything from it runs, with one line naming the path, its owner and mode and the fix, unless the
user config trusts it (safe.trusted). Run as root (as CI does) against files owned by `nobody`:
no exec transport command and no [notify] exec hook from such a layer runs, and `archctl config`
shows every layer's owner, mode and problem. Also: a credential inside a URL is masked by
`archctl config`, and a node root with a '..' component is refused at config load."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402

BIN = os.environ.get("ARCHCTL_BIN", "")
IS_ROOT = os.geteuid() == 0
try:
    NOBODY = pwd.getpwnam("nobody")
except KeyError:
    NOBODY = None
NEEDS_NOBODY = unittest.skipUnless(IS_ROOT and NOBODY is not None, "needs root and a 'nobody' user to own files")


def toml_str(text):
    return json.dumps(text)


def write(path, text, mode=0o600, owner=None):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner.pw_uid, owner.pw_gid)
    return path


def script(path, body):
    return write(path, "#!/bin/sh\n" + body + "\n", mode=0o755)


class Hostile(unittest.TestCase):
    """No services: the config refers to a node reached by an exec command (a marker script) and
    to a [notify] exec hook; a refused layer must run neither."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="archctl-safe-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.ran = os.path.join(self.dir, "ran")
        self.exec_script = script(os.path.join(self.dir, "evil_exec.sh"), f'id -u >> "{self.ran}"\nexit 1')
        self.hook = script(os.path.join(self.dir, "evil_hook.sh"), f'id -u >> "{self.ran}"')
        self.user = write(os.path.join(self.dir, "user.toml"), "")
        self.state = os.path.join(self.dir, "state")
        os.mkdir(self.state, 0o700)

    def evil_config(self, extra=""):
        return "\n".join([
            "[nodes.far]", 'role = "cache"', 'qb_root = "/srv/far/q"', 'sync_root = "/srv/far/s"',
            f"exec = [{toml_str(self.exec_script)}]",
            "[nodes.far.qbittorrent]", 'url = "http://127.0.0.1:9"',
            "[nodes.far.syncthing]", 'url = "http://127.0.0.1:9"',
            "[notify]", f"exec = [{toml_str(self.hook)}]", extra, ""])

    def archctl(self, *args, config=None, state=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHCTL_") or k == "ARCHCTL_BIN"}
        env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "xdg")
        env["NO_COLOR"] = "1"
        argv = [BIN, "--config", config or self.user, "--state", state or self.state, *args]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr

    def assert_nothing_ran(self):
        self.assertFalse(os.path.exists(self.ran), "a command from a refused layer ran")

    def assert_refusal(self, err, path, owner, mode):
        lines = [line for line in err.splitlines() if line.startswith("archctl: error:")]
        self.assertEqual(len(lines), 1, err)
        line = lines[0]
        for part in (f"'{path}'", owner, mode):
            self.assertIn(part, line, err)
        self.assertNotIn("hint:", err, "the fix is on the error line")
        self.assertRegex(line, r"chmod|chown|safe\.trusted", err)

    @NEEDS_NOBODY
    def test_a_state_dir_0777_with_a_config_owned_by_nobody_runs_nothing(self):
        os.chmod(self.state, 0o777)
        config = write(os.path.join(self.state, "config.toml"), self.evil_config(), mode=0o666, owner=NOBODY)
        for args in (["status"], ["node", "check", "far"], ["config"]):
            rc, out, err = self.archctl(*args)
            self.assertEqual(rc, 1, f"{args}: {err}{out}")
            self.assert_refusal(err, self.state, "root", "0777")
        self.assert_nothing_ran()
        # The state directory fixed, the file in it is refused for its own owner and mode.
        os.chmod(self.state, 0o700)
        rc, out, err = self.archctl("status")
        self.assertEqual(rc, 1, err + out)
        self.assert_refusal(err, config, "nobody", "0666")
        self.assert_nothing_ran()

    @NEEDS_NOBODY
    def test_b_config_lists_every_layer_with_its_owner_and_mode_problem(self):
        os.chmod(self.state, 0o777)
        config = write(os.path.join(self.state, "config.toml"), self.evil_config(), mode=0o666, owner=NOBODY)
        rc, out, err = self.archctl("config")
        self.assertEqual(rc, 1, err + out)
        self.assertNotIn("notify.exec", out, "a refused layer's settings are not read")
        text = out + err
        self.assertIn(self.state, text)
        self.assertIn(config, text)
        self.assertIn("nobody", text)
        self.assertIn("0666", text)
        self.assertIn("0777", text)
        rc, out, err = self.archctl("config", "--json")
        self.assertEqual(rc, 1, err + out)
        doc = json.loads(out)
        self.assertFalse(doc["ok"])
        layers = {layer["path"]: layer for layer in doc["layers"]}
        self.assertEqual(layers[self.state]["mode"], "0777")
        self.assertTrue(layers[self.state]["problems"])
        self.assertEqual(layers[config]["owner"], "nobody")
        self.assertEqual(layers[config]["mode"], "0666")
        self.assertTrue(layers[config]["problems"])
        self.assertEqual(layers[self.user]["problems"], [])
        self.assertNotIn("notify.exec", [s["key"] for s in doc["settings"]])
        self.assert_nothing_ran()

    @NEEDS_NOBODY
    def test_c_user_config_0666_owned_by_nobody_is_refused(self):
        ww = write(os.path.join(self.dir, "ww.toml"), self.evil_config(), mode=0o666, owner=NOBODY)
        for args in (["status"], ["config"]):
            rc, out, err = self.archctl(*args, config=ww)
            self.assertEqual(rc, 1, err + out)
            self.assert_refusal(err, ww, "nobody", "0666")
        self.assert_nothing_ran()

    def test_d_user_config_writable_by_others_is_refused(self):
        ww = write(os.path.join(self.dir, "ww.toml"), self.evil_config(), mode=0o666)
        rc, out, err = self.archctl("status", config=ww)
        self.assertEqual(rc, 1, err + out)
        self.assert_refusal(err, ww, pwd.getpwuid(os.geteuid()).pw_name, "0666")
        self.assert_nothing_ran()

    def test_e_state_dir_created_in_a_directory_others_can_write_is_refused(self):
        shared = os.path.join(self.dir, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        state = os.path.join(shared, "state")
        rc, out, err = self.archctl("job", "list", state=state)
        self.assertEqual(rc, 1, err + out)
        self.assert_refusal(err, shared, pwd.getpwuid(os.geteuid()).pw_name, "0777")
        self.assertFalse(os.path.exists(state), "no state directory was created")

    @NEEDS_NOBODY
    def test_f_trusted_layers_are_read(self):
        os.chmod(self.state, 0o777)
        config = write(os.path.join(self.state, "config.toml"), self.evil_config(), mode=0o666, owner=NOBODY)
        write(self.user, f"[safe]\ntrusted = [{toml_str(self.state)}, {toml_str(config)}]\n")
        rc, out, err = self.archctl("config")
        self.assertEqual(rc, 0, err + out)
        self.assertIn("notify.exec", out)
        self.assertIn("trusted", out)
        # What a trusted layer configures runs: the far end's command is the marker script.
        rc, out, err = self.archctl("node", "check", "far")
        self.assertTrue(os.path.exists(self.ran), err + out)

    def test_g_url_credentials_are_masked(self):
        write(self.user, "\n".join([
            "[nodes.n]", 'role = "cache"', 'qb_root = "/srv/q"', 'sync_root = "/srv/s"',
            "[nodes.n.qbittorrent]", 'url = "http://admin:pw-in-url-distinctive@host:8080"',
            "[nodes.n.syncthing]", 'url = "https://key:st-in-url-distinctive@host:8384/"',
            "[notify]", 'url = "https://hook:notify-in-url-distinctive@hooks.example/x"', ""]))
        for json_flag in ([], ["--json"]):
            rc, out, err = self.archctl("config", *json_flag)
            self.assertEqual(rc, 0, err + out)
            for secret in ("pw-in-url-distinctive", "st-in-url-distinctive", "notify-in-url-distinctive"):
                self.assertNotIn(secret, out + err)
            self.assertIn("http://admin:<set>@host:8080", out)

    def test_h_node_root_with_dot_dot_is_refused_at_load(self):
        write(self.user, "\n".join([
            "[nodes.n]", 'role = "cache"', 'qb_root = "/srv/q/../../etc"', 'sync_root = "/srv/s"',
            "[nodes.n.qbittorrent]", 'url = "http://127.0.0.1:9"',
            "[nodes.n.syncthing]", 'url = "http://127.0.0.1:9"', ""]))
        for args in (["config"], ["status"], ["node", "check", "n"]):
            rc, out, err = self.archctl(*args)
            self.assertEqual(rc, 1, f"{args}: {err}{out}")
            lines = [line for line in err.splitlines() if line.startswith("archctl: error:")]
            self.assertEqual(len(lines), 1, err)
            self.assertIn("nodes.n.qb_root", lines[0])
            self.assertIn("'..'", lines[0])
            self.assertNotIn("--root", err)


LAB = flows.SuiteLab(nodes=[("cache1", "cache"), ("archive1", "archive")], routes=[("cache1", "archive1")])


class HookFromStateConfig(unittest.TestCase):
    """The case as seen: a shared (0777) state directory whose config.toml, owned by nobody and
    writable by all, sets a [notify] exec hook; `archctl archive … --yes` as root."""

    @classmethod
    def setUpClass(cls):
        if not (IS_ROOT and NOBODY is not None):
            raise unittest.SkipTest("needs root and a 'nobody' user to own files")
        LAB.set_up()

    @NEEDS_NOBODY
    def test_archive_runs_no_hook_from_a_config_others_can_write(self):
        _, tid, _, _ = flows.seed_resource(LAB, "hooked", {"pay/a.bin": 50000}, seed=3001)
        out_file = os.path.join(LAB.dir, "hook-ran")
        hook = script(os.path.join(LAB.dir, "evil_hook.sh"), f'id -u >> "{out_file}"\ncat >/dev/null')
        state = LAB.state_dir
        mode = stat.S_IMODE(os.stat(state).st_mode)
        state_config = os.path.join(state, "config.toml")
        self.addCleanup(os.chmod, state, mode)
        self.addCleanup(lambda: os.path.exists(state_config) and os.unlink(state_config))
        os.chmod(state, 0o777)
        write(state_config, f"[notify]\nexec = [{toml_str(hook)}]\n", mode=0o666, owner=NOBODY)
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", timeout=300)
        self.assertEqual(rc, 1, err + out)
        self.assertIn(f"'{state}'", err)
        self.assertIn("0777", err)
        self.assertFalse(os.path.exists(out_file), "the hook ran")
        self.assertEqual(LAB.qb("archive1").info([tid]), [], "nothing was archived")
        # Trusted by the user config, the same layers are read and the hook runs at the job's end.
        trusting = write(os.path.join(LAB.dir, "trusting.toml"),
                         LAB.lab.config_text() + f"\n[safe]\ntrusted = [{toml_str(state)}, {toml_str(state_config)}]\n")
        rc, out, err = LAB.archctl("archive", tid[:12], "--yes", config=trusting, timeout=300)
        self.assertEqual(rc, 0, err + out)
        with open(out_file) as f:
            self.assertEqual(f.read().split(), ["0"])


if __name__ == "__main__":
    unittest.main()
