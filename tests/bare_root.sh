#!/usr/bin/env bash
# The bare root check: do the README's quick-start commands pass on a bare Debian 12?
#
# Creates a `debootstrap --variant=minbase bookworm` root in DIR (default build/bare-root) from
# the Debian mirror this host's apt sources use, copies the committed tree (git archive HEAD)
# to /src/archctl inside it, mounts /proc, /sys and /dev there and, chrooted, runs:
#   tests/deps.sh                     always (both README commands start with it)
#   tests/fuzz/run.sh … 10            with --fuzz: build the libFuzzer target, run it 10 s
#   tests/run.sh                      the README's test command, unless --no-test
#   examples/demo.sh                  the README's demo command, with --demo
# Every mount under DIR is undone on any exit. Needs root. Not part of the ctest gate: it
# grows the root to about 1.5 GB and builds the project from scratch (about an hour on two
# shared cores); see tests/README.md.
#
#   tests/bare_root.sh [--fuzz] [--no-test] [--demo] [--keep] [--reuse] [DIR]
#     --keep    keep DIR after a successful run (it is always kept after a failure)
#     --reuse   use the root already bootstrapped in DIR instead of refusing a non-empty DIR
# Environment: ARCHCTL_JOBS (build jobs inside, default 1), ARCHCTL_BARE_MIRROR (mirror URL).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz=0 test=1 demo=0 keep=0 reuse=0 dir=""
for arg in "$@"; do
  case "$arg" in
    --fuzz) fuzz=1 ;;
    --no-test) test=0 ;;
    --demo) demo=1 ;;
    --keep) keep=1 ;;
    --reuse) reuse=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "archctl: error: unknown option '$arg'" >&2; exit 2 ;;
    *) [ -z "$dir" ] || { echo "archctl: error: more than one DIR" >&2; exit 2; }; dir="$arg" ;;
  esac
done
dir="${dir:-$root/build/bare-root}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ "$dir" != / ] || { echo "archctl: error: refusing '/' as the bare root" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "archctl: error: the bare root check needs root (debootstrap, chroot, mount)" >&2; exit 1; }
log() { echo "bare_root: $(date +%H:%M:%S) $*" >&2; }

# "URI SUITE" for every enabled deb entry of the host's apt sources, one-line and deb822 formats.
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 3 { print $2, $3 }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() { if (deb && enabled) for (u in uris) for (s in suites) print uris[u], suites[s];
                            deb = 0; enabled = 1; delete uris; delete suites }
         BEGIN { enabled = 1 }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         { key = tolower($1); sub(/:$/, "", key); $1 = "" }
         key == "types" { deb = ($0 ~ /(^|[ \t])deb([ \t]|$)/) }
         key == "enabled" { enabled = ($2 !~ /^(no|false|0)$/) }
         key == "uris" { split(substr($0, 2), uris, /[ \t]+/) }
         key == "suites" { split(substr($0, 2), suites, /[ \t]+/) }
         END { flush() }' "$f"
  done
}

mirror="${ARCHCTL_BARE_MIRROR:-$(apt_entries | awk '$2 == "bookworm" { print $1; exit }')}"
security="$(apt_entries | awk '$2 == "bookworm-security" { print $1; exit }')"
updates="$(apt_entries | awk -v m="$mirror" '$2 == "bookworm-updates" && $1 == m { print "yes"; exit }')"
[ -n "$mirror" ] || { echo "archctl: error: no bookworm entry in the host's apt sources; set ARCHCTL_BARE_MIRROR" >&2; exit 1; }

# Unmount everything below DIR, deepest first; used on every exit.
unmount_all() {
  local m
  awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" || log "could not unmount $m"
  done
}
status=1
finish() {
  status=$?
  unmount_all
  if awk -v d="$dir/" 'index($2 "/", d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    log "mounts remain below $dir; not removing it"
  elif [ "$status" -eq 0 ] && [ "$keep" -eq 0 ]; then
    rm -rf --one-file-system "$dir"
  else
    log "bare root kept in $dir (exit $status)"
  fi
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

if [ -e "$dir/.archctl-bare-root" ] && [ "$reuse" -eq 1 ]; then
  log "reusing the bare root in $dir"
elif [ -n "$(ls -A "$dir")" ]; then
  echo "archctl: error: '$dir' is not empty (pass --reuse to use a root this script made)" >&2
  trap - EXIT; exit 1
else
  command -v debootstrap >/dev/null || {
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  log "debootstrap --variant=minbase bookworm from $mirror"
  start=$SECONDS
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
    { log "debootstrap failed; see $dir.debootstrap.log"; exit 1; }
  log "debootstrap took $((SECONDS - start)) s, root is $(du -sh --one-file-system "$dir" | cut -f1)"
  {
    echo "deb $mirror bookworm main"
    [ -z "$updates" ] || echo "deb $mirror bookworm-updates main"
    [ -z "$security" ] || echo "deb $security bookworm-security main"
  } >"$dir/etc/apt/sources.list"
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  [ -s "$dir/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
  touch "$dir/.archctl-bare-root"
fi

rm -rf "$dir/src/archctl"
mkdir -p "$dir/src/archctl"
git -C "$root" archive HEAD | tar -x -C "$dir/src/archctl"
log "copied $(git -C "$root" rev-parse --short HEAD) to /src/archctl"

mount -t proc proc "$dir/proc"
mount -t sysfs sysfs "$dir/sys"
mount --rbind /dev "$dir/dev"
mount --make-rslave "$dir/dev"

# One step inside the root, with a clean environment and its own timing in the log.
inside() {
  local what="$1" start=$SECONDS
  shift
  log "start: $what"
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    TERM=dumb ARCHCTL_JOBS="${ARCHCTL_JOBS:-1}" chroot "$dir" /bin/bash -c "cd /src/archctl && $*"
  log "done: $what ($((SECONDS - start)) s)"
}
inside "tests/deps.sh" tests/deps.sh
[ "$fuzz" -eq 0 ] || inside "fuzz target build and 10 s run" tests/fuzz/run.sh /tmp/fuzz-build 10
[ "$test" -eq 0 ] || inside "tests/run.sh" tests/run.sh
[ "$demo" -eq 0 ] || inside "examples/demo.sh" examples/demo.sh
log "all steps passed"
