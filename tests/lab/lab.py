#!/usr/bin/python3
"""The local lab: real qbittorrent-nox and syncthing instances on 127.0.0.1, fully offline.

Every node gets one qBittorrent and one Syncthing, each with its own free ports, profile/home
directory, distinctive random credentials (tests assert they never leak) and a qb_root and
sync_root under the lab directory. The lab writes an archctl config for the nodes (docs/design.md
"Configuration" schema, secrets in 0600 *_file files) and a lab.json describing everything: ports, pids,
directories, device ids, config path.

Processes are stopped by recorded PID only, never by name: SIGTERM, wait with a deadline,
SIGKILL after it; /proc/<pid>/cmdline must name the instance's profile/home before any signal
is sent (PIDs are reused). Syncthing's recorded PID is its monitor process; its child is
recorded too and checked after the monitor exits.

Module use (integration tests):

    from lab.lab import Lab
    with Lab(nodes=[("cache1", "cache"), ("archive1", "archive")]) as lab:
        lab.qb("cache1").info()
        rc, out, err = lab.archctl("status", "--json")

The integration suites start their lab through tests/integration/flows.py (SuiteLab: one lab
per suite file, stopped and checked by a module cleanup).

CLI:
    lab.py start --dir D --nodes cache1:cache,archive1:archive [--extra-qb N]
    lab.py status --dir D
    lab.py stop --dir D
"""

import argparse
import base64
import errno
import hashlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
QB_BIN = "qbittorrent-nox"
ST_BIN = "syncthing"


class LabError(Exception):
    """A lab instance failed to start, crashed or hung; the message carries its log tail."""


# --------------------------------------------------------------------------------------------
# Ports and processes

_taken_ports = set()


def _port_is_free(port):
    """True when nothing listens on 127.0.0.1:port and we can bind it (TCP and UDP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.2)
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_port():
    """A port on 127.0.0.1 that is free now and not handed out before by this process."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port in _taken_ports or port < 10000:
            continue
        if _port_is_free(port):
            _taken_ports.add(port)
            return port
    raise LabError("no free TCP port found on 127.0.0.1")


