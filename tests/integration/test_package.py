#!/usr/bin/python3
"""The Debian package: `cpack -G DEB` from the existing build directory makes a .deb whose
Depends are Debian package names (from dpkg-shlibdeps on the linked libraries: libcurl4,
libssl3, libfmt9, libtomlplusplus3, ..., never a -dev package); `dpkg -x` into a scratch root gives a binary that runs (`archctl --version`), the man
pages, the bash, zsh and fish completions where Debian's shells look, and the deployment
examples under /usr/share/doc/archctl/examples."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest

BIN = os.environ["ARCHCTL_BIN"]
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(BIN)))


def run(*argv, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=600, **kw)


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="archctl-deb-")
        r = run("cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", cls.tmp)
        if r.returncode != 0:
            raise AssertionError(f"cpack failed:\n{r.stdout}\n{r.stderr}")
        debs = glob.glob(os.path.join(cls.tmp, "*.deb"))
        if len(debs) != 1:
            raise AssertionError(f"expected one .deb in {cls.tmp}, found {debs}")
        cls.deb = debs[0]
        cls.root = os.path.join(cls.tmp, "root")
        r = run("dpkg", "-x", cls.deb, cls.root)
        if r.returncode != 0:
            raise AssertionError(r.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        return run("dpkg-deb", "-f", self.deb, name).stdout.strip()

    def test_depends_are_debian_package_names(self):
        depends = [d.strip().split(" ")[0] for d in self.field("Depends").split(",") if d.strip()]
        for lib in ["libc6", "libstdc++6", "libcurl4", "libssl3", "libfmt9", "libtomlplusplus3"]:
            self.assertIn(lib, depends)
        # xxHash is linked only when the build uses its shared library (it may be inlined).
        if "libxxhash" in run("ldd", BIN).stdout:
            self.assertIn("libxxhash0", depends)
        self.assertFalse([d for d in depends if d.endswith("-dev")], depends)
        self.assertEqual(self.field("Package"), "archctl")

    def test_binary_runs_from_the_package(self):
        r = run(os.path.join(self.root, "usr", "bin", "archctl"), "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^archctl \d+\.\d+\.\d+")

    def test_files_where_debian_looks(self):
        for rel in ["usr/share/man/man1/archctl.1", "usr/share/man/man1/archctl-completion.1",
                    "usr/share/bash-completion/completions/archctl", "usr/share/zsh/vendor-completions/_archctl",
                    "usr/share/fish/vendor_completions.d/archctl.fish",
                    "usr/share/doc/archctl/examples/archctl.service", "usr/share/doc/archctl/examples/archctl.timer",
                    "usr/share/doc/archctl/examples/archctl.cron", "usr/share/doc/archctl/examples/seedbox-nas-ssh.toml",
                    "usr/share/doc/archctl/examples/ssh_config", "usr/share/doc/archctl/examples/config.toml"]:
            self.assertTrue(os.path.isfile(os.path.join(self.root, rel)), rel)

    def test_the_service_is_a_valid_unit(self):
        unit = os.path.join(self.root, "usr/share/doc/archctl/examples/archctl.service")
        with open(unit, encoding="utf-8") as f:
            text = f.read()
        for line in ["Type=oneshot", "SuccessExitStatus=10", "Nice=10", "IOSchedulingClass=idle",
                     "ExecStart=/usr/bin/archctl tier --max-minutes 240 --yes"]:
            self.assertIn(line, text)
        if shutil.which("systemd-analyze"):
            timer = unit.replace(".service", ".timer")
            r = run("systemd-analyze", "verify", "--man=no", unit, timer)
            self.assertNotIn("Unknown", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
