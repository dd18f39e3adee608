#!/usr/bin/env bash
# Install everything archctl needs to build, test and run its demo on Debian 12 (idempotent, no
# prompts). Skips apt when every package is already installed.
#
# apt runs with --no-install-recommends, so every package a build or a test uses is named here,
# including those Debian ships only as a recommendation (a bare debootstrap root has none):
#   libclang-rt-14-dev  clang's runtimes (libFuzzer, ASan, UBSan): the fuzz target cannot link
#                       without it; clang-14 only recommends it (through libclang-common-14-dev)
#   llvm                /usr/bin/llvm-symbolizer, which clang's sanitizer runtime needs to print
#                       a fuzz crash with file:line (GCC's runtime symbolizes by itself)
# Beyond these and the essential packages (bash, coreutils, grep, util-linux's mount/umount for
# the tmpfs tests, dpkg), the tests run only what they build, python3 with its standard library,
# python3-libtorrent, qbittorrent-nox and syncthing, and openssh-server with openssh-client
# (tests/integration/test_ssh.py reaches a node through an sshd it starts on 127.0.0.1), and
# e2fsprogs (tests/integration/test_merge_floor.py makes a small loop-mounted ext4), and
# mktorrent with transmission-cli (transmission-create): tests/integration/test_creators.py
# archives torrents made by the tools people use; zsh and fish
# (tests/integration/test_shells.py drives the completion scripts in each real shell), tmux
# (tests/integration/test_panel.py reads the progress panel at 80 and 120 columns), dpkg-dev
# (dpkg-shlibdeps: tests/integration/test_package.py builds the .deb with cpack), file (cpack's
# DEB generator runs `file` on every packaged file to find the binaries for dpkg-shlibdeps; a
# minbase root has none and nothing above pulls it in) and procps (pgrep:
# tests/integration/test_ssh.py checks that no ssh of a timed-out call is left behind).
# tests/deps_programs.tsv lists every program the build, the package step, the suites and these
# scripts call, with its package; ctest docs.deps (tests/docs/check_deps.py) fails when a called
# program's package is neither in the list below nor part of a minbase root.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-14-dev llvm
  libcli11-dev libfmt-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev libxxhash-dev
  doctest-dev libtomlplusplus-dev
  qbittorrent-nox syncthing python3 python3-libtorrent openssl e2fsprogs openssh-server openssh-client
  mktorrent transmission-cli
  zsh fish tmux dpkg-dev file procps
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "archctl: error: cannot install '${missing[*]}': not root and no sudo" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "archctl: installing ${missing[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
