#!/usr/bin/python3
"""Every external program that the build, the Debian package step, the test suites, the test
and demo scripts call is there on a bare Debian 12 root (`debootstrap --variant=minbase
bookworm`) once tests/deps.sh has run.

The calls are read from the sources, without running anything:
  Python   tests/integration, tests/lab, tests/docs, examples: `shutil.which("x")`, the argv[0]
           of `subprocess.run/call/check_call/check_output/Popen` and `os.exec*` (directly or
           through a module's own wrapper such as `def run(*argv)`), resolved through list
           literals, local names and module constants (`QB_BIN = "qbittorrent-nox"`); list
           literals that read as a command (`["tmux", "-L", ...]`, a `command=[...]` argument);
           `#!` lines
  shell    tests/*.sh, tests/fuzz/run.sh, examples/*.sh, .ci/run and every repository script
           they run: the command words (after `env`, `exec`, `sudo`, `$var` prefixes), words
           checked with `command -v`, `CC=`/`CXX=` compilers and `-G Ninja`
  C++      unit tests: argv brace lists (`{"sh", "-c", ...}`) passed to a spawn
  CMake    `find_program`, the first word after `COMMAND` (not targets), pkg-config, the C++
           compiler, and what CPack's DEB generator runs: `file` and `dpkg-shlibdeps` for
           CPACK_DEBIAN_PACKAGE_SHLIBDEPS, `dpkg --print-architecture`, `strip` for
           CPACK_STRIP_FILES, and llvm-symbolizer for the clang fuzz target's crash reports

Every program must have a row in tests/deps_programs.tsv (program, Debian package, kind, why),
and the row must hold: kind `deps` — the package is in the packages list of tests/deps.sh;
`essential` — the package is in every minbase root; `optional` — every file that calls it checks
for it first (`shutil.which`, `command -v`) and does without; `host` — only tests/bare_root.sh
calls it, on the machine that builds the root. A row no source calls is stale and fails too.

  tests/docs/check_deps.py [--deps FILE] [--table FILE] [--list]
    --deps FILE   check against this deps.sh instead (also ARCHCTL_DEPS_SH)
    --table FILE  use this table instead (also ARCHCTL_DEPS_TABLE)
    --list        print every program with its package and call sites (? marks a presence check)
Exit 0 when every call is covered, 1 with one line per problem (file:line, program, package).
"""
import argparse
import ast
import glob
import os
import re
import sys

