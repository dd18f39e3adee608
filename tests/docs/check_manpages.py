"""Each available command's --help matches its man page: the page exists and documents every
long option the command accepts, and documents none it does not (global options live in
archctl(1))."""
import os
import re
import subprocess
import sys
import unittest

BIN = os.environ["ARCHCTL_BIN"]
ROOT = os.environ["ARCHCTL_SOURCE_DIR"]
GLOBAL = {"--config", "--state", "--json", "--quiet", "--verbose", "--help", "--version"}


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def top_commands():
    out = run("--help").stdout
    return re.findall(r"^  ([a-z]+)\s{2,}", out.split("Porcelain commands:")[1], re.M)


def options_in_help(*cmd):
    text = run(*cmd, "--help").stdout
    opts = set(re.findall(r"(--[a-z][a-z0-9-]*)", text))
    subs = []
    # Subcommands are listed under "Subcommands:" or under a group heading they inherited.
    for heading in re.findall(r"^([A-Z][A-Za-z ]*(?:ommands)):$", text, re.M):
        section = text.split(heading + ":")[1]
        subs += re.findall(r"^  ([a-z-]+)\s{2,}", section.split("\n\n")[0], re.M)
    for sub in subs:
        opts |= options_in_help(*cmd, sub)
    return opts


def options_in_man(path):
    text = open(path, encoding="utf-8").read().replace("\\-", "-")
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", text))


class ManPages(unittest.TestCase):
    def test_every_available_command_has_a_matching_page(self):
        checked = 0
        for cmd in top_commands():
            probe = run(cmd, "--json")
            if "is not available in this build" in probe.stdout + probe.stderr:
                continue
            page = os.path.join(ROOT, "man", f"archctl-{cmd}.1")
            self.assertTrue(os.path.exists(page), f"missing man page {page}")
            in_help = options_in_help(cmd) - GLOBAL
            in_man = options_in_man(page) - GLOBAL
            self.assertEqual(sorted(in_help - in_man), [], f"{page} does not document these options")
            self.assertEqual(sorted(in_man - in_help), [], f"{page} documents options '{cmd}' does not have")
            checked += 1
        self.assertGreater(checked, 0)

    def test_top_page_lists_every_command(self):
        text = open(os.path.join(ROOT, "man", "archctl.1"), encoding="utf-8").read()
        bash = open(os.path.join(ROOT, "completions", "archctl.bash"), encoding="utf-8").read()
        zsh = open(os.path.join(ROOT, "completions", "_archctl"), encoding="utf-8").read()
        for cmd in top_commands():
            self.assertRegex(text, r"\.B " + cmd + r"\b", f"archctl.1 does not list '{cmd}'")
            self.assertIn(cmd, bash.split("local commands=")[1].split("\n")[0])
            self.assertIn(f"'{cmd}:", zsh)


if __name__ == "__main__":
    unittest.main(verbosity=2)
