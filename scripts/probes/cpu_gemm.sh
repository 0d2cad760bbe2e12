#!/usr/bin/env bash
# Builds the CPU library (Release) and scripts/probes/cpu_gemm.cpp on the GPU machine (its libraries
# from .deps/root, scripts/gpu-deps.sh), then times wick's matmul for one dtype (default f32) at the
# active level, at WICK_CPU_ISA=$ALT (default avx2: OpenBLAS for f32) and PyTorch's, in ROUNDS rounds.
# Output to $OUT/cpu_gemm-DTYPE.log (./gpu-out if unset).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
DT=${1:-f32}
REPS=${REPS:-20}
ALT=${ALT:-avx2}
ROUNDS=${ROUNDS:-2}
B=${BUILD:-build-cpu}
. scripts/deps-env.sh
{
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C "$B" wick >/dev/null || exit 1
  L=$(scripts/probes/wick-link.sh "$B") || exit 1
  # shellcheck disable=SC2086
  g++ -std=c++20 -O2 -Iinclude -o "$B/cpu_gemm" scripts/probes/cpu_gemm.cpp $L || exit 1
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L2|L3"
  for r in $(seq "$ROUNDS"); do
    echo "--- round $r"
    "$B/cpu_gemm" "$REPS" "$DT"
    WICK_CPU_ISA=$ALT "$B/cpu_gemm" "$REPS" "$DT" | sed "s/^wick/$ALT/"
    python3 scripts/probes/cpu_gemm.py "$REPS" "$DT"
  done
} 2>&1 | tee "$OUT/cpu_gemm-$DT.log"
