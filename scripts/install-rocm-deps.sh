#!/usr/bin/env bash
# Installs what the ROCm build needs on Debian 12: the HIP compiler and runtime from Debian's
# packages (apt-get), and rocBLAS 5.5 from Debian 13 unpacked into .deps/rocm13 (scripts/fetch-rocblas.sh;
# nothing of Debian 13 goes into the system). Does nothing that is already done. Runs apt-get through
# sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(hipcc libamdhip64-dev libamd-comgr-dev libhsa-runtime-dev rocm-device-libs)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
scripts/fetch-rocblas.sh
