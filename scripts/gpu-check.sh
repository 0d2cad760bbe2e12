#!/usr/bin/env bash
# The whole GPU run for the lent H100 machine (nvcc, cmake, ninja, 16 cores): build the CUDA backend
# (or unpack one built elsewhere), run the tests, `wick devices`, `wick check --device cuda`,
# optionally the benchmark against PyTorch, and compute-sanitizer memcheck over the GPU tests.
# Every log goes to $OUT (./gpu-out if unset), one file per step (and bench-cpu.json: every round
# of the CPU table). Keeps going after a failing step and exits non-zero if any step failed.
#
# environment:
#   PREBUILT=FILE   a tarball from scripts/pack-prebuilt.sh: skip the build (saves the device
#                   minutes of compiling); the tests then run as 8 gtest shards instead of ctest
#   BENCH="cuda cpu" also bench/run.sh against PyTorch on these devices (tables in bench-DEVICE.log)
#   BENCH_ARGS="--op gather --op copy"  more bench/run.sh options (a row filter, say)
#   CPU_ROUNDS=N    rounds of the CPU table, wick and torch alternating op by op (default 3; 0: one
#                   run of each side, one after the other)
#   MEMCHECK=0      skip compute-sanitizer;  MEMCHECK_FILTER=gtest filter for it
#   STEPS="tests check"  the steps to run after the build (default: tests check bench memcheck;
#                   one device command is limited to 10 minutes, so a full run takes two calls)
#   BUILD=DIR JOBS=N
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-16}
export PATH=/usr/local/cuda/bin:$PATH
# Libraries the GPU machine lacks (OpenBLAS, GoogleTest), unpacked here by scripts/gpu-deps.sh.
. scripts/deps-env.sh
status=0
# Python packages the interop tests compare with, carried as wheels (pip download -d .deps/wheels
# gguf safetensors tokenizers) since the machine cannot fetch them.
if [ -d .deps/wheels ]; then
  python3 -m pip install -q --no-index --find-links .deps/wheels gguf safetensors tokenizers >/dev/null 2>&1 ||
    echo "warning: the carried wheels did not install"
fi

step() {  # step NAME TIMEOUT_S CMD...: runs CMD with its output in $OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  printf '%-12s rc=%-3d %4ds  %s\n' "$name" "$rc" $((SECONDS - t0)) "$OUT/$name.log" | tee -a "$OUT/summary.txt"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

: >"$OUT/summary.txt"
{
  date -u
  nvidia-smi 2>&1 | head -20
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
  git log --oneline -1 2>/dev/null
} >"$OUT/env.log"

if [ -n "${PREBUILT:-}" ]; then
  BUILD=$(mktemp -d)
  tar -C "$BUILD" -xJf "$PREBUILT" || { echo "cannot unpack $PREBUILT"; exit 1; }
  mkdir -p "$BUILD/tests" && mv "$BUILD/wick_tests" "$BUILD/tests/"
  export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  { echo "prebuilt:"; cat "$BUILD/COMMIT"; } | tee -a "$OUT/env.log"
else
  step build_config 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_BENCH=ON || { cat "$OUT/summary.txt"; exit 1; }
  step build 300 ninja -C "$BUILD" -j"$JOBS" || { tail -40 "$OUT/build.log"; cat "$OUT/summary.txt"; exit 1; }
fi
"$BUILD/wick" devices 2>&1 | tee -a "$OUT/env.log"
# The GPU runtime tests take most of the device memory (out-of-memory recovery): run them alone,
# then everything else in parallel.
STEPS=${STEPS:-tests check bench memcheck}
has_step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
has_step tests && step gpu_tests 300 "$BUILD/tests/wick_tests" --gtest_filter='GpuRuntime*'
if ! has_step tests; then
  :
elif [ -n "${PREBUILT:-}" ]; then
  shards() {  # ctest's paths belong to the build machine: run 8 gtest shards instead
    local pids=() rc=0 i
    for i in 0 1 2 3 4 5 6 7; do
      GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i "$BUILD/tests/wick_tests" --gtest_filter='-GpuRuntime*' \
        >"$BUILD/shard$i.log" 2>&1 &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    cat "$BUILD"/shard*.log
    grep -h "^\[  PASSED  \]\|^\[  FAILED  \]\|tests ran" "$BUILD"/shard*.log
    return $rc
  }
  export -f shards
  export BUILD
  step tests 400 bash -c shards
  grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/tests.log" | tee -a "$OUT/summary.txt"
else
  step ctest 400 ctest --test-dir "$BUILD" -j8 --output-on-failure --timeout 300 -E '^GpuRuntime'
  grep -E "tests passed|tests failed" "$OUT/ctest.log" | tee -a "$OUT/summary.txt"
fi
# The LLM matrix on the GPU (ctest runs it on the CPU): tiny models of every variant and format
# against the NumPy reference, greedy tokens and `wick run`.
if has_step tests && [ -x "$BUILD/tests/llm/llm_make" ]; then
  step llm_cuda 400 python3 tests/llm/llm_reference.py --make "$BUILD/tests/llm/llm_make" \
    --tool "$BUILD/tests/llm/llm_tool" --wick "$BUILD/wick" --device cuda
  tail -1 "$OUT/llm_cuda.log" | tee -a "$OUT/summary.txt"
fi
if has_step check; then
  step check 540 "$BUILD/wick" check --device cuda
  tail -5 "$OUT/check.log"
fi
has_step bench || BENCH=""
for d in ${BENCH:-}; do
  # The CPU's speed drifts between phases of a run: there both sides alternate op by op (--rounds).
  rounds=()
  if [ "$d" = cpu ] && [ "${CPU_ROUNDS:-3}" -gt 0 ]; then
    rounds=(--rounds "${CPU_ROUNDS:-3}" --json "$OUT/bench-cpu.json")  # every round's times
  fi
  step "bench-$d" 450 bench/run.sh --no-build --build-dir "$BUILD" --device "$d" ${rounds[@]+"${rounds[@]}"} ${BENCH_ARGS:-}
done
if has_step memcheck && [ "${MEMCHECK:-1}" = 1 ] && command -v compute-sanitizer >/dev/null 2>&1; then
  # The tests past 2^31 elements need gigabytes and are slow under the sanitizer; everything else runs.
  # API errors are not reported: the out-of-memory test provokes them on purpose.
  step memcheck 400 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$BUILD/tests/wick_tests" \
    --gtest_filter="${MEMCHECK_FILTER:-*cuda*:Gpu*:DTypes/GpuCopies*:Llm*:-*LargeTensor*:*LargeTranspose*}"
  tail -3 "$OUT/memcheck.log"
fi
echo "---"
cat "$OUT/summary.txt"
exit $status
