#!/usr/bin/env bash
# Builds the CPU library (Release, with wick bench) and scripts/probes/reduce_rows.cpp on the GPU
# machine, runs the probe (16 threads) and the max / sum / argmax rows of the benchmark against torch
# (BENCH_OPS='' for every row; ROUNDS, default 3). Output in $OUT (./gpu-out if unset).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
. scripts/deps-env.sh
B=build-cpu
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_BENCH=ON >/dev/null &&
  ninja -C $B -j16 wick >/dev/null; } || exit 1
L=$(scripts/probes/wick-link.sh $B) || exit 1
# shellcheck disable=SC2086
g++ -std=c++20 -O3 -march=native -fopenmp -Iinclude -o $B/reduce_rows scripts/probes/reduce_rows.cpp $L || exit 1
lscpu | grep -E "Model name|^CPU\(s\)|Thread|L2|L3|NUMA"
OMP_NUM_THREADS=16 $B/reduce_rows 20 3 2>&1 | tee "$OUT/probe.log"
# shellcheck disable=SC2086
bench/run.sh --no-build --build-dir $B --device cpu ${BENCH_OPS---op max --op sum --op argmax} --rounds "${ROUNDS:-3}" \
  --out "$OUT/bench.md" >"$OUT/bench.log" 2>&1
tail -60 "$OUT/bench.md"
