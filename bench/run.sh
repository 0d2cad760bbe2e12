#!/usr/bin/env bash
# Builds wick if needed (Release, Ninja), runs `wick bench --json` and bench/peers/torch_bench.py on
# the same device and shapes, and prints one markdown table (bench/peers/compare.py).
#
# usage: bench/run.sh [--cuda] [--build-dir DIR] [--no-build] [--out FILE] [--no-torch] [--rounds N]
#                     [bench options]
#   bench options (given to both): --device D  --op NAME (repeatable)  --reps N
#                                  --quick | --cpu-shapes | --gpu-shapes  --llm  --quant  --bw GBS
#   --cuda        configure with -DWICK_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 (or WICK_CUDA=1)
#   --no-build    use DIR/wick as it is (a build made elsewhere, e.g. scripts/pack-prebuilt.sh)
#   --out FILE    also write the table to FILE
#   --json FILE   also write both sides' rows as JSON: {"wick": ..., "torch": ...} (with --rounds,
#                 each row keeps every round's time in rounds_ms)
#   --no-torch    skip PyTorch (the table says so)
#   --rounds N    alternate wick and torch op by op for N rounds, each row the median of its rounds
#                 (bench/peers/interleave.py): both sides of a row seconds apart, for machines whose
#                 speed drifts (the lent machine's CPU); default: all of wick's rows, then torch's
# environment: WICK_BUILD_DIR (default: build), WICK_CMAKE_ARGS (more cmake -D options),
#              WICK_JOBS (ninja -j), PYTHON (default: python3)
#
# On the GPU machine:  bench/run.sh --cuda --out bench/last-gpu.md
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_BUILD_DIR:-$root/build}
py=${PYTHON:-python3}
cuda=${WICK_CUDA:-0}
out=""
json_out=""
use_torch=1
build_it=1
rounds=0
bench_args=()   # to wick bench as given
torch_args=()   # to torch_bench.py: the same minus the device and shape flags, which follow wick's run

while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=1 ;;
    --build-dir) build=$2; shift ;;
    --out) out=$2; shift ;;
    --json) json_out=$2; shift ;;
    --no-torch) use_torch=0 ;;
    --no-build) build_it=0 ;;
    --rounds) rounds=$2; shift ;;
    --device) bench_args+=("$1" "$2"); shift ;;
    --op|--reps|--bw) bench_args+=("$1" "$2"); torch_args+=("$1" "$2"); shift ;;
    --quick|--cpu-shapes|--gpu-shapes|--llm|--quant) bench_args+=("$1") ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "bench/run.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- build (output to stderr: stdout carries only the table) ----
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
if [ "$cuda" = 1 ]; then cmake_args+=(-DWICK_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90); fi
# shellcheck disable=SC2206  # word splitting of the extra options is intended
if [ -n "${WICK_CMAKE_ARGS:-}" ]; then cmake_args+=(${WICK_CMAKE_ARGS}); fi
generator=()
if [ ! -f "$build/CMakeCache.txt" ]; then generator=(-G Ninja); fi
if [ "$build_it" = 1 ]; then
  {
    cmake -S "$root" -B "$build" "${generator[@]}" "${cmake_args[@]}" >/dev/null
    ninja -C "$build" ${WICK_JOBS:+-j "$WICK_JOBS"} wick_tool
  } >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Writes --json's file from the two sides' documents (torch's may be missing).
keep_json() {
  [ -n "$json_out" ] || return 0
  "$py" -c 'import json, os, sys
w = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else None
json.dump({"wick": w, "torch": t}, open(sys.argv[3], "w"), indent=1)' "$tmp/wick.json" "$tmp/torch.json" "$json_out"
}

if [ "$rounds" -gt 0 ] && [ "$use_torch" = 1 ] && "$py" -c 'import torch' 2>/dev/null; then
  # ---- interleaved: both sides op by op ----
  "$py" "$root/bench/peers/interleave.py" --wick "$build/wick" --python "$py" --rounds "$rounds" \
    --wick-out "$tmp/wick.json" --torch-out "$tmp/torch.json" "${bench_args[@]}" 2>"$tmp/interleave.log" || {
    rc=$?
    tail -n 20 "$tmp/interleave.log" >&2
    echo "bench/run.sh: interleave.py failed (exit $rc)" >&2
    exit 1
  }
  compare_args=("$tmp/wick.json" "$tmp/torch.json")
else
  # ---- wick ----
  wick_rc=0
  "$build/wick" bench --json "${bench_args[@]}" >"$tmp/wick.json" || wick_rc=$?
  if ! "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/wick.json" 2>/dev/null; then
    echo "bench/run.sh: wick bench failed (exit $wick_rc) without JSON output" >&2
    exit 1
  fi
  # exit 1 with JSON = some rows raised errors; the table lists them.
  read -r device shapes < <("$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["device"], d["shapes"])' "$tmp/wick.json")
  shape_flags=()
  case "$shapes" in llm-*) shape_flags+=(--llm) ;; quant-*) shape_flags+=(--quant) ;; esac
  case "${shapes#*-}" in
    quick) shape_flags+=(--quick) ;;
    cpu) shape_flags+=(--cpu-shapes) ;;
    *) shape_flags+=(--gpu-shapes) ;;
  esac

  # ---- torch, same device and shapes ----
  compare_args=("$tmp/wick.json")
  if [ "$use_torch" = 0 ]; then
    compare_args+=(--torch-missing "torch not run (--no-torch)")
  elif ! "$py" -c 'import torch' 2>/dev/null; then
    compare_args+=(--torch-missing "torch not found ($py cannot import torch)")
  elif "$py" "$root/bench/peers/torch_bench.py" --device "$device" "${shape_flags[@]}" "${torch_args[@]}" \
      >"$tmp/torch.json" 2>"$tmp/torch.log"; then
    compare_args+=("$tmp/torch.json")
  else
    rc=$?
    tail -n 20 "$tmp/torch.log" >&2
    compare_args+=(--torch-missing "torch_bench.py failed (exit $rc; its log tail is on stderr)")
  fi
fi

if [ -n "$out" ]; then compare_args+=(--out "$out"); fi
keep_json
"$py" "$root/bench/peers/compare.py" "${compare_args[@]}"
