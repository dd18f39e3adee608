#!/usr/bin/python3
"""Every document a tracked file cites is in the repository.

A comment, docstring, man page or document that names a `*.md` file must name one the repository
holds: `docs/foo.md`, `tests/README.md` and other paths resolve against the repository root, a bare
name against the root or any tracked file of that name. The design documents that were never part
of the tree (DESIGN.md, STYLE.md, UX.md, workflows.md, incremental-archiving.md, lab-facts.md,
flow-facts.md) are refused by name, with or without a path, and so are the bare words `flow-facts`
and `lab-facts`. A section cited after a repository document (`docs/design.md "The job"`, also
`"A", "B"` and `"A" to "B"`, and a title continued on the next comment line) must be a heading of
that document.

A source file cited by path (`lib/jobs/core/driver.hpp`, `tests/integration/test_tier.py`) must be
a tracked file, and one cited by its bare name (`driver.cpp`) the name of some tracked file, so a
moved or renamed file leaves no comment pointing at nothing.

Exit 1 with one line per hit, `file:line: cites 'X', which is not in the repository`; exit 0 when
every citation resolves. `--root DIR` checks another git work tree; `--files LIST` checks the
paths listed in LIST (one a line) below the root instead of the git index (the selftest's fixture)."""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.environ.get("ARCHCTL_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))

# Documents that lived outside the repository; a citation of them never resolves here.
EXTERNAL = {"DESIGN.md", "STYLE.md", "UX.md", "workflows.md", "incremental-archiving.md", "lab-facts.md",
            "flow-facts.md"}
# This check and its selftest name those documents on purpose.
SELF = {"tests/docs/check_references.py", "tests/docs/check_references_selftest.py"}

DOC = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md(?![A-Za-z0-9_-])")
BARE_FACTS = re.compile(r"(?<![A-Za-z0-9_./-])(flow-facts|lab-facts)(?![A-Za-z0-9_.-])")
SOURCE = re.compile(r"(?<![A-Za-z0-9_./-])((?:lib|cli|tests|bench|man|docs|examples|completions|cmake)/[A-Za-z0-9_./-]*"
                    r"[A-Za-z0-9_-]\.(?:hpp|cpp|py|sh|cmake))(?![A-Za-z0-9_*{<-])")
BARE_SOURCE = re.compile(r"(?<![A-Za-z0-9_./*{<-])([A-Za-z0-9_]+\.(?:hpp|cpp))(?![A-Za-z0-9_*{<-])")
# A quoted section title right after a document name: optional closing backtick, then optionally
# a comment leader on the next line.
GAP = r"`?(?:[ \t]*\n[ \t]*(?://+|#+|\*)?)?[ \t]*"
TITLE = re.compile(GAP + r'"([^"\n]+)"')
MORE = re.compile(r'(?:,[ \t]*|[ \t]+to[ \t]+)' + GAP + r'"([^"\n]+)"')


def exported(root):
    """Every file below `root` but build output: a checkout exported without .git (tests/bare_root.sh
    copies `git archive HEAD`) holds exactly the tracked files, plus what the build wrote."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if not d.startswith("build")]
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            out.append(os.path.normpath(os.path.join(rel, name)))
    return sorted(out)


def tracked(root):
    """The paths in the git index of `root` (what `git ls-files` lists), read without running git,
    which a minbase root does not have: index versions 2, 3 and 4."""
    gitdir = os.path.join(root, ".git")
    if not os.path.exists(gitdir):
        return exported(root)
    if os.path.isfile(gitdir):  # a linked work tree: "gitdir: PATH"
        with open(gitdir, encoding="utf-8") as f:
            gitdir = os.path.join(root, f.read().split(":", 1)[1].strip())
    with open(os.path.join(gitdir, "index"), "rb") as f:
        data = f.read()
    if data[:4] != b"DIRC":
        raise SystemExit(f"check_references: {gitdir}/index is not a git index")
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    pos, paths, previous = 12, [], b""
    for _ in range(count):
        start = pos
        flags = int.from_bytes(data[pos + 60:pos + 62], "big")
        pos += 62
        if version >= 3 and flags & 0x4000:
            pos += 2
        if version == 4:
            strip, shift = 0, 0  # varint: how many bytes of the previous path to drop
            while True:
                byte = data[pos]
                pos += 1
                strip = (strip << 7) | (byte & 0x7F) if shift else byte & 0x7F
                shift += 1
                if not byte & 0x80:
                    break
                strip += 1
            end = data.index(b"\0", pos)
            name = previous[:len(previous) - strip] + data[pos:end]
            pos = end + 1
        else:
            end = data.index(b"\0", pos)
            name = data[pos:end]
            pos = start + ((end - start) // 8 + 1) * 8
        previous = name
        paths.append(name.decode("utf-8", "surrogateescape"))
    return paths


def headings(path, cache):
    if path not in cache:
        titles = set()
        fence = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                elif not fence and line.startswith("#"):
                    titles.add(line.lstrip("#").strip())
        cache[path] = titles
    return cache[path]


def resolve(root, name, basenames):
    """The repository path a cited document name stands for, or None."""
    base = os.path.basename(name)
    if "/" not in name:
        if base in EXTERNAL and not os.path.isfile(os.path.join(root, name)):
            return None
        if os.path.isfile(os.path.join(root, name)):
            return name
        return basenames.get(base)
    if base in EXTERNAL:
        return None
    rel = os.path.normpath(name.lstrip("./") if name.startswith("./") else name)
    return rel if os.path.isfile(os.path.join(root, rel)) else None


def check_text(root, path, text, basenames, cache, sources=frozenset(), source_names=frozenset()):
    hits = []

    def line_of(offset):
        return text.count("\n", 0, offset) + 1

    for m in DOC.finditer(text):
        name = m.group(0)
        token_start = m.start()
        # Part of a URL (https://host/x.md): not a citation of a repository document.
        before = text[max(0, token_start - 12):token_start]
        if re.search(r"[A-Za-z]+:/*$", before):
            continue
        target = resolve(root, name, basenames)
        if target is None:
            hits.append((line_of(m.start()), f"cites '{name}', which is not in the repository"))
            continue
        if not target.endswith(".md"):
            continue
        pos = m.end()
        t = TITLE.match(text, pos)
        while t:
            title = t.group(1)
            if title not in headings(os.path.join(root, target), cache):
                hits.append((line_of(t.start(1)),
                             f"cites '{target} \"{title}\"', which is not in the repository (no such heading)"))
            pos = t.end()
            t = MORE.match(text, pos)
    if not path.endswith(".md") or path.startswith("docs/"):
        for m in SOURCE.finditer(text):
            if m.group(1) not in sources and m.group(1) + ".in" not in sources:  # generated from NAME.in
                hits.append((line_of(m.start()), f"cites '{m.group(1)}', which is not in the repository"))
        for m in BARE_SOURCE.finditer(text):
            if m.group(1) not in source_names:
                hits.append((line_of(m.start()), f"cites '{m.group(1)}', which is not in the repository"))
    for m in BARE_FACTS.finditer(text):
        hits.append((line_of(m.start()), f"cites '{m.group(1)}', which is not in the repository"))
    return hits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=DEFAULT_ROOT, help="the git work tree to check")
    parser.add_argument("--files", help="a file listing the paths to check, instead of the git index")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if args.files:
        with open(args.files, encoding="utf-8") as f:
            files = [line.strip() for line in f if line.strip()]
    else:
        files = tracked(root)
    basenames = {}
    for p in files:
        if p.endswith(".md"):
            basenames.setdefault(os.path.basename(p), p)
    sources = set(files)
    source_names = {os.path.basename(p) for p in files}
    cache = {}
    hits = []
    for path in files:
        if path in SELF:
            continue
        full = os.path.join(root, path)
        if not os.path.isfile(full) or os.path.islink(full):
            continue
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue  # binary
        for line, message in check_text(root, path, text, basenames, cache, sources, source_names):
            hits.append(f"{path}:{line}: {message}")
    for hit in sorted(set(hits)):
        print(hit)
    if hits:
        print(f"check_references: {len(set(hits))} citation(s) of documents or sections not in the repository",
              file=sys.stderr)
        return 1
    print(f"check_references: every cited document resolves ({len(files)} tracked files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