def _proc_state(pid):
    """'R', 'S', 'Z', … from /proc/<pid>/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return data[data.rfind(")") + 2:].split()[0]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return ""


def alive(pid, token):
    """True when `pid` runs and its command line contains `token` (its profile/home dir).

    A child this process started is asked through its Popen: its pid cannot be reused before we
    reap it, and right after exec its /proc cmdline can still read empty (the kernel sets the
    argument area after the close-on-exec pipe that Popen waits for is closed), which once made
    a starting qBittorrent look dead."""
    if not pid:
        return False
    proc = _popen.get(pid)
    if proc is not None:
        return proc.poll() is None
    for _ in range(20):
        state = _proc_state(pid)
        if state is None or state == "Z":
            return False
        cmdline = _cmdline(pid)
        if cmdline:
            return token in cmdline
        time.sleep(0.01)  # exec in progress: the argument area is not set yet
    return False


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry))
    return out


_popen = {}  # pid -> Popen of the instances this process started (reaped through it)


def _reap(pid):
    """Collect `pid` if it is our child (no-op otherwise)."""
    proc = _popen.get(pid)
    if proc is not None:
        if proc.poll() is not None:
            del _popen[pid]
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    except OSError as e:
        if e.errno != errno.ECHILD:
            raise


def stop_pid(pid, token, timeout=STOP_TIMEOUT_S):
    """SIGTERM `pid` if it is the instance named by `token`, wait, SIGKILL after the deadline.

    Returns "not running", "stopped" or "killed" (it ignored SIGTERM for `timeout` seconds)."""
    if not alive(pid, token):
        _reap(pid)
        return "not running"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not alive(pid, token):
            return "stopped"
        time.sleep(0.05)
    if alive(pid, token):
        os.kill(pid, signal.SIGKILL)
        kill_deadline = time.monotonic() + 5
        while time.monotonic() < kill_deadline and alive(pid, token):
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)
    return "killed"


def log_tail(path, lines=25):
    try:
        with open(path, "rb") as f:
            data = f.read()[-16384:].decode(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(data.splitlines()[-lines:])


def _spawn(argv, log_path, env=None):
    log = open(log_path, "ab")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, close_fds=True)
    finally:
        log.close()
    _popen[proc.pid] = proc
    return proc.pid


# --------------------------------------------------------------------------------------------
# Small HTTP clients for tests (urllib only)

class HttpError(Exception):
    def __init__(self, status, body, what):
        super().__init__(f"{what}: HTTP {status}: {body[:200]!r}")
        self.status = status
        self.body = body


def _multipart(fields, files):
    boundary = "----archctl-lab-" + uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, filename, data in files:
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                "Content-Type: application/x-bittorrent\r\n\r\n")
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class QbClient:
    """Just enough of qBittorrent's WebUI API for tests to arrange and inspect state."""

    def __init__(self, url, username, password):
        self.url = url.rstrip("/")
        self.username = username
        self.password = password
        self._jar = http.cookiejar.CookieJar()
        self._opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self._jar))
        self._logged_in = False
        self._uploads = 0

    def _raw(self, method, endpoint, query=None, form=None, body=None, content_type=None, timeout=30):
        url = f"{self.url}/api/v2/{endpoint}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = body
        headers = {}
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def login(self):
        status, body = self._raw("POST", "auth/login", form={"username": self.username, "password": self.password})
        text = body.decode(errors="replace").strip()
        if status not in (200, 204) or text == "Fails.":
            raise HttpError(status, text, "qBittorrent login")
        self._logged_in = True
        return text

    def call(self, method, endpoint, **kw):
        if not self._logged_in:
            self.login()
        status, body = self._raw(method, endpoint, **kw)
        if status == 403:
            self.login()
            status, body = self._raw(method, endpoint, **kw)
        if status >= 300:
            raise HttpError(status, body.decode(errors="replace"), endpoint)
        return body

    def json(self, endpoint, **query):
        return json.loads(self.call("GET", endpoint, query=query or None))

    def post(self, endpoint, **form):
        return self.call("POST", endpoint, form=form)

    # -- calls tests use
    def version(self):
        return self.call("GET", "app/version").decode().strip()

    def info(self, hashes=None):
        return self.json("torrents/info", **({"hashes": "|".join(hashes)} if hashes else {}))

    def torrent(self, torrent_id):
        found = self.info([torrent_id])
        return found[0] if found else None

    def files(self, torrent_id):
        return self.json("torrents/files", hash=torrent_id)

    def properties(self, torrent_id):
        return self.json("torrents/properties", hash=torrent_id)

    def export(self, torrent_id):
        return self.call("GET", "torrents/export", query={"hash": torrent_id})

    def add_torrent(self, data, save_path, paused=True, skip_checking=False, layout="Original"):
        """layout: qBittorrent's contentLayout (Original, Subfolder, NoSubfolder)."""
        self._uploads += 1
        flag = "true" if paused else "false"
        fields = {"savepath": save_path, "autoTMM": "false", "paused": flag, "stopped": flag,
                  "skip_checking": "true" if skip_checking else "false", "contentLayout": layout,
                  "useDownloadPath": "false"}
        body, ctype = _multipart(fields, [("torrents", f"lab-{os.getpid()}-{self._uploads}.torrent", data)])
        text = self.call("POST", "torrents/add", body=body, content_type=ctype).decode().strip()
        if text == "Fails.":
            raise HttpError(200, text, "torrents/add")
        return text

    def recheck(self, torrent_id):
        self.post("torrents/recheck", hashes=torrent_id)

    def pause(self, torrent_id):
        self.post("torrents/pause", hashes=torrent_id)

    def resume(self, torrent_id):
        self.post("torrents/resume", hashes=torrent_id)

    def file_prio(self, torrent_id, ids, priority):
        self.post("torrents/filePrio", hash=torrent_id, id="|".join(str(i) for i in ids), priority=str(priority))

    def add_peers(self, torrent_id, peers):
        return self.post("torrents/addPeers", hashes=torrent_id, peers="|".join(peers))

    def delete(self, torrent_id, delete_files=False):
        self.post("torrents/delete", hashes=torrent_id, deleteFiles="true" if delete_files else "false")

    def set_preferences(self, prefs):
        self.post("app/setPreferences", json=json.dumps(prefs))

    def wait_for(self, torrent_id, predicate, timeout=30.0, what="condition"):
        """Poll torrents/info until predicate(torrent) holds; returns the torrent."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.torrent(torrent_id)
            if last is not None and predicate(last):
                return last
            time.sleep(0.1)
        raise LabError(f"timed out after {timeout}s waiting for {what} on {torrent_id}: last {last}")


class StClient:
    """Just enough of Syncthing's REST API for tests."""

    def __init__(self, url, api_key):
        self.url = url.rstrip("/")
        self.api_key = api_key

    def request(self, method, path, body=None, timeout=30, **query):
        url = f"{self.url}/rest/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"X-API-Key": self.api_key}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise HttpError(e.code, e.read().decode(errors="replace"), path) from None
        return json.loads(raw) if raw.strip() else None

    def get(self, path, **query):
        return self.request("GET", path, **query)

    def ping(self):
        return self.get("system/ping")

    def my_id(self):
        return self.get("system/status")["myID"]

    def db_status(self, folder):
        return self.get("db/status", folder=folder)

    def scan(self, folder, sub=None):
        query = {"folder": folder}
        if sub:
            query["sub"] = sub
        return self.request("POST", "db/scan", timeout=120, **query)


