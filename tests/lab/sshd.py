"""A real sshd on 127.0.0.1 for the test suites: Debian's openssh-server as the current user, with
its own host key, sshd_config, authorized key and a free port (key login only).

    sshd = Sshd(os.path.join(lab_dir, "sshd"), bin_dir=dir_with_archctl)
    skip = sshd.prepare()          # None, or why sshd cannot run here (then skip the suite)
    sshd.ssh()                     # ["ssh", "-F", "/dev/null", "-p", PORT, ..., "user@127.0.0.1"]
    sshd.alias("nas")              # ["ssh", "-F", <ssh_config>, "nas"]: the short form of docs/design.md "Configuration"
    sshd.stop() / sshd.start()

`bin_dir` goes first on the PATH of every session (sshd_config SetEnv), so the short form
`ssh nas archctl node serve` finds the archctl under test. ssh_config() also holds host aliases
that fail the way real deployments do: "<alias>-wrong-port" (nothing listens) and
"<alias>-wrong-key" (a key the server does not accept)."""

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time

from lab.lab import _children as children, free_port

SSHD_BIN = "/usr/sbin/sshd"


class Sshd:
    def __init__(self, base, bin_dir=None):
        self.dir = base
        os.makedirs(base, exist_ok=True)
        self.port = free_port()
        self.host_key = os.path.join(base, "host_ed25519")
        self.key = os.path.join(base, "client_ed25519")
        self.wrong_key = os.path.join(base, "stranger_ed25519")
        self.config = os.path.join(base, "sshd_config")
        self.client_config = os.path.join(base, "ssh_config")
        self.log = os.path.join(base, "sshd.log")
        self.bin_dir = bin_dir
        self.user = getpass.getuser()
        self.proc = None
        self._aliases = []
        for path in (self.host_key, self.key, self.wrong_key):
            if not os.path.exists(path):
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True,
                               stdin=subprocess.DEVNULL, capture_output=True)
        authorized = os.path.join(base, "authorized_keys")
        shutil.copyfile(self.key + ".pub", authorized)
        os.chmod(authorized, 0o600)
        lines = [f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.host_key}",
                 f"PidFile {os.path.join(base, 'sshd.pid')}", f"AuthorizedKeysFile {authorized}",
                 "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                 "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no", "MaxStartups 50",
                 "LogLevel INFO"]
        if bin_dir:
            lines.append(f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin")
        with open(self.config, "w") as f:
            f.write("\n".join(lines + [""]))
        self.alias("nas")

    def prepare(self):
        """Starts sshd and logs in once. None when it works, else why not (a reason to skip)."""
        if not os.path.exists(SSHD_BIN):
            return f"{SSHD_BIN} is missing: install openssh-server (tests/deps.sh does)"
        if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
            try:
                os.makedirs("/run/sshd", mode=0o755)  # sshd's privilege separation directory, as root
            except OSError as e:
                return f"sshd cannot run as root without /run/sshd: {e}"
        if not self.start():
            return f"sshd did not start on 127.0.0.1:{self.port}: {self.log_tail()}"
        probe = subprocess.run(self.ssh() + ["true"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                               timeout=30)
        if probe.returncode != 0:
            return f"cannot log in to the suite's sshd: {probe.stderr.strip()} / {self.log_tail()}"
        return None

    def start(self):
        log = open(self.log, "ab")
        self.proc = subprocess.Popen([SSHD_BIN, "-D", "-e", "-f", self.config], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return True
            time.sleep(0.1)
        return False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            sessions = children(self.proc.pid)
            self.proc.terminate()
            self.proc.wait(timeout=10)
            for pid in sessions:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.proc = None

    def log_tail(self):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-10:]).strip()
        except OSError:
            return ""

    def ssh(self):
        """The ssh argv up to and including the host, every option on the command line."""
        return ["ssh", "-F", "/dev/null", "-p", str(self.port), "-i", self.key, "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", f"{self.user}@127.0.0.1"]

    def alias(self, name):
        """["ssh", "-F", <ssh_config>, name]: a host alias in this sshd's client config, as an
        operator's ~/.ssh/config would have it; also defines name-wrong-port and name-wrong-key."""
        if name not in self._aliases:
            self._aliases.append(name)
            self._write_client_config()
        return ["ssh", "-F", self.client_config, name]

    def _write_client_config(self):
        closed_port = free_port()
        common = ["  HostName 127.0.0.1", f"  User {self.user}", "  StrictHostKeyChecking no",
                  "  UserKnownHostsFile /dev/null", "  BatchMode yes", "  IdentitiesOnly yes", "  LogLevel ERROR",
                  "  ConnectTimeout 5"]
        lines = []
        for name in self._aliases:
            lines += [f"Host {name}", f"  Port {self.port}", f"  IdentityFile {self.key}", *common, ""]
            lines += [f"Host {name}-wrong-port", f"  Port {closed_port}", f"  IdentityFile {self.key}", *common, ""]
            lines += [f"Host {name}-wrong-key", f"  Port {self.port}", f"  IdentityFile {self.wrong_key}", *common, ""]
        with open(self.client_config, "w") as f:
            f.write("\n".join(lines))
        os.chmod(self.client_config, 0o600)
