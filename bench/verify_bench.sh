#!/usr/bin/env bash
# Benchmark: `archctl torrent verify` on a hybrid torrent against single-stream hashing tools.
#
#   bench/verify_bench.sh [SIZE_GIB] (default 4)   env: ARCHCTL_BIN, ARCHCTL_BENCH_DIR
#
# Generates SIZE_GIB of pseudo-random payload (AES-CTR keystream from openssl: fast and
# incompressible) in four files, creates a hybrid torrent with `archctl torrent create`, then
# times on the same bytes, page cache warm: `archctl torrent verify` (SHA-1 + SHA-256 merkle, all
# cores), `openssl dgst -sha1`, `openssl dgst -sha256` and `sha256sum` (one stream each).
# Prints throughput and ratios; the data is deleted on exit. Needs SIZE_GIB of free disk (and,
# for warm-cache numbers, as much free RAM).
set -euo pipefail

size_gib=${1:-4}
bin=${ARCHCTL_BIN:-archctl}
dir=${ARCHCTL_BENCH_DIR:-${TMPDIR:-/tmp}/archctl-verify-bench.$$}
payload=$dir/payload
torrent=$dir/payload.torrent

cleanup() { rm -rf -- "$dir"; }
trap cleanup EXIT INT TERM

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc -l; }
mib_s() { echo "scale=1; $bytes / 1048576 / $1" | bc -l; }

mkdir -p "$payload/sub"
total=$((size_gib * 1024 * 1024 * 1024))
part=$((total / 4))
# Sizes that do not end on a piece boundary, so the hybrid carries pad files.
sizes=($((part + 12345)) $((part - 54321)) $((part + 41976)) $((total - 3 * part)))
names=(a.bin sub/b.bin sub/c.bin d.bin)
echo "generating $size_gib GiB in $dir ..." >&2
for i in 0 1 2 3; do
  # openssl dies of SIGPIPE once head has enough: check the size instead of the pipeline status.
  { openssl enc -aes-128-ctr -nosalt -pass pass:archctl-bench-$i -in /dev/zero 2>/dev/null || true; } \
    | head -c "${sizes[$i]}" > "$payload/${names[$i]}"
  [ "$(stat -c %s "$payload/${names[$i]}")" = "${sizes[$i]}" ] || { echo "cannot generate ${names[$i]}" >&2; exit 1; }
done
bytes=0
for s in "${sizes[@]}"; do bytes=$((bytes + s)); done
files=()
for n in "${names[@]}"; do files+=("$payload/$n"); done

t0=$(now)
"$bin" torrent create "$payload" -o "$torrent" >&2
t_create=$(elapsed "$t0")

cat "${files[@]}" > /dev/null  # warm the page cache for every contender alike

t0=$(now); "$bin" torrent verify "$torrent" "$dir" >&2; t_verify=$(elapsed "$t0")
t0=$(now); cat "${files[@]}" | openssl dgst -sha1 > /dev/null; t_sha1=$(elapsed "$t0")
t0=$(now); cat "${files[@]}" | openssl dgst -sha256 > /dev/null; t_sha256=$(elapsed "$t0")
t0=$(now); cat "${files[@]}" | sha256sum > /dev/null; t_sha256sum=$(elapsed "$t0")

cores=$(nproc)
printf '\narchctl verify bench: %s GiB hybrid payload (4 files), %s cores, warm page cache\n' "$size_gib" "$cores"
printf '  %-34s %8.2f s  %8s MiB/s\n' "archctl torrent create (hybrid)" "$t_create" "$(mib_s "$t_create")"
printf '  %-34s %8.2f s  %8s MiB/s\n' "archctl torrent verify (hybrid)" "$t_verify" "$(mib_s "$t_verify")"
printf '  %-34s %8.2f s  %8s MiB/s\n' "openssl dgst -sha1" "$t_sha1" "$(mib_s "$t_sha1")"
printf '  %-34s %8.2f s  %8s MiB/s\n' "openssl dgst -sha256" "$t_sha256" "$(mib_s "$t_sha256")"
printf '  %-34s %8.2f s  %8s MiB/s\n' "sha256sum" "$t_sha256sum" "$(mib_s "$t_sha256sum")"
printf '  ratio verify vs openssl sha1:   %sx\n' "$(echo "scale=2; $t_sha1 / $t_verify" | bc -l)"
printf '  ratio verify vs openssl sha256: %sx\n' "$(echo "scale=2; $t_sha256 / $t_verify" | bc -l)"
printf '  ratio verify vs sha256sum:      %sx\n' "$(echo "scale=2; $t_sha256sum / $t_verify" | bc -l)"
printf '  (verify computes SHA-1 and SHA-256 over every byte; target >= 1.6x openssl sha1 on 2 cores)\n'