# --------------------------------------------------------------------------------------------
# Instance setup

def qb_password_hash(password):
    """qBittorrent's WebUI\\Password_PBKDF2 value: PBKDF2-HMAC-SHA512, 100000 rounds, 16-byte salt."""
    salt = os.urandom(16)
    key = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 100000, 64)
    return "@ByteArray(%s:%s)" % (base64.b64encode(salt).decode(), base64.b64encode(key).decode())


def write_qb_config(profile, webui_port, bt_port, password, save_path, refresh_ms):
    conf_dir = os.path.join(profile, "qBittorrent", "config")
    os.makedirs(conf_dir, exist_ok=True)
    text = f"""[LegalNotice]
Accepted=true

[BitTorrent]
Session\\DHTEnabled=false
Session\\LSDEnabled=false
Session\\PeXEnabled=false
Session\\Port={bt_port}
Session\\InterfaceAddress=127.0.0.1
Session\\QueueingSystemEnabled=false
Session\\AddTrackersEnabled=false
Session\\DefaultSavePath={save_path}
Session\\TempPathEnabled=false
Session\\RefreshInterval={refresh_ms}
Session\\AddTorrentPaused=true

[Network]
PortForwardingEnabled=false

[Preferences]
Connection\\ResolvePeerCountries=false
General\\Locale=en
WebUI\\Enabled=true
WebUI\\Address=127.0.0.1
WebUI\\Port={webui_port}
WebUI\\UseUPnP=false
WebUI\\Username=admin
WebUI\\Password_PBKDF2="{qb_password_hash(password)}"
WebUI\\LocalHostAuth=true
WebUI\\MaxAuthenticationFailCount=0
"""
    with open(os.path.join(conf_dir, "qBittorrent.conf"), "w") as f:
        f.write(text)


def _set(parent, tag, value):
    el = parent.find(tag)
    if el is None:
        el = ET.SubElement(parent, tag)
    el.text = value


