#!/usr/bin/env bash
# Builds wick's CUDA backend (build-gpu, as scripts/gpu-check.sh does) and scripts/probes/launch_paths.cu
# against it, linked like the wick tool, and runs the probe. On the GPU machine, from the repository root.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
. scripts/deps-env.sh
B=${BUILD:-build-gpu}
[ -f "$B/build.ninja" ] || cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_BENCH=ON >/dev/null
ninja -C "$B" -j"${JOBS:-16}" wick_tool >/dev/null
nvcc -std=c++20 -O2 -arch=sm_90 -DWICK_GPU_CUDA=1 -Iinclude -Isrc --expt-relaxed-constexpr \
  -c scripts/probes/launch_paths.cu -o "$B/launch_paths.o"
# The wick tool's link command with its objects replaced by the probe's (and the driver added).
link=$(ninja -C "$B" -t commands wick_tool | tail -1 |
  sed -E 's# CMakeFiles/wick_tool\.dir/[^ ]*\.o##g; s# -o wick # -o launch_paths launch_paths.o -lcuda #')
(cd "$B" && eval "$link")
"$B/launch_paths"
