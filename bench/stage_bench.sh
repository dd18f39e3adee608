#!/usr/bin/env bash
# stage benchmarks (docs/design.md "Performance rules"), driven through the real node protocol:
#   1. hard-link staging of a 100,000-file tree vs `cp -al` of the same tree (target <= 1.3x)
#   2. the same for 10,000 files: time per file must stay flat (100k/10k target <= 11)
#   3. copy staging of a 1 GiB file (read + xxh3-128 + write in one pass, then fsync)
#      vs `cp` and vs `cp` followed by an fsync of the copy (target <= 1.1x)
# Not pass/fail: prints the numbers. Usage: bench/stage_bench.sh [ARCHCTL_BIN] [SCRATCH_PARENT]
# Generated data is removed on exit.
set -euo pipefail

bin=${1:-${ARCHCTL_BIN:-archctl}}
parent=${2:-${TMPDIR:-/tmp}}
work=$(mktemp -d "$parent/archctl-stage-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/qb" "$work/sync/route"

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }

# make_tree N DIR REQUEST JOB: N small files in 100 directories, and the stage request for them.
make_tree() {
    python3 - "$1" "$2" "$3" "$4" "$work" <<'PY'
import json, os, sys
n, tree, request, job, work = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
files = []
for i in range(n):
    rel = f"d{i % 100:03d}/f{i:06d}.bin"
    path = os.path.join(tree, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = (b"%d\n" % i) * 16
    with open(path, "wb") as f:
        f.write(data)
    files.append({"index": i, "path": rel, "size": len(data)})
args = {"job_dir": f"{work}/sync/route/{job}", "source_base": tree, "files": files, "method": "hardlink"}
with open(request, "w") as f:
    f.write(json.dumps({"type": "request", "id": 1, "op": "stage", "args": args}) + "\n")
PY
}

# serve REQUEST: runs one request through `archctl node serve`, prints the response's result line.
serve() {
    "$bin" node serve --root "$work/qb" --root "$work/sync" < "$1" | grep '"type":"response"'
}

check_ok() {
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["ok"] and r["result"]["complete"], r; print(json.dumps({k: r["result"][k] for k in ("files_linked","files_copied","bytes_copied","bytes_hashed")} | {"node_rchar": r["io"]["rchar"]}))' "$1"
}

link_bench() {
    local n=$1
    make_tree "$n" "$work/qb/tree$n" "$work/req$n.json" "job$n"
    sync
    local t0 t1 t2 t3 out
    t0=$(now); out=$(serve "$work/req$n.json"); t1=$(now)
    check_ok "$out"
    t2=$(now); cp -al "$work/qb/tree$n" "$work/qb/cp$n"; t3=$(now)
    local tc
    last=$(elapsed "$t0" "$t1"); tc=$(elapsed "$t2" "$t3")
    echo "hardlink $n files: archctl stage ${last}s, cp -al ${tc}s, ratio $(ratio "$last" "$tc")x"
}

echo "archctl: $("$bin" --version 2>/dev/null || echo "$bin")  scratch: $work ($(df -T "$work" | awk 'NR==2{print $2}'))"
last=0
link_bench 10000; t10=$last
link_bench 100000; t100=$last
echo "scaling 10k -> 100k files: $(ratio "$t100" "$t10")x (linear would be 10x)"
rm -rf "$work/qb/tree10000" "$work/qb/cp10000" "$work/qb/tree100000" "$work/qb/cp100000" "$work/sync/route"/*

# 1 GiB copy: archctl stage (method copy: read, hash, write, fsync) vs cp, and vs cp + fsync.
head -c 1G /dev/urandom > "$work/qb/big.bin"
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
size = os.path.getsize(f"{work}/qb/big.bin")
args = {"job_dir": f"{work}/sync/route/jobbig", "source_base": f"{work}/qb", "method": "copy",
        "files": [{"index": 0, "path": "big.bin", "size": size}]}
open(f"{work}/reqbig.json", "w").write(json.dumps({"type": "request", "id": 1, "op": "stage", "args": args}) + "\n")
PY
cat "$work/qb/big.bin" > /dev/null  # both sides start from a warm page cache
sync  # and with no dirty pages of the generated file left to throttle the first writer
t0=$(now); out=$(serve "$work/reqbig.json"); t1=$(now)
check_ok "$out"
t2=$(now); cp "$work/qb/big.bin" "$work/sync/cp.bin"; t3=$(now)
sync "$work/sync/cp.bin"; t4=$(now)
ta=$(elapsed "$t0" "$t1"); tc=$(elapsed "$t2" "$t3"); tcs=$(elapsed "$t2" "$t4")
echo "copy 1 GiB: archctl stage ${ta}s (incl. xxh3-128 and fsync), cp ${tc}s (ratio $(ratio "$ta" "$tc")x), cp+fsync ${tcs}s (ratio $(ratio "$ta" "$tcs")x)"