def write_syncthing_config(home, gui_port, listen_port, api_key, name):
    """`syncthing generate`, then make it loopback-only and offline before the first serve."""
    out = subprocess.run([ST_BIN, "generate", f"--home={home}", "--no-default-folder", "--skip-port-probing"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, STNODEFAULTFOLDER="1"))
    if out.returncode != 0:
        raise LabError(f"syncthing generate failed for {home}: {out.stdout}{out.stderr}")
    match = re.search(r"Device ID:\s*([A-Z0-9-]{50,})", out.stdout + out.stderr)
    path = os.path.join(home, "config.xml")
    tree = ET.parse(path)
    root = tree.getroot()
    gui = root.find("gui")
    gui.set("tls", "false")
    _set(gui, "address", f"127.0.0.1:{gui_port}")
    _set(gui, "apikey", api_key)
    options = root.find("options")
    for el in options.findall("listenAddress"):
        options.remove(el)
    ET.SubElement(options, "listenAddress").text = f"tcp://127.0.0.1:{listen_port}"
    for tag, value in (("globalAnnounceEnabled", "false"), ("localAnnounceEnabled", "false"),
                       ("relaysEnabled", "false"), ("natEnabled", "false"), ("urAccepted", "-1"),
                       ("crashReportingEnabled", "false"), ("autoUpgradeIntervalH", "0"),
                       ("startBrowser", "false"), ("announceLANAddresses", "false"),
                       ("stunKeepaliveStartS", "0")):
        _set(options, tag, value)
    device_id = match.group(1) if match else None
    for dev in root.findall("device"):
        if device_id is None:
            device_id = dev.get("id")
        if dev.get("id") == device_id:
            dev.set("name", name)
    tree.write(path)
    return device_id


def _wait_until(check, deadline, pid, token, what, log):
    last_error = None
    while time.monotonic() < deadline:
        if not alive(pid, token):
            raise LabError(f"{what} exited during startup (pid {pid}); log tail:\n{log_tail(log)}")
        try:
            if check():
                return
        except Exception as e:  # not answering yet
            last_error = e
        time.sleep(0.1)
    raise LabError(f"{what} did not answer within {READY_TIMEOUT_S:.0f}s ({last_error}); log tail:\n{log_tail(log)}")


def _toml_str(s):
    return json.dumps(s)  # TOML basic strings accept JSON escapes for what we write


# --------------------------------------------------------------------------------------------
# The lab

