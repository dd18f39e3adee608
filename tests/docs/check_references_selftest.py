#!/usr/bin/python3
"""tests/docs/check_references.py fails when it should: in a tiny tree (its files listed, as the git index lists them), a comment that
cites DESIGN.md by section, a path to a document the tree lacks, a bare `flow-facts`, a section
title that is no heading of the cited document (also one continued on the next comment line), a
source file cited by a path or a bare name the tree does not hold are
each reported as `file:line: cites 'X', which is not in the repository` with exit 1; the same tree
citing only what it holds passes with exit 0, and so does this repository."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ARCHCTL_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(HERE, "check_references.py")

GOOD = {
    "docs/design.md": "# Design\n\n## The job\n\n### Step 1: stage\n\n## Evict\n",
    "README.md": "See [docs/design.md](docs/design.md) and https://example.org/DESIGN.md.\n",
    "lib/a.cpp": ('// The job (docs/design.md "The job", "Evict").\n'
                  '// Staging (docs/design.md\n// "Step 1: stage"); README.md.\n'
                  '// The other half is lib/jobs/core/driver.hpp (driver.cpp); lib/a.hpp is generated.\n'
                  '#include "lib/jobs/core/driver.hpp"\n'),
    "lib/a.hpp.in": "",
    "lib/jobs/core/driver.hpp": "",
    "lib/jobs/core/driver.cpp": "",
}


def run_check(root, listed=True):
    files = ["--files", os.path.join(root, "FILES")] if listed else []
    return subprocess.run([sys.executable, CHECK, "--root", root, *files], capture_output=True, text=True, timeout=60)


def make_tree(directory, files):
    for path, text in files.items():
        full = os.path.join(directory, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(directory, "FILES"), "w", encoding="utf-8") as f:
        f.write("".join(p + "\n" for p in files))


class CheckReferences(unittest.TestCase):
    def test_clean_tree_passes(self):
        with tempfile.TemporaryDirectory() as d:
            make_tree(d, GOOD)
            r = run_check(d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout.count(": cites "), 0, r.stdout)

    def test_bad_citations_fail(self):
        bad = dict(GOOD)
        bad["lib/b.cpp"] = ("// Creation (DESIGN.md §5 \"Creation\").\n"
                            "// A stop (docs/missing.md).\n"
                            "// The torrent of flow-facts §1.1.\n"
                            "// Words (docs/design.md \"Words\").\n"
                            "// Merge (docs/design.md\n// \"Step 3: merge\").\n"
                            "// Seeds (seeds/workflows.md \"Evict cache\").\n"
                            "#include \"lib/jobs/driver.hpp\"  // moved to core/\n"
                            "// the steps (evict_hold.cpp)\n")
        with tempfile.TemporaryDirectory() as d:
            make_tree(d, bad)
            r = run_check(d)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            lines = r.stdout.splitlines()
            expected = [
                "lib/b.cpp:1: cites 'DESIGN.md', which is not in the repository",
                "lib/b.cpp:2: cites 'docs/missing.md', which is not in the repository",
                "lib/b.cpp:3: cites 'flow-facts', which is not in the repository",
                "lib/b.cpp:4: cites 'docs/design.md \"Words\"', which is not in the repository (no such heading)",
                "lib/b.cpp:6: cites 'docs/design.md \"Step 3: merge\"', which is not in the repository (no such heading)",
                "lib/b.cpp:7: cites 'seeds/workflows.md', which is not in the repository",
                "lib/b.cpp:8: cites 'lib/jobs/driver.hpp', which is not in the repository",
                "lib/b.cpp:9: cites 'evict_hold.cpp', which is not in the repository",
            ]
            for line in expected:
                self.assertIn(line, lines, r.stdout)
            self.assertEqual(len(lines), len(expected), r.stdout)

    def test_repository_passes(self):
        r = run_check(ROOT, listed=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
