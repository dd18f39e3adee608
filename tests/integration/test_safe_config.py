#!/usr/bin/python3
"""Who may configure archctl (docs/design.md "Configuration", as git's safe.directory): a config
layer or a state directory that another user owns or that others can write is refused before
anything from it runs, with one line naming the path, its owner and mode and the fix, unless the
user config trusts it (safe.trusted). Run as root (as CI does) against files owned by `nobody`:
no exec transport command and no [notify] exec hook from such a layer runs, and `archctl config`
shows every layer's owner, mode and problem. Also: a credential inside a URL is masked by
`archctl config`, a node root with a '..' component is refused at config load, and TLS set-ups
gone wrong on a real Syncthing GUI and qBittorrent WebUI with HTTPS (an http:// URL, a
certificate that names another host, Syncthing's host check) say what is wrong and how to fix it."""

import json
import os
import pwd
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import unittest
from xml.etree import ElementTree

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flows  # noqa: E402
from lab import lab as lablib  # noqa: E402

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


def wait_for(check, what, timeout=60):
    return flows.wait(check, timeout=timeout, what=what, interval=0.1)


def https_up(port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as raw:
            with context.wrap_socket(raw):
                return True
    except OSError:
        return False


class Tls(unittest.TestCase):
    """A Syncthing whose GUI speaks TLS with its own generated certificate (it names the host,
    not 127.0.0.1) and a qBittorrent whose WebUI speaks HTTPS with that same certificate."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="archctl-tls-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.pids = []
        cls.addClassCleanup(cls.stop_all)
        home = os.path.join(cls.dir, "st")
        cls.st_port, listen = lablib.free_port(), lablib.free_port()
        cls.api_key = "stkey-tls-" + os.urandom(6).hex()
        lablib.write_syncthing_config(home, cls.st_port, listen, cls.api_key, "tls")
        config_xml = os.path.join(home, "config.xml")
        tree = ElementTree.parse(config_xml)
        tree.getroot().find("gui").set("tls", "true")
        tree.write(config_xml)
        env = dict(os.environ, STNODEFAULTFOLDER="1", STNOUPGRADE="1")
        cls.pids.append((lablib._spawn([lablib.ST_BIN, "serve", f"--home={home}", "--no-browser", "--no-restart",
                                        "--no-upgrade"], os.path.join(cls.dir, "st.log"), env=env), home))
        wait_for(lambda: https_up(cls.st_port), "Syncthing's TLS GUI")
        cls.cert = os.path.join(home, "https-cert.pem")
        cls.cert_name = ssl._ssl._test_decode_cert(cls.cert)["subject"][-1][0][1]  # its CN: the host name
        profile = os.path.join(cls.dir, "qb")
        cls.qb_port = lablib.free_port()
        password = "qbpw-" + os.urandom(6).hex()
        lablib.write_qb_config(profile, cls.qb_port, lablib.free_port(), password, os.path.join(cls.dir, "dl"), 100)
        with open(os.path.join(profile, "qBittorrent", "config", "qBittorrent.conf"), "a") as f:
            f.write(f"WebUI\\HTTPS\\Enabled=true\nWebUI\\HTTPS\\CertificatePath={cls.cert}\n"
                    f"WebUI\\HTTPS\\KeyPath={os.path.join(home, 'https-key.pem')}\n")
        cls.pids.append((lablib._spawn([lablib.QB_BIN, f"--profile={profile}", f"--webui-port={cls.qb_port}"],
                                       os.path.join(cls.dir, "qb.out")), profile))
        wait_for(lambda: https_up(cls.qb_port), "qBittorrent's HTTPS WebUI")
        cls.password_file = write(os.path.join(cls.dir, "qb.pw"), password + "\n")
        cls.key_file = write(os.path.join(cls.dir, "st.key"), cls.api_key + "\n")

    @classmethod
    def stop_all(cls):
        for pid, token in cls.pids:
            lablib.stop_pid(pid, token)

    def node_check(self, qb_url, st_url, ca_file=None):
        ca = [f"ca_file = {toml_str(ca_file)}"] if ca_file else []
        config = write(os.path.join(self.dir, "tls.toml"), "\n".join([
            "[nodes.n]", 'role = "cache"', f"qb_root = {toml_str(self.dir)}", f"sync_root = {toml_str(self.dir)}",
            "[nodes.n.qbittorrent]", f"url = {toml_str(qb_url)}", f"password_file = {toml_str(self.password_file)}", *ca,
            "[nodes.n.syncthing]", f"url = {toml_str(st_url)}", f"api_key_file = {toml_str(self.key_file)}", *ca, ""]))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARCHCTL_") or k == "ARCHCTL_BIN"}
        env["NO_COLOR"] = "1"
        proc = subprocess.run([BIN, "--config", config, "--state", os.path.join(self.dir, "state"), "node", "check", "n"],
                              capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout + proc.stderr

    def test_a_http_url_at_a_tls_server_says_the_server_speaks_tls(self):
        rc, out = self.node_check(f"http://127.0.0.1:{self.qb_port}", f"http://127.0.0.1:{self.st_port}")
        self.assertNotEqual(rc, 0, out)
        for service, port in (("qbittorrent", self.qb_port), ("syncthing", self.st_port)):
            self.assertIn(f"set nodes.n.{service}.url to https://127.0.0.1:{port}", out)
        self.assertEqual(out.count("the server speaks TLS (HTTPS), not plain HTTP"), 2, out)

    def test_b_certificate_for_another_name_is_named_with_the_fix(self):
        rc, out = self.node_check(f"https://127.0.0.1:{self.qb_port}", f"https://127.0.0.1:{self.st_port}", ca_file=self.cert)
        self.assertNotEqual(rc, 0, out)
        self.assertEqual(out.count(f"its TLS certificate is for '{self.cert_name}', not '127.0.0.1'"), 2, out)
        self.assertIn(f"https://{self.cert_name}:{self.st_port}", out)
        self.assertNotIn("API key", out)

    def test_c_the_certificate_name_then_meets_syncthing_host_check(self):
        try:
            reaches = socket.gethostbyname(self.cert_name) == "127.0.0.1"
        except OSError:
            reaches = False
        if not reaches:
            self.skipTest(f"'{self.cert_name}' does not resolve to 127.0.0.1 here")
        rc, out = self.node_check(f"https://{self.cert_name}:{self.qb_port}", f"https://{self.cert_name}:{self.st_port}",
                                  ca_file=self.cert)
        self.assertNotEqual(rc, 0, out)
        self.assertNotIn("rejected the API key", out)
        self.assertIn('("Host check error")', out)
        self.assertIn("insecureSkipHostcheck", out)
        # qBittorrent has no host check: its self-signed certificate, given as ca_file, verifies.
        self.assertNotIn(f"qBittorrent on 'n' (https://{self.cert_name}:{self.qb_port}): ", out)


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