class Lab:
    """N nodes (qBittorrent + Syncthing each) plus optional extra qBittorrent instances."""

    def __init__(self, nodes=(("cache1", "cache"), ("archive1", "archive")), directory=None, extra_qb=0,
                 refresh_ms=100, keep=None):
        self.nodes_spec = [tuple(n) for n in nodes]
        if len(self.nodes_spec) < 1:
            raise LabError("a lab needs at least one node")
        self._own_dir = directory is None
        self.dir = os.path.abspath(directory or tempfile.mkdtemp(prefix="archctl-lab-"))
        self.extra_qb = extra_qb
        self.refresh_ms = refresh_ms
        self.keep = keep if keep is not None else os.environ.get("ARCHCTL_LAB_KEEP") == "1"
        self.info = None
        self.lab_json = os.path.join(self.dir, "lab.json")

    # -- lifecycle
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    @classmethod
    def load(cls, directory):
        """A Lab for an existing lab.json (CLI stop/status)."""
        with open(os.path.join(directory, "lab.json")) as f:
            info = json.load(f)
        lab = cls(nodes=[(n["name"], n["role"]) for n in info["nodes"]], directory=directory)
        lab.info = info
        return lab

    def _save(self):
        tmp = self.lab_json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.info, f, indent=2)
        os.replace(tmp, self.lab_json)

    def _new_qb(self, name, base):
        os.makedirs(base, exist_ok=True)
        inst = {
            "name": name,
            "profile": os.path.join(base, "qb"),
            "webui_port": free_port(),
            "bt_port": free_port(),
            "username": "admin",
            "password": "qbpw-" + secrets.token_hex(10),
            "log": os.path.join(base, "qb.out"),
            "pid": None,
        }
        inst["url"] = f"http://127.0.0.1:{inst['webui_port']}"
        inst["save_path"] = os.path.join(base, "downloads")
        os.makedirs(inst["save_path"], exist_ok=True)
        write_qb_config(inst["profile"], inst["webui_port"], inst["bt_port"], inst["password"], inst["save_path"],
                        self.refresh_ms)
        return inst

    def _new_st(self, name, base):
        inst = {
            "name": name,
            "home": os.path.join(base, "st"),
            "gui_port": free_port(),
            "listen_port": free_port(),
            "api_key": "stkey-" + secrets.token_hex(14),
            "log": os.path.join(base, "st.log"),
            "pid": None,
            "child_pid": None,
        }
        inst["url"] = f"http://127.0.0.1:{inst['gui_port']}"
        inst["address"] = f"tcp://127.0.0.1:{inst['listen_port']}"
        inst["device_id"] = write_syncthing_config(inst["home"], inst["gui_port"], inst["listen_port"],
                                                   inst["api_key"], name)
        return inst

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        archctl_dir = os.path.join(self.dir, "archctl")
        secrets_dir = os.path.join(archctl_dir, "secrets")
        state_dir = os.path.join(archctl_dir, "state")
        for d in (archctl_dir, secrets_dir, state_dir):
            os.makedirs(d, exist_ok=True)
        os.chmod(secrets_dir, 0o700)
        self.info = {"dir": self.dir, "config": os.path.join(archctl_dir, "config.toml"), "state_dir": state_dir,
                     "nodes": [], "extra_qb": [], "started": time.time()}
        for name, role in self.nodes_spec:
            base = os.path.join(self.dir, "nodes", name)
            node = {"name": name, "role": role,
                    "qb_root": os.path.join(base, "qb_root"), "sync_root": os.path.join(base, "sync_root"),
                    "qb": self._new_qb(name, base), "st": self._new_st(name, base)}
            os.makedirs(node["qb_root"], exist_ok=True)
            os.makedirs(node["sync_root"], exist_ok=True)
            self.info["nodes"].append(node)
        for i in range(self.extra_qb):
            name = f"extra{i + 1}"
            self.info["extra_qb"].append(self._new_qb(name, os.path.join(self.dir, "extra", name)))
        self._write_archctl_config(secrets_dir)
        self._save()
        for node in self.info["nodes"]:
            self._spawn_qb(node["qb"])
            self._spawn_st(node["st"])
        for inst in self.info["extra_qb"]:
            self._spawn_qb(inst)
        self._save()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for inst in self._all_qb():
            self._wait_qb(inst, deadline)
        for node in self.info["nodes"]:
            self._wait_st(node["st"], deadline)
        self._save()
        return self

    def _write_archctl_config(self, secrets_dir):
        for node in self.info["nodes"]:
            name, qb, st = node["name"], node["qb"], node["st"]
            qb_secret = os.path.join(secrets_dir, f"{name}.qb")
            st_secret = os.path.join(secrets_dir, f"{name}.st")
            for path, value in ((qb_secret, qb["password"]), (st_secret, st["api_key"])):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(value + "\n")
                os.chmod(path, 0o600)
            qb["password_file"] = qb_secret
            st["api_key_file"] = st_secret
        with open(self.info["config"], "w") as f:
            f.write(self.config_text())

    def bt_backup(self, name):
        """Where node `name`'s qBittorrent keeps each torrent's .torrent (<id>.torrent)."""
        return os.path.join(self.node(name)["qb"]["profile"], "qBittorrent", "data", "BT_backup")

    def config_text(self, node_exec=None, node_timeout=None, bt_backup=()):
        """The archctl config of the lab. By default every node is `transport = "local"`;
        node_exec {node name: argv} makes those nodes exec nodes (e.g. `ssh ... archctl node
        serve --root ...`), node_timeout {node name: duration} sets their `timeout`, and the nodes
        named in bt_backup get `qbittorrent.bt_backup` (archctl reads torrents there)."""
        node_exec = node_exec or {}
        node_timeout = node_timeout or {}
        lines = ["# archctl config for the lab in " + self.dir,
                 f"state_dir = {_toml_str(self.info['state_dir'])}", "",
                 "[transfer]", 'min_free = "0"', ""]
        for node in self.info["nodes"]:
            name, qb, st = node["name"], node["qb"], node["st"]
            if name in node_exec:
                transport = ['transport = "exec"', "exec = [" + ", ".join(_toml_str(a) for a in node_exec[name]) + "]"]
            else:
                transport = ['transport = "local"']
            if name in node_timeout:
                transport.append(f"timeout = {_toml_str(node_timeout[name])}")
            lines += [f"[nodes.{name}]",
                      f"role = {_toml_str(node['role'])}",
                      f"qb_root = {_toml_str(node['qb_root'])}",
                      f"sync_root = {_toml_str(node['sync_root'])}",
                      *transport,
                      f"[nodes.{name}.qbittorrent]",
                      f"url = {_toml_str(qb['url'])}",
                      f"username = {_toml_str(qb['username'])}",
                      f"password_file = {_toml_str(qb['password_file'])}",
                      *([f"bt_backup = {_toml_str(self.bt_backup(name))}"] if name in bt_backup else []),
                      f"[nodes.{name}.syncthing]",
                      f"url = {_toml_str(st['url'])}",
                      f"api_key_file = {_toml_str(st['api_key_file'])}",
                      f"addresses = [{_toml_str(st['address'])}]",
                      ""]
        return "\n".join(lines)

    def _spawn_qb(self, inst):
        argv = [QB_BIN, f"--profile={inst['profile']}", f"--webui-port={inst['webui_port']}"]
        inst["pid"] = _spawn(argv, inst["log"])

    def _spawn_st(self, inst):
        env = dict(os.environ, STNODEFAULTFOLDER="1", STNOUPGRADE="1")
        argv = [ST_BIN, "serve", f"--home={inst['home']}", "--no-browser", "--no-restart", "--no-upgrade",
                "--logflags=3"]
        inst["pid"] = _spawn(argv, inst["log"], env=env)
        inst["child_pid"] = None

    def _qb_log(self, inst):
        return os.path.join(inst["profile"], "qBittorrent", "data", "logs", "qbittorrent.log")

    def _wait_qb(self, inst, deadline, retries=1):
        client = QbClient(inst["url"], inst["username"], inst["password"])
        try:
            _wait_until(lambda: client.login() == "Ok.", deadline, inst["pid"], inst["profile"],
                        f"qBittorrent '{inst['name']}' ({inst['url']})", self._qb_log(inst))
        except LabError as e:
            # An instance that died at once (seen rarely, before it wrote any log) gets one more start.
            output = log_tail(inst["log"], 10)
            if retries <= 0 or "exited during startup" not in str(e):
                raise LabError(f"{e.args[0]}\noutput:\n{output}") from e
            print(f"lab: {e.args[0].splitlines()[0]}; output:\n{output}\nstarting it again", file=sys.stderr)
            self._spawn_qb(inst)
            self._save()
            self._wait_qb(inst, max(deadline, time.monotonic() + 15), retries - 1)

    def _wait_st(self, inst, deadline):
        client = StClient(inst["url"], inst["api_key"])
        _wait_until(lambda: client.ping() == {"ping": "pong"}, deadline, inst["pid"], inst["home"],
                    f"Syncthing '{inst['name']}' ({inst['url']})", inst["log"])
        kids = [p for p in _children(inst["pid"]) if inst["home"] in _cmdline(p)]
        inst["child_pid"] = kids[0] if kids else None
        my_id = client.my_id()
        if inst["device_id"] and inst["device_id"] != my_id:
            raise LabError(f"Syncthing '{inst['name']}' reports device {my_id}, generate said {inst['device_id']}")
        inst["device_id"] = my_id

    def _all_qb(self):
        return [n["qb"] for n in self.info["nodes"]] + list(self.info["extra_qb"])

    def _find_qb(self, name):
        for inst in self._all_qb():
            if inst["name"] == name:
                return inst
        raise KeyError(f"no qBittorrent named {name!r} in the lab")

    def node(self, name):
        for n in self.info["nodes"]:
            if n["name"] == name:
                return n
        raise KeyError(f"no node named {name!r} in the lab")

    def stop(self):
        """Stop every instance by recorded PID; report crashed/hung ones with their log tail."""
        if not self.info:
            return []
        problems = self.crashed()
        for inst in self._all_qb():
            outcome = stop_pid(inst.get("pid"), inst["profile"])
            if outcome == "killed":
                problems.append(f"qBittorrent '{inst['name']}' ignored SIGTERM; log tail:\n{log_tail(self._qb_log(inst))}")
        for node in self.info["nodes"]:
            st = node["st"]
            outcome = stop_pid(st.get("pid"), st["home"])
            if outcome == "killed":
                problems.append(f"Syncthing '{st['name']}' ignored SIGTERM; log tail:\n{log_tail(st['log'])}")
            child = st.get("child_pid")
            if child and stop_pid(child, st["home"], timeout=5) == "killed":
                problems.append(f"Syncthing '{st['name']}' child {child} outlived its monitor")
        leftover = self.running_pids()
        if leftover:
            problems.append(f"processes still running after stop: {leftover}")
        self.info["stopped"] = time.time()
        if os.path.isdir(self.dir):
            self._save()
        if self._own_dir and not self.keep and not leftover:
            shutil.rmtree(self.dir, ignore_errors=True)
        if problems:
            sys.stderr.write("lab: " + "\nlab: ".join(problems) + "\n")
        return problems

    # -- inspection
    def crashed(self):
        """Instances that exited although the lab did not stop them, each with its log tail."""
        out = []
        for inst in self._all_qb():
            if inst.get("pid") and not inst.get("stopped_on_purpose") and not alive(inst["pid"], inst["profile"]):
                out.append(f"qBittorrent '{inst['name']}' (pid {inst['pid']}) exited on its own; log tail:\n"
                           f"{log_tail(self._qb_log(inst))}\n{log_tail(inst['log'], 10)}")
        for node in self.info["nodes"]:
            st = node["st"]
            if st.get("pid") and not st.get("stopped_on_purpose") and not alive(st["pid"], st["home"]):
                out.append(f"Syncthing '{st['name']}' (pid {st['pid']}) exited on its own; log tail:\n{log_tail(st['log'])}")
        return out

    def recorded_pids(self):
        """(pid, token) for every process the lab started."""
        out = []
        for inst in self._all_qb():
            if inst.get("pid"):
                out.append((inst["pid"], inst["profile"]))
        for node in self.info["nodes"]:
            st = node["st"]
            for key in ("pid", "child_pid"):
                if st.get(key):
                    out.append((st[key], st["home"]))
        return out

    def running_pids(self):
        return [pid for pid, token in self.recorded_pids() if alive(pid, token)]

    def assert_all_stopped(self):
        running = self.running_pids()
        if running:
            raise AssertionError(f"lab processes still running: {running}")

    def status(self):
        """Per instance: pid alive and API answering."""
        rows = []
        for inst in self._all_qb():
            up = alive(inst.get("pid"), inst["profile"])
            answering = False
            if up:
                try:
                    QbClient(inst["url"], inst["username"], inst["password"]).login()
                    answering = True
                except Exception:
                    pass
            rows.append({"kind": "qbittorrent", "name": inst["name"], "pid": inst.get("pid"), "url": inst["url"],
                         "running": up, "answering": answering})
        for node in self.info["nodes"]:
            st = node["st"]
            up = alive(st.get("pid"), st["home"])
            answering = False
            if up:
                try:
                    answering = StClient(st["url"], st["api_key"]).ping() == {"ping": "pong"}
                except Exception:
                    pass
            rows.append({"kind": "syncthing", "name": st["name"], "pid": st.get("pid"), "url": st["url"],
                         "device_id": st["device_id"], "running": up, "answering": answering})
        return rows

    def secrets(self):
        """Every password and API key in the lab (tests assert none of them leaks)."""
        values = [inst["password"] for inst in self._all_qb()]
        values += [n["st"]["api_key"] for n in self.info["nodes"]]
        return values

    # -- helpers for tests
    @property
    def config_path(self):
        return self.info["config"]

    @property
    def state_dir(self):
        return self.info["state_dir"]

    def qb(self, name):
        inst = self._find_qb(name)
        return QbClient(inst["url"], inst["username"], inst["password"])

    def st(self, name):
        st = self.node(name)["st"]
        return StClient(st["url"], st["api_key"])

    def stop_qb(self, name):
        inst = self._find_qb(name)
        stop_pid(inst["pid"], inst["profile"])
        inst["stopped_on_purpose"] = True
        self._save()

    def start_qb(self, name):
        inst = self._find_qb(name)
        if alive(inst.get("pid"), inst["profile"]):
            return
        self._spawn_qb(inst)
        inst["stopped_on_purpose"] = False
        self._wait_qb(inst, time.monotonic() + READY_TIMEOUT_S)
        self._save()

    def kill_qb(self, name):
        """SIGKILL a qBittorrent (no chance to save its state), as a crash or an OOM kill would."""
        inst = self._find_qb(name)
        if alive(inst.get("pid"), inst["profile"]):
            os.kill(inst["pid"], signal.SIGKILL)
            deadline = time.monotonic() + 10
            while alive(inst["pid"], inst["profile"]) and time.monotonic() < deadline:
                _reap(inst["pid"])
                time.sleep(0.05)
        inst["stopped_on_purpose"] = True
        self._save()

    def stop_st(self, name):
        """Stop a node's Syncthing (its monitor and the serving child)."""
        st = self.node(name)["st"]
        stop_pid(st.get("pid"), st["home"])
        if st.get("child_pid"):
            stop_pid(st["child_pid"], st["home"], timeout=5)
        st["stopped_on_purpose"] = True
        self._save()

    def start_st(self, name):
        st = self.node(name)["st"]
        if alive(st.get("pid"), st["home"]):
            return
        self._spawn_st(st)
        st["stopped_on_purpose"] = False
        self._wait_st(st, time.monotonic() + READY_TIMEOUT_S)
        self._save()

    def archctl_command(self, *args, env=None, state=None, config=None):
        """(argv, environment) of an ARCHCTL_BIN run with the lab's config (or the file
        `config`) and the state dir `state` (default: the lab's): no ARCHCTL_CONFIG, NO_COLOR
        unless set, the lab's own XDG_CONFIG_HOME, then `env` on top."""
        binary = os.environ.get("ARCHCTL_BIN")
        if not binary:
            raise LabError("ARCHCTL_BIN is not set (ctest sets it to the built archctl)")
        full_env = dict(os.environ)
        full_env.pop("ARCHCTL_CONFIG", None)
        full_env.setdefault("NO_COLOR", "1")
        full_env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "xdg-config")
        if env:
            full_env.update(env)
        return [binary, "--config", config or self.config_path, "--state", state or self.state_dir, *args], full_env

    def archctl(self, *args, env=None, timeout=120, input=None, state=None, config=None):
        """Run ARCHCTL_BIN with the lab's config (or `config`) and state dir (or `state`);
        returns (rc, stdout, stderr)."""
        argv, full_env = self.archctl_command(*args, env=env, state=state, config=config)
        proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=timeout, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr


