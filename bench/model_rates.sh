#!/usr/bin/env bash
# The model rows of bench/RESULTS.md: writes Llama-3-8B-shaped random-weight models with
# wick_make_model (Q4_K_M, Q8_0, BF16), then runs `wick bench-model` on each (pp512, tg128 from an
# empty cache, tg128 after the 512-token prompt; median of runs) and prints one JSON line per model.
#
# usage: bench/model_rates.sh BUILD_DIR [MODEL_DIR] [FORMATS...]
#   BUILD_DIR holds wick and bench/wick_make_model (configure with -DWICK_BENCH=ON);
#   MODEL_DIR (default /tmp/wick-models) keeps the models between runs; FORMATS default
#   "q4_k_m q8_0 bf16". Environment: DEVICE (default cuda), RUNS (default 3), SHAPE (default 8b),
#   BENCH_FLAGS (more bench-model options, such as --no-graphs).
set -euo pipefail
build=${1:?usage: bench/model_rates.sh BUILD_DIR [MODEL_DIR] [FORMATS...]}
dir=${2:-/tmp/wick-models}
shift $(($# < 2 ? $# : 2))
formats=("$@")
[ ${#formats[@]} -gt 0 ] || formats=(q4_k_m q8_0 bf16)
device=${DEVICE:-cuda}
shape=${SHAPE:-8b}
mkdir -p "$dir"
for f in "${formats[@]}"; do
  model="$dir/llama-$shape-$f.gguf"
  [ -f "$model" ] || "$build/bench/wick_make_model" "$model" --format "$f" --shape "$shape" >&2
  "$build/wick" bench-model "$model" --device "$device" -r "${RUNS:-3}" --json ${BENCH_FLAGS:-}
done
