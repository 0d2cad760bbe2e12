#!/usr/bin/env bash
# Installs the Debian 12 packages wick needs to build and test on the CPU. Does nothing when they are
# all present. Runs apt-get through sudo when not root.
set -euo pipefail

pkgs=(g++ cmake ninja-build libopenblas-openmp-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev libzip-dev libpcre2-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