# --------------------------------------------------------------------------------------------
# CLI

def _parse_nodes(text):
    nodes = []
    for item in text.split(","):
        name, _, role = item.partition(":")
        if not name or role not in ("cache", "archive"):
            raise SystemExit(f"lab.py: bad node {item!r} (want name:cache or name:archive)")
        nodes.append((name, role))
    return nodes


def main(argv=None):
    parser = argparse.ArgumentParser(description="archctl's local qBittorrent + Syncthing lab")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start")
    p_start.add_argument("--dir", required=True)
    p_start.add_argument("--nodes", default="cache1:cache,archive1:archive")
    p_start.add_argument("--extra-qb", type=int, default=0)
    for name in ("stop", "status"):
        sub.add_parser(name).add_argument("--dir", required=True)
    args = parser.parse_args(argv)

    if args.cmd == "start":
        lab = Lab(nodes=_parse_nodes(args.nodes), directory=args.dir, extra_qb=args.extra_qb)
        try:
            lab.start()
        except LabError as e:
            lab.stop()
            print(f"lab.py: {e}", file=sys.stderr)
            return 1
        print(json.dumps({"dir": lab.dir, "config": lab.config_path, "lab_json": lab.lab_json,
                          "instances": lab.status()}, indent=2))
        return 0
    lab = Lab.load(args.dir)
    if args.cmd == "status":
        rows = lab.status()
        print(json.dumps(rows, indent=2))
        return 0 if all(r["running"] and r["answering"] for r in rows) else 1
    problems = lab.stop()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
