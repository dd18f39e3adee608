#!/usr/bin/python3
"""The --json contract (tests/docs/json_contract.json): load it, validate a document against it,
and render man/archctl-json.7 from it.

    import json_contract as jc
    problems = jc.validate(doc, "job list")      # [] when the document matches
    python3 tests/docs/json_contract.py --write  # regenerate man/archctl-json.7

A field is "TYPE: description"; TYPE is alternatives joined by "|" of string, integer, number,
boolean, null, object* (keys are data), array<T> and @name (a type of the contract); a leading
"?" marks a field that may be absent. An object has exactly its listed fields unless its type or
document says "open"."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACT_PATH = os.path.join(HERE, "json_contract.json")
MAN_PATH = os.path.join(HERE, "..", "..", "man", "archctl-json.7")


def load(path=CONTRACT_PATH):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


CONTRACT = load()


def parse_field(spec):
    """'?string|null: what' → (optional, ["string", "null"], "what")."""
    type_part, _, doc = spec.partition(": ")
    optional = type_part.startswith("?")
    return optional, split_alternatives(type_part.lstrip("?")), doc


def split_alternatives(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def fields_of(spec, contract=CONTRACT):
    """(fields {name: spec}, optional included groups [{name: spec}]) of a type or document."""
    fields = {}
    groups = []
    if spec.get("envelope", None) is not False and spec is not contract["types"].get("envelope") and "synopsis" in spec:
        fields.update(contract["types"]["envelope"]["fields"])
    include = spec.get("include")
    if include:
        optional = include.startswith("?")
        included = dict(contract["types"][include.lstrip("?")]["fields"])
        if optional:
            groups.append({k: v for k, v in included.items() if k not in spec["fields"]})
        else:
            fields.update(included)
    fields.update(spec["fields"])
    return fields, groups


def _check_type(value, typ, path, problems, contract):
    if typ == "string":
        return isinstance(value, str)
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ == "null":
        return value is None
    if typ == "object*":
        return isinstance(value, dict)
    if typ.startswith("array<") and typ.endswith(">"):
        if not isinstance(value, list):
            return False
        inner = split_alternatives(typ[6:-1])
        for i, item in enumerate(value):
            _check_value(item, inner, f"{path}[{i}]", problems, contract)
        return True
    if typ.startswith("@"):
        if not isinstance(value, dict):
            return False
        _check_object(value, contract["types"][typ[1:]], path, problems, contract)
        return True
    raise ValueError(f"unknown type {typ!r} at {path}")


def _check_value(value, types, path, problems, contract):
    # Try each alternative; keep the nested problems of the first that matches its top-level type.
    for typ in types:
        nested = []
        if _check_type(value, typ, path, nested, contract):
            problems.extend(nested)
            return
    problems.append(f"{path}: {type(value).__name__} {json.dumps(value)[:60]} is not {'|'.join(types)}")


def _check_object(obj, spec, path, problems, contract):
    fields, groups = fields_of(spec, contract)
    for name, fspec in fields.items():
        optional, types, _ = parse_field(fspec)
        if name not in obj:
            if not optional:
                problems.append(f"{path}.{name}: missing")
            continue
        _check_value(obj[name], types, f"{path}.{name}", problems, contract)
    known = set(fields)
    for group in groups:
        known |= set(group)
        present = [k for k in group if k in obj]
        if not present:
            continue
        for name, fspec in group.items():
            optional, types, _ = parse_field(fspec)
            if name not in obj:
                if not optional:
                    problems.append(f"{path}.{name}: missing (the included row is partial)")
                continue
            _check_value(obj[name], types, f"{path}.{name}", problems, contract)
    if not spec.get("open"):
        for name in obj:
            if name not in known:
                problems.append(f"{path}.{name}: not documented")


def validate(doc, document, contract=CONTRACT):
    """Problems of `doc` as the document `document` (a key of contract["documents"])."""
    problems = []
    _check_object(doc, contract["documents"][document], document, problems, contract)
    return problems


def check_contract(contract=CONTRACT):
    """Problems of the contract itself: unknown types, fields without a description."""
    problems = []

    def walk(owner, fields):
        for name, spec in fields.items():
            _, types, doc = parse_field(spec)
            if not doc:
                problems.append(f"{owner}.{name}: no description")
            for typ in types:
                inner = typ
                while inner.startswith("array<"):
                    inner = inner[6:-1]
                for alt in split_alternatives(inner):
                    if alt.startswith("@") and alt[1:] not in contract["types"]:
                        problems.append(f"{owner}.{name}: unknown type {alt}")
                    elif not alt.startswith("@") and alt not in ("string", "integer", "number", "boolean", "null", "object*"):
                        problems.append(f"{owner}.{name}: unknown type {alt}")

    for name, spec in list(contract["types"].items()) + list(contract["documents"].items()):
        walk(name, spec["fields"])
        if spec.get("include") and spec["include"].lstrip("?") not in contract["types"]:
            problems.append(f"{name}: includes unknown type {spec['include']}")
    return problems


# ---- man page ----

def roff(text):
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def type_roff(types):
    parts = []
    for t in types:
        parts.append(roff(t.replace("@", "")))
    return " | ".join(parts)


def render_fields(spec, contract):
    lines = []
    parts = []
    if spec.get("envelope", None) is not False and "synopsis" in spec:
        parts.append("\\fBenvelope\\fR")
    inc = spec.get("include")
    if inc:
        parts.append(f"\\fB{roff(inc.lstrip('?'))}\\fR"
                     + (" (all of them, or none when the job's records cannot be read)" if inc.startswith("?") else ""))
    if parts:
        lines.append(f"The fields of {' and of '.join(parts)}, and:")
    for name, fspec in spec["fields"].items():
        optional, types, doc = parse_field(fspec)
        lines.append(".TP")
        lines.append(f"\\fB{roff(name)}\\fR  \\fI{type_roff(types)}\\fR{'  (may be absent)' if optional else ''}")
        lines.append(roff(doc[0].upper() + doc[1:] if doc else doc) + ".")
    if spec.get("open"):
        lines.append(".PP")
        lines.append("It may hold further fields, internal ones that may change without a new schema.")
    return lines


def render_man(contract=CONTRACT):
    out = [
        '.TH ARCHCTL\\-JSON 7 "2026-12-03" "archctl 0.1.0" "archctl manual"',
        ".\\\" Generated from tests/docs/json_contract.json by tests/docs/json_contract.py --write; do not edit.",
        ".SH NAME",
        "archctl\\-json \\- the documents archctl prints with \\-\\-json, field by field",
        ".SH DESCRIPTION",
        "With \\fB\\-\\-json\\fR every command prints exactly one JSON document on stdout (human text goes",
        "to stderr) and exits 0 (done), 10 (stopped cleanly; a rerun continues), 1 (error) or 2 (usage).",
        "The document is this contract: numbers are JSON numbers, lists are arrays, and a value",
        "that is not known is null. Fields are only added within a schema; a field that is removed",
        "or changes its type raises \\fBschema\\fR.",
        ".PP",
        "Each field below reads \\fBname\\fR \\fItype\\fR: \\fIstring\\fR, \\fIinteger\\fR, \\fInumber\\fR,",
        "\\fIboolean\\fR, \\fInull\\fR, \\fIobject*\\fR (an object whose keys are data, or internal),",
        "\\fIarray<T>\\fR, or the name of a type in TYPES; \\fIT | null\\fR may be null. A field marked",
        "(may be absent) is left out where it does not apply. An object holds exactly the fields",
        "listed unless its entry says it may hold more.",
        ".PP",
        "Errors: \\fBerror.message\\fR is one line; a report that continues below it (a table of files",
        "without an archive copy, notes) is in \\fBerror.details\\fR, one line per element, and",
        "NOT_COVERED lists those files in \\fBerror.missing\\fR.",
        ".SH DOCUMENTS",
    ]
    for name, spec in contract["documents"].items():
        out.append(f".SS {roff(name)}")
        out.append(f"\\fB{roff(spec['synopsis'])}\\fR")
        out.append(".br")
        out.append(roff(spec["doc"]))
        out.append(".PP")
        out += render_fields(spec, contract)
    out.append(".SH TYPES")
    for name, spec in contract["types"].items():
        out.append(f".SS {roff(name)}")
        out.append(roff(spec["doc"]))
        out.append(".PP")
        out += render_fields(spec, contract)
    out += [
        ".SH NOTIFICATIONS",
        "With \\fB[notify] exec = [\"/path/hook\", \"arg\"]\\fR in the configuration, archctl runs the hook",
        "(no shell) whenever a job ends \\(em done, failed, needs attention, cancelled; an eviction",
        "included \\(em and writes the \\fBnotify\\fR document to its stdin; what the hook prints goes to",
        "archctl's stderr. With \\fB[notify] url = \"https://...\"\\fR it POSTs the same document.",
        "The document holds no secret. A hook that cannot start, exits non-zero or runs longer than",
        "10 seconds (it is then killed), and a url that does not answer 2xx, are one warning on",
        "stderr each: the job's outcome and archctl's exit status do not change.",
        ".SH FILES",
        "The contract this page is made from ships with the sources as",
        "\\fItests/docs/json_contract.json\\fR; the test suite checks every command's real output",
        "against it.",
        ".SH SEE ALSO",
        ".BR archctl (1),",
        ".BR archctl\\-status (1),",
        ".BR archctl\\-job (1)",
    ]
    return "\n".join(out) + "\n"


def main(argv):
    problems = check_contract()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    if "--write" in argv:
        with open(MAN_PATH, "w", encoding="utf-8") as f:
            f.write(render_man())
        return 0
    sys.stdout.write(render_man())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