ROOT = os.environ.get("ARCHCTL_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The packages of every `debootstrap --variant=minbase bookworm` root: Debian 12's Priority:
# required packages (the Essential: yes ones, mount, mawk and apt among them).
MINBASE = frozenset("""
    apt base-files base-passwd bash bsdutils coreutils dash debconf debianutils diffutils dpkg
    e2fsprogs findutils grep gzip hostname init-system-helpers libc-bin libpam-modules
    libpam-modules-bin libpam-runtime login mawk mount ncurses-base ncurses-bin passwd perl-base
    sed sysvinit-utils tar tzdata util-linux
""".split())
KINDS = ("deps", "essential", "optional", "host")
HOST_SCRIPTS = {"tests/bare_root.sh"}  # run on the machine that makes the root, not inside it

SYSTEM_BIN = {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}
PROGRAM = re.compile(r"[a-z][a-z0-9+._-]*")


class Call:
    def __init__(self, program, path, line, check=False, note=None):
        self.program, self.path, self.line, self.check = program, path, line, check
        self.note = note  # how a line that does not name the program calls it

    def where(self):
        return f"{self.path}:{self.line}"

    def what(self, package):
        return f"'{self.program}' (package {package}{'; ' + self.note if self.note else ''})"


def program_name(word):
    """The program a command word names ('/usr/bin/python3' -> 'python3'), or None."""
    if not word:
        return None
    if word.startswith("/"):
        if os.path.dirname(word) not in SYSTEM_BIN:
            return None  # a built binary or a path made up by a test
        word = os.path.basename(word)
    return word if PROGRAM.fullmatch(word) else None


def rel(path):
    r = os.path.relpath(path, ROOT)
    return os.path.abspath(path) if r.startswith("..") else r


# ---------------------------------------------------------------------------------------------
# Python

RUNNERS = {"run", "call", "check_call", "check_output", "Popen"}
EXECS = {"execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnvp"}
COMMAND_KEYWORDS = {"args", "argv", "cmd", "command"}


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class PythonFile:
    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.tree = ast.parse(self.text, path)
        self.calls = []
        self.seen = set()
        self.from_subprocess = set()
        self.constants = {}  # module-level NAME = "string"
        self.functions = {}  # name -> FunctionDef (module level and methods)
        self.parents = {}
        self.nodes = list(ast.walk(self.tree))
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.constants[t.id] = node.value.value
            if isinstance(node, ast.ImportFrom) and node.module == "subprocess":
                self.from_subprocess |= {a.asname or a.name for a in node.names if a.name in RUNNERS}
        self.imported = set()  # names bound by an import anywhere in the file
        for node in self.nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        self.function_calls = {}  # FunctionDef -> the calls in its own body
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
                self.function_calls.setdefault(node, [])
        for node in self.nodes:
            if isinstance(node, ast.Call):
                scope = self._scope(node)
                if scope is not self.tree:
                    self.function_calls[scope].append(node)
        # name -> ("argv", index) | ("varargs", None): a function handing one of its parameters
        # to a runner as the argv (or, for *argv, the argv's words).
        self.elsewhere = {}  # set by all_calls(): wrappers defined once in another file
        self.own_wrappers = {}
        changed = True
        while changed:
            changed = False
            for name, fn in self.functions.items():
                if name in self.own_wrappers:
                    continue
                kind = self._wrapper_kind(fn)
                if kind:
                    self.own_wrappers[name] = kind
                    changed = True

    # -- what a call is
    def _runner(self, call):
        """How the call takes an argv: ('argv', index), ('varargs', None), ('program', 0) or None."""
        name = _dotted(call.func)
        if name is None:
            return None
        if name in {f"subprocess.{r}" for r in RUNNERS} or name in self.from_subprocess:
            return ("argv", 0)
        if name in {f"os.{e}" for e in EXECS}:
            return ("program", 0)
        short, base = name.split(".")[-1], name.split(".")[0]
        if name == short or base in ("self", "cls"):
            own = self.own_wrappers.get(short)
            if own or name != short:
                return own
        # flows.helper(...) or an imported helper(...): a wrapper defined once in another file
        return self.elsewhere.get(short) if base in self.imported else None

    def _wrapper_kind(self, fn):
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        vararg = fn.args.vararg.arg if fn.args.vararg else None
        for node in self.function_calls[fn]:
            how = self._runner(node)
            if not how or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Call) and _dotted(first.func) in {"list", "tuple"} and first.args:
                first = first.args[0]
            if isinstance(first, ast.Starred):
                first = first.value
            if isinstance(first, ast.Name):
                if first.id == vararg:
                    return ("varargs", None)
                if first.id in params:
                    index = params.index(first.id)
                    if params and params[0] in {"self", "cls"}:
                        index -= 1
                    return ("argv", index)
        return None

    # -- resolving an argv expression
    def _scope(self, node):
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return self.tree

    def _assigned_lists(self, name, scope):
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                yield node.value

    def program_of(self, expr):
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return program_name(expr.value)
        if isinstance(expr, ast.Name) and expr.id in self.constants:
            return program_name(self.constants[expr.id])
        return None

    def argv_programs(self, expr, depth=0):
        """[(program, node)] for an expression that is an argv list."""
        if depth > 4 or expr is None:
            return []
        if isinstance(expr, (ast.List, ast.Tuple)) and expr.elts:
            first = expr.elts[0]
            if isinstance(first, ast.Starred):
                return self.argv_programs(first.value, depth + 1)
            p = self.program_of(first)
            return [(p, first)] if p else []
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.argv_programs(expr.left, depth + 1)
        if isinstance(expr, ast.Call):
            name = _dotted(expr.func)
            if name in {"list", "tuple"} and expr.args:
                return self.argv_programs(expr.args[0], depth + 1)
            short = name.split(".")[-1] if name else None
            fn = self.functions.get(short) if short else None
            if fn is not None:  # a function building an argv: what it returns
                out = []
                for node in ast.walk(fn):
                    if isinstance(node, ast.Return):
                        out += self.argv_programs(node.value, depth + 1)
                return out
            return []
        if isinstance(expr, ast.Name):
            out = []
            for value in self._assigned_lists(expr.id, self._scope(expr)):
                out += self.argv_programs(value, depth + 1)
            return out
        return []

    def add(self, program, node, check=False):
        key = (program, node.lineno, check)
        if program and key not in self.seen:
            self.seen.add(key)
            self.calls.append(Call(program, rel(self.path), node.lineno, check))

    def scan(self):
        first = self.text.split("\n", 1)[0]
        if first.startswith("#!"):
            for word in first[2:].split():
                self.add(program_name(word), ast.Constant(value=None, lineno=1))
        in_archctl_args = set()
        for node in self.nodes:
            if isinstance(node, ast.Call):
                name = _dotted(node.func) or ""
                if "archctl" in name.split(".")[-1]:  # archctl's own arguments, not a command
                    for sub in node.args:
                        for inner in ast.walk(sub):
                            in_archctl_args.add(inner)
        for node in self.nodes:
            if isinstance(node, ast.Call):
                name = _dotted(node.func)
                if name == "shutil.which" and node.args:
                    self.add(self.program_of(node.args[0]), node, check=True)
                    continue
                how = self._runner(node)
                if how and node.args:
                    kind, index = how
                    if kind == "varargs":
                        self.add(self.program_of(node.args[0]), node.args[0])
                    elif kind == "program":
                        self.add(self.program_of(node.args[0]), node.args[0])
                    elif index is not None and index < len(node.args):
                        for program, where in self.argv_programs(node.args[index]):
                            self.add(program, where)
                for kw in node.keywords:
                    if kw.arg in COMMAND_KEYWORDS:
                        for program, where in self.argv_programs(kw.value):
                            self.add(program, where)
            elif isinstance(node, ast.List) and len(node.elts) >= 2 and node not in in_archctl_args:
                # A list literal that reads as a command: a program, then an option.
                head, second = node.elts[0], node.elts[1]
                if (isinstance(head, ast.Constant) and isinstance(head.value, str) and program_name(head.value)
                        and isinstance(second, ast.Constant) and isinstance(second.value, str)
                        and second.value.startswith("-")):
                    self.add(program_name(head.value), head)
        return self.calls


