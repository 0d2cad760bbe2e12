#!/usr/bin/env bash
# Configures a ROCm build: scripts/configure-rocm.sh [build dir, default build-rocm] [cmake args...]
# then: ninja -C build-rocm
# On Debian 12 this needs: apt-get install hipcc libamdhip64-dev libamd-comgr-dev
#   libhsa-runtime-dev rocm-device-libs
# The Debian-specific setup (clang++-15 as the HIP compiler, the hip-lang package location, device
# library path, HIP version) happens in cmake/WickRocmDebian.cmake, so a plain
#   cmake -S . -B build-rocm -G Ninja -DWICK_ROCM=ON
# does the same; this script only picks the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-rocm}
shift || true
exec cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_ROCM=ON \
  -DCMAKE_HIP_ARCHITECTURES="${WICK_HIP_ARCHITECTURES:-gfx90a;gfx1030}" "$@"
