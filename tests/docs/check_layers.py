#!/usr/bin/python3
"""The rooms of lib/jobs and lib/node are layered (docs/design.md "Rooms"): a folder includes
only the folders below it, so the include graph between them stays acyclic. Exit 1 naming every
include that goes up or sideways."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# folder → the folders of the same module it may include (besides itself)
LAYERS = {
    "lib/jobs": {
        "core": set(),
        "evidence": {"core"},
        "transfer": {"core", "evidence"},
        "evict": {"core", "evidence"},
        "report": {"core", "evidence", "transfer"},
    },
    "lib/node": {
        "wire": set(),
        "server": {"wire"},
        "client": {"wire", "server"},  # the local transport runs the server in this process
    },
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(root=ROOT):
    found = []
    for module, rooms in LAYERS.items():
        for room, allowed in rooms.items():
            folder = os.path.join(root, module, room)
            for dirpath, _, names in os.walk(folder):
                for name in sorted(names):
                    if not name.endswith((".cpp", ".hpp")):
                        continue
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        for number, line in enumerate(f, 1):
                            m = INCLUDE.match(line)
                            if not m or not m.group(1).startswith(module + "/"):
                                continue
                            other = m.group(1)[len(module) + 1:].split("/", 1)[0]
                            if other != room and other not in allowed:
                                rel = os.path.relpath(path, root)
                                found.append(f"{rel}:{number}: {module}/{room}/ includes {m.group(1)}; "
                                             f"{room}/ may include {', '.join(sorted(allowed)) or 'no other folder'}")
    return found


def main():
    found = violations()
    for v in found:
        print(v)
    if found:
        print(f"check_layers: {len(found)} include(s) against the layering of docs/design.md \"Rooms\"")
        return 1
    print("check_layers: every folder of lib/jobs and lib/node includes only the folders below it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