def python_wrappers(files):
    """Wrappers defined once across the files (used as attributes: `flows.run_x(...)`)."""
    found = {}
    for f in files:
        for name, kind in f.own_wrappers.items():
            found.setdefault(name, []).append(kind)
    return {name: kinds[0] for name, kinds in found.items() if len(kinds) == 1}


# ---------------------------------------------------------------------------------------------
# Shell (bash)

KEYWORDS_OPEN = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
KEYWORDS_CLOSE = {"fi", "done", "}", "esac"}
BUILTINS = set("""
    alias bg bind break builtin caller cd compgen complete continue declare dirs disown echo enable
    eval exit export false fc fg getopts hash help history jobs kill let local logout mapfile popd
    printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap
    true type typeset ulimit umask unalias unset wait [ : .
""".split())
DECLARATIONS = {"local", "export", "declare", "readonly", "typeset"}
ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?\+?=(.*)", re.S)
FUNCTION_DEF = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", re.M)


class Word:
    def __init__(self, text, line, expansion_at_start, literal_only, pure_expansion):
        self.text, self.line = text, line
        self.expansion_at_start = expansion_at_start
        self.literal_only = literal_only
        self.pure_expansion = pure_expansion


class ShellScript:
    """The command words of a bash script, quoting, command substitutions and case patterns
    taken into account; enough for the test and demo scripts, not a full shell parser."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.t = f.read()
        self.i = 0
        self.line = 1
        self.functions = set(FUNCTION_DEF.findall(self.t))
        self.calls = []
        self.scripts = []  # repository scripts it runs

    def add(self, program, line, check=False, note=None):
        if program:
            self.calls.append(Call(program, rel(self.path), line, check, note))

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else ""

    def advance(self, n=1):
        for _ in range(n):
            if self.peek() == "\n":
                self.line += 1
            self.i += 1

    def skip_balanced(self, open_c, close_c):
        """From just after an opening char to just after its match, quotes respected."""
        depth = 1
        while self.i < len(self.t) and depth:
            c = self.peek()
            if c == "\\":
                self.advance(2)
                continue
            if c == "'":
                self.single_quoted()
                continue
            if c == '"':
                self.advance()
                self.double_quoted()
                continue
            if c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
            self.advance()

    def single_quoted(self):
        self.advance()
        while self.i < len(self.t) and self.peek() != "'":
            self.advance()
        self.advance()

    def dollar(self):
        """At '$': a command substitution is scanned for commands; the rest is skipped.
        Returns True (it was an expansion)."""
        nxt = self.peek(1)
        if nxt == "(" and self.peek(2) == "(":
            self.advance(3)
            self.skip_balanced("(", ")")
            if self.peek() == ")":
                self.advance()
        elif nxt == "(":
            self.advance(2)
            self.commands(stop=")")
        elif nxt == "{":
            self.advance(2)
            self.braced()
        elif nxt == "'":
            self.advance()
            self.single_quoted()
        else:
            self.advance()
            while self.peek() and (self.peek().isalnum() or self.peek() in "_@*#?$!-"):
                special = self.peek() in "@*#?$!-"
                self.advance()
                if special:
                    break

    def braced(self):
        """The inside of ${...}: nested quotes and substitutions, up to the closing brace."""
        while self.i < len(self.t):
            c = self.peek()
            if c == "}":
                self.advance()
                return
            if c == "\\":
                self.advance(2)
            elif c == "'":
                self.single_quoted()
            elif c == '"':
                self.advance()
                self.double_quoted()
            elif c == "$":
                self.dollar()
            else:
                self.advance()

    def double_quoted(self):
        """After the opening quote; returns the literal text (expansions as '$')."""
        out = []
        while self.i < len(self.t):
            c = self.peek()
            if c == '"':
                self.advance()
                break
            if c == "\\":
                out.append(self.peek(1))
                self.advance(2)
            elif c == "$":
                self.dollar()
                out.append("$")
            elif c == "`":
                self.advance()
                while self.i < len(self.t) and self.peek() != "`":
                    self.advance()
                self.advance()
                out.append("$")
            else:
                out.append(c)
                self.advance()
        return "".join(out)

    def word(self):
        line = self.line
        parts = []  # (text, is_expansion)
        while self.i < len(self.t):
            c = self.peek()
            if c in " \t\n;&|()<>":
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    self.advance(2)
                    break
                parts.append((self.peek(1), False))
                self.advance(2)
            elif c == "'":
                start = self.i + 1
                self.single_quoted()
                parts.append((self.t[start:self.i - 1], False))
            elif c == '"':
                self.advance()
                text = self.double_quoted()
                for piece in re.split(r"(\$)", text):
                    if piece:
                        parts.append((piece, piece == "$"))
            elif c == "$":
                self.dollar()
                parts.append(("$", True))
            elif c == "`":
                self.advance()
                while self.i < len(self.t) and self.peek() != "`":
                    self.advance()
                self.advance()
                parts.append(("$", True))
            else:
                parts.append((c, False))
                self.advance()
        text = "".join(p for p, _ in parts)
        expansion_at_start = bool(parts) and parts[0][1]
        literal_only = bool(parts) and not any(e for _, e in parts)
        pure = bool(parts) and all(e for _, e in parts)
        return Word(text, line, expansion_at_start, literal_only, pure)

    def command_word(self, w):
        """Records the program a command word names; returns True when the next word is a
        command too (a prefix such as env, exec, sudo or an expanded $var)."""
        if w.pure_expansion:
            return True  # "$sudo" and the like: the next word runs
        if w.expansion_at_start:  # "$root/tests/deps.sh" or a built binary
            tail = w.text.split("/", 1)[1] if "/" in w.text else ""
            if tail and os.path.isfile(os.path.join(ROOT, tail)):
                self.scripts.append(os.path.join(ROOT, tail))
            return False
        if not w.literal_only:
            return False
        text = w.text
        if "/" in text and not text.startswith("/"):
            path = os.path.join(ROOT, text)
            if os.path.isfile(path):
                self.scripts.append(path)
            return False
        if text in self.functions or text in BUILTINS:
            return False
        program = program_name(text)
        self.add(program, w.line)
        return program in {"env", "sudo", "nice", "nohup", "timeout", "xargs"}

    def commands(self, stop=None):
        at_cmd = True
        prefix = None  # the prefix program whose options are being skipped
        mode = None  # None | "args" | "case-word" | "pattern" | "check"
        case_depth = 0
        while self.i < len(self.t):
            c = self.peek()
            if c == "\\" and self.peek(1) == "\n":
                self.advance(2)
                continue
            if c in " \t":
                self.advance()
                continue
            if c == "#":
                while self.i < len(self.t) and self.peek() != "\n":
                    self.advance()
                continue
            if c == "\n":
                self.advance()
                if mode not in ("pattern", "case-word"):
                    at_cmd, prefix, mode = True, None, None
                continue
            if c == ")" and mode == "pattern":
                self.advance()
                at_cmd, prefix, mode = True, None, None
                continue
            if c == ")" and stop == ")":
                self.advance()
                return
            if c == ";" and self.peek(1) == ";":
                self.advance(2 + (self.peek(2) == "&"))
                at_cmd, prefix, mode = True, None, "pattern" if case_depth else None
                continue
            if c == "(" and self.peek(1) == "(" and at_cmd:  # (( arithmetic ))
                self.advance(2)
                self.skip_balanced("(", ")")
                if self.peek() == ")":
                    self.advance()
                at_cmd = False
                continue
            if c in "<>" or (c == "&" and self.peek(1) == ">"):
                op = c
                self.advance()
                while self.peek() in "<>&|":
                    op += self.peek()
                    self.advance()
                if op.startswith("<<") and op != "<<<":  # here-document: skip its body
                    while self.peek() in " \t-":
                        self.advance()
                    delim = self.word().text
                    end = re.compile(r"^\s*" + re.escape(delim) + r"\s*$", re.M)
                    m = end.search(self.t, self.t.find("\n", self.i) + 1)
                    stop_at = m.end() if m else len(self.t)
                    while self.i < stop_at:
                        self.advance()
                    continue
                while self.peek() in " \t":
                    self.advance()
                nxt = self.peek()
                if op.endswith("&"):  # >&2, 2>&1, >&-
                    if nxt.isdigit() or nxt == "-":
                        self.word()
                elif nxt and nxt not in "\n;|&()":
                    self.word()  # the file redirected to or from
                continue
            if c in ";&|()":
                if mode == "pattern":
                    self.advance()
                    continue
                self.advance()
                while self.peek() in "&|":
                    self.advance()
                at_cmd, prefix = True, None
                if mode != "case-word":
                    mode = None
                continue
            w = self.word()
            if not w.text and not w.pure_expansion:
                self.advance()
                continue
            if mode == "pattern":
                if w.literal_only and w.text == "esac":
                    case_depth -= 1
                    mode = None
                    at_cmd = False
                continue
            if mode == "case-word":
                if w.literal_only and w.text == "in":
                    mode = "pattern"
                continue
            if mode == "check":
                self.add(program_name(w.text) if w.literal_only else None, w.line, check=True)
                mode = "args"
                continue
            if not at_cmd:
                if w.literal_only and w.text in ("-G",):
                    g = self.peek_word()
                    if g == "Ninja":
                        self.add("ninja", w.line, note="the -G Ninja generator")
                continue
            if prefix:  # options and assignments of env/sudo/nice before the command
                if w.text.startswith("-") or (prefix == "env" and not w.expansion_at_start and ASSIGNMENT.fullmatch(w.text)):
                    if prefix == "nice" and w.text == "-n":
                        self.word_after_blanks()
                    continue
                prefix = None
            m = ASSIGNMENT.fullmatch(w.text) if not w.expansion_at_start else None
            if m:
                if self.peek() == "(":  # name=( array )
                    self.advance()
                    self.skip_balanced("(", ")")
                elif m.group(1) in ("CC", "CXX") and m.group(3):
                    self.add(program_name(m.group(3)), w.line, note=f"{m.group(1)}=")
                continue
            if w.literal_only:
                text = w.text
                if text in KEYWORDS_OPEN:
                    continue
                if text in KEYWORDS_CLOSE:
                    at_cmd = False
                    continue
                if text in ("for", "select"):
                    at_cmd, mode = False, "args"
                    continue
                if text == "case":
                    case_depth += 1
                    at_cmd, mode = False, "case-word"
                    continue
                if text == "[[":
                    self.skip_until_word("]]")
                    at_cmd = False
                    continue
                if text == "function":
                    self.word_after_blanks()
                    continue
                if self.peek() == "(" and self.peek(1) == ")":  # name() { ... }
                    self.advance(2)
                    continue
                if text in ("command", "type", "exec"):
                    nxt = self.peek_word()
                    if (text == "command" and nxt in ("-v", "-V")) or (text == "type" and nxt.startswith("-")):
                        self.word_after_blanks()
                        at_cmd, mode = False, "check"
                        continue
                    if text in ("command", "exec"):
                        prefix = text
                        continue
                if text in DECLARATIONS:
                    at_cmd, mode = False, "args"
                    continue
            if self.command_word(w):
                prefix = w.text if w.literal_only else "$"
                continue
            at_cmd = False

    def peek_word(self):
        save = (self.i, self.line, list(self.calls), list(self.scripts))
        while self.peek() in " \t":
            self.advance()
        text = self.word().text
        self.i, self.line, self.calls, self.scripts = save
        return text

    def word_after_blanks(self):
        while self.peek() in " \t":
            self.advance()
        return self.word()

    def skip_until_word(self, end):
        while self.i < len(self.t):
            while self.peek() in " \t\n":
                self.advance()
            if self.word().text == end:
                return
            if self.peek() and self.peek() in ";&|()<>":
                self.advance()

    def scan(self):
        self.commands()
        first = self.t.split("\n", 1)[0]
        if first.startswith("#!"):
            for word in first[2:].split():
                self.add(program_name(word), 1)
        return self.calls


# ---------------------------------------------------------------------------------------------
# C++ unit tests: argv brace lists handed to a spawn

CXX_ARGV = re.compile(r'(?:\b(?:argv|exec)\s*=\s*|\b(?:run|spawn|run_capture)\s*\(\s*)\{\s*"([^"]+)"\s*,'
                      r'|\breturn\s+\{\s*"([^"]+)"\s*,\s*"-')


def cxx_calls(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    calls = []
    for m in CXX_ARGV.finditer(text):
        program = program_name(m.group(1) or m.group(2))
        if program and not program.startswith("-"):
            calls.append(Call(program, rel(path), text.count("\n", 0, m.start()) + 1))
    return calls


# ---------------------------------------------------------------------------------------------
# CMake

CMAKE_KEYWORDS = {"HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "REQUIRED", "NO_CACHE", "NAMES_PER_DIR",
                  "NO_DEFAULT_PATH", "NO_PACKAGE_ROOT_PATH", "NO_CMAKE_PATH", "NO_CMAKE_ENVIRONMENT_PATH",
                  "NO_SYSTEM_ENVIRONMENT_PATH", "NO_CMAKE_SYSTEM_PATH", "CMAKE_FIND_ROOT_PATH_BOTH",
                  "ONLY_CMAKE_FIND_ROOT_PATH", "NO_CMAKE_FIND_ROOT_PATH", "VALIDATOR", "ENV", "REGISTRY_VIEW"}
CMAKE_COMMAND = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def cmake_commands(path):
    """[(name, [(arg, line)], line)] of a CMake file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "\n":
            line += 1
            i += 1
            continue
        m = CMAKE_COMMAND.match(text, i)
        if not m or (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            i += 1
            continue
        name, start_line = m.group(1).lower(), line
        line += text.count("\n", i, m.end())
        i = m.end()
        args, depth = [], 1
        while i < n and depth:
            c = text[i]
            if c == "\n":
                line += 1
                i += 1
            elif c in " \t\r":
                i += 1
            elif c == "#":
                while i < n and text[i] != "\n":
                    i += 1
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                depth -= 1
                i += 1
            elif c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                args.append((text[i + 1:j], line))
                line += text.count("\n", i, j)
                i = j + 1
            else:
                j = i
                while j < n and text[j] not in ' \t\r\n()#"':
                    j += 2 if text[j] == "\\" else 1
                args.append((text[i:j], line))
                i = j
        out.append((name, args, start_line))
    return out


def cmake_calls(paths):
    parsed = {path: cmake_commands(path) for path in paths}
    targets = set()
    for cmds in parsed.values():
        for name, args, _ in cmds:
            if name in ("add_executable", "add_library", "add_custom_target") and args:
                targets.add(args[0][0])
    calls = []
    for path, cmds in parsed.items():
        where = rel(path)
        settings = {}
        for name, args, line in cmds:
            values = [a for a, _ in args]
            if name == "find_program" and len(args) >= 2:
                if values[1] == "NAMES":
                    for value, at in args[2:]:
                        if value in CMAKE_KEYWORDS:
                            break
                        calls.append(Call(program_name(value), where, at))
                else:
                    calls.append(Call(program_name(values[1]), where, args[1][1]))
            elif name in ("add_test", "add_custom_command", "add_custom_target", "execute_process"):
                for k, (value, _) in enumerate(args[:-1]):
                    if value == "COMMAND":
                        word, at = args[k + 1]
                        if "${" in word or "$<" in word or word in targets:
                            continue
                        calls.append(Call(program_name(word), where, at))
            elif name == "find_package" and values and values[0] == "PkgConfig":
                calls.append(Call("pkg-config", where, line, note="find_package(PkgConfig)"))
            elif name == "project" and "LANGUAGES" in values:
                langs = values[values.index("LANGUAGES") + 1:]
                if "CXX" in langs:
                    calls.append(Call("c++", where, line, note="the C++ compiler"))
                if "C" in langs:
                    calls.append(Call("cc", where, line, note="the C compiler"))
            elif name == "set" and values and values[0].startswith("CPACK_"):
                settings[values[0]] = (values[1:], line)
            elif name == "include" and values == ["CPack"]:
                settings["include(CPack)"] = ([], line)
            elif name == "target_compile_options" and any("-fsanitize=fuzzer" in v for v in values):
                # clang's sanitizer runtime prints a crash with file:line through llvm-symbolizer
                calls.append(Call("llvm-symbolizer", where, line, note="clang's sanitizer runtime"))
        if "include(CPack)" in settings and any(k.startswith("CPACK_DEBIAN_") for k in settings):
            def on(key):
                value = settings.get(key, ([], 0))[0]
                return bool(value) and value[0].upper() in ("ON", "TRUE", "1", "YES")
            if on("CPACK_DEBIAN_PACKAGE_SHLIBDEPS") or on("CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS"):
                at = settings.get("CPACK_DEBIAN_PACKAGE_SHLIBDEPS", settings["include(CPack)"])[1]
                note = "CPack's DEB generator with CPACK_DEBIAN_PACKAGE_SHLIBDEPS"
                calls.append(Call("file", where, at, note=note))  # the type of every packaged file
                calls.append(Call("dpkg-shlibdeps", where, at, note=note))
            if "CPACK_DEBIAN_PACKAGE_ARCHITECTURE" not in settings:
                calls.append(Call("dpkg", where, settings["include(CPack)"][1],
                                  note="CPack's DEB generator: dpkg --print-architecture"))
            if on("CPACK_STRIP_FILES"):
                calls.append(Call("strip", where, settings["CPACK_STRIP_FILES"][1], note="CPACK_STRIP_FILES"))
    return [c for c in calls if c.program]


# ---------------------------------------------------------------------------------------------

def sources():
    py = []
    for pattern in ("tests/integration/*.py", "tests/lab/*.py", "tests/docs/*.py", "examples/*.py"):
        py += sorted(glob.glob(os.path.join(ROOT, pattern)))
    sh = []
    for pattern in ("tests/*.sh", "tests/fuzz/*.sh", "examples/*.sh", ".ci/run"):
        sh += sorted(glob.glob(os.path.join(ROOT, pattern)))
    cxx = []
    for pattern in ("tests/unit/**/*.cpp", "tests/support/*.cpp", "tests/integration/clients_probe/*.cpp"):
        cxx += sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    cmake = [os.path.join(ROOT, "CMakeLists.txt")] + sorted(glob.glob(os.path.join(ROOT, "cmake", "*.cmake")))
    for sub in ("lib", "cli", "tests"):
        cmake += sorted(glob.glob(os.path.join(ROOT, sub, "**", "CMakeLists.txt"), recursive=True))
    return py, sh, cxx, cmake


def all_calls():
    py, sh, cxx, cmake = sources()
    calls = []
    files = [PythonFile(path) for path in py]
    wrappers = python_wrappers(files)
    for f in files:
        f.elsewhere = wrappers
        calls += f.scan()
    done, todo = set(), list(sh)
    while todo:
        path = os.path.realpath(todo.pop(0))
        if path in done:
            continue
        done.add(path)
        if path.endswith(".py"):
            if path not in {os.path.realpath(p) for p in py}:
                f = PythonFile(path)
                f.elsewhere = wrappers
                calls += f.scan()
            continue
        script = ShellScript(path)
        calls += script.scan()
        todo += script.scripts
    for path in cxx:
        calls += cxx_calls(path)
    calls += cmake_calls(cmake)
    unique, seen = [], set()
    for c in calls:
        key = (c.program, c.path, c.line, c.check)
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def read_table(path):
    rows, problems = {}, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4 or not all(c.strip() for c in cols) or cols[2] not in KINDS:
                problems.append(f"{rel(path)}:{number}: expected program<TAB>package<TAB>{'|'.join(KINDS)}<TAB>why")
                continue
            if cols[0] in rows:
                problems.append(f"{rel(path)}:{number}: '{cols[0]}' has a second row")
            rows[cols[0]] = {"package": cols[1], "kind": cols[2], "why": cols[3], "line": number}
    return rows, problems


def read_deps(path):
    """The words of the `packages=( ... )` list in deps.sh."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^packages=\((.*?)^\)", text, re.M | re.S)
    if not m:
        return None
    return {w for line in m.group(1).splitlines() for w in line.split("#", 1)[0].split()}


def check(deps_path, table_path, listing=False):
    rows, problems = read_table(table_path)
    packages = read_deps(deps_path)
    if packages is None:
        return [f"{rel(deps_path)}: no packages=( ... ) list"], 0, 0
    calls = all_calls()
    by_program = {}
    for c in calls:
        by_program.setdefault(c.program, []).append(c)
    for program in sorted(by_program):
        sites = by_program[program]
        first = sites[0]
        row = rows.get(program)
        if listing:
            desc = f"{row['package']} ({row['kind']})" if row else "NOT IN THE TABLE"
            print(f"{program}\t{desc}\t" + " ".join(c.where() + ("?" if c.check else "") for c in sites))
        if row is None:
            for c in sites:
                note = f" ({c.note})" if c.note else ""
                problems.append(f"{c.where()}: calls '{program}'{note}, which has no row in {rel(table_path)} "
                                "(add: program, Debian package, kind, why)")
            continue
        pkg, kind = row["package"], row["kind"]
        if kind == "deps" and pkg not in packages:
            for c in sites:
                problems.append(f"{c.where()}: calls {c.what(pkg)}, which {rel(deps_path)} "
                                f"does not install: add {pkg} to its packages list")
        elif kind == "essential" and pkg not in MINBASE:
            problems.append(f"{first.where()}: calls {first.what(pkg)}: {pkg} is not in a minbase "
                            f"root, so it is not essential; install it with {rel(deps_path)}")
        elif kind == "optional":
            checked = {c.path for c in sites if c.check}
            for c in sites:
                if c.path not in checked:
                    problems.append(f"{c.where()}: calls optional {c.what(pkg)} without checking "
                                    "for it first (shutil.which / command -v)")
        elif kind == "host":
            for c in sites:
                if c.path not in HOST_SCRIPTS:
                    problems.append(f"{c.where()}: calls {c.what(pkg)}, listed as needed only "
                                    f"on the host of {', '.join(sorted(HOST_SCRIPTS))}")
    for program, row in sorted(rows.items()):
        if program not in by_program:
            problems.append(f"{rel(table_path)}:{row['line']}: '{program}' is called nowhere; remove the row")
    return problems, len(by_program), len(calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deps", default=os.environ.get("ARCHCTL_DEPS_SH") or os.path.join(ROOT, "tests", "deps.sh"),
                        help="the deps.sh whose packages list to check against (ARCHCTL_DEPS_SH)")
    parser.add_argument("--table", default=os.environ.get("ARCHCTL_DEPS_TABLE")
                        or os.path.join(ROOT, "tests", "deps_programs.tsv"),
                        help="the program table (ARCHCTL_DEPS_TABLE)")
    parser.add_argument("--list", action="store_true", help="print every program with its package and callers (? marks a presence check)")
    args = parser.parse_args()
    problems, programs, places = check(args.deps, args.table, args.list)
    for p in problems:
        print(f"check_deps: {p}")
    if problems:
        print(f"check_deps: FAILED: {len(problems)} problem(s) with {rel(args.deps)}")
        return 1
    print(f"check_deps: ok: {programs} programs called from {places} places, each installed by "
          f"{rel(args.deps)} or part of a minbase root")
    return 0


if __name__ == "__main__":
    sys.exit(main())
