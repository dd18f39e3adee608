#!/usr/bin/env bash
# Install everything archctl needs to build, test and run its demo on Debian 12 (idempotent, no
# prompts). Skips apt when every package is already installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config clang
  libcli11-dev libfmt-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev libxxhash-dev
  doctest-dev libtomlplusplus-dev
  qbittorrent-nox syncthing python3 python3-libtorrent openssl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "archctl: installing ${missing[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
