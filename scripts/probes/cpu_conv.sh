#!/usr/bin/env bash
# Times the CPU section's convolutions (wick bench --device cpu --op conv) on the GPU machine: this
# tree's build at the active level and at WICK_CPU_ISA=$ALT (default avx2: OpenBLAS for every
# dtype), optionally a base tree's build (BASE_SRC: a directory holding another commit's sources,
# e.g. `git archive COMMIT | tar -x -C .deps/base`, carried along), and PyTorch, in ROUNDS rounds.
# Libraries from .deps/root (scripts/gpu-deps.sh). Output to $OUT/cpu_conv.log (./gpu-out if unset).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
REPS=${REPS:-20}
ALT=${ALT:-avx2}
ROUNDS=${ROUNDS:-3}
OPS=${OPS:-conv}
B=${BUILD:-build-cpu}
. scripts/deps-env.sh
rows() {  # rows LABEL CMD...: the table rows of one run, labelled
  "${@:2}" --device cpu --cpu-shapes --reps "$REPS" --op "$OPS" 2>&1 | grep -E '^(conv|matmul|bmm)' | sed "s/^/$1 /"
}
{
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_TESTS=OFF >/dev/null && ninja -C "$B" wick >/dev/null ||
    exit 1
  if [ -n "${BASE_SRC:-}" ]; then
    cmake -S "$BASE_SRC" -B "$B-base" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_TESTS=OFF >/dev/null &&
      ninja -C "$B-base" wick >/dev/null || exit 1
  fi
  lscpu | grep -E "Model name|^CPU\(s\)|MHz|L2|L3"
  for r in $(seq "$ROUNDS"); do
    echo "--- round $r"
    rows "this  " "$B/wick" bench
    rows "$ALT " env WICK_CPU_ISA="$ALT" "$B/wick" bench
    [ -z "${BASE_SRC:-}" ] || rows "base  " "$B-base/wick" bench
    python3 bench/peers/torch_bench.py --device cpu --cpu-shapes --reps "$REPS" --op "$OPS" 2>&1 >/dev/null |
      sed 's/^torch_bench: /torch  /'
  done
} 2>&1 | tee "$OUT/cpu_conv.log"
