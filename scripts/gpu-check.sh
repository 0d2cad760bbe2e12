#!/usr/bin/env bash
# The whole GPU run for the lent H100 machine (nvcc, cmake, ninja, 16 cores): configure and build
# the CUDA backend, run the tests, `wick devices`, `wick check --device cuda`, and (if present)
# compute-sanitizer memcheck over the GPU tests (MEMCHECK=0 skips it). Every log goes to $OUT (./gpu-out if unset).
# Keeps going after a failing step and exits non-zero if any step failed. About 5-8 minutes.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-16}
export PATH=/usr/local/cuda/bin:$PATH
# Libraries the GPU machine lacks (OpenBLAS, GoogleTest), unpacked here by scripts/gpu-deps.sh.
if [ -d .deps/root ]; then
  deps=$(pwd)/.deps/root/usr
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
status=0

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

step build_config 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 || { cat "$OUT/summary.txt"; exit 1; }
step build 300 ninja -C "$BUILD" -j"$JOBS" || { tail -40 "$OUT/build.log"; cat "$OUT/summary.txt"; exit 1; }
"$BUILD/wick" devices 2>&1 | tee -a "$OUT/env.log"
# The GPU runtime tests take most of the device memory (out-of-memory recovery): run them alone,
# then everything else in parallel.
step gpu_tests 300 "$BUILD/tests/wick_tests" --gtest_filter='GpuRuntime*'
step ctest 400 ctest --test-dir "$BUILD" -j8 --output-on-failure --timeout 300 -E '^GpuRuntime'
grep -E "tests passed|tests failed" "$OUT/ctest.log" | tee -a "$OUT/summary.txt"
step check 300 "$BUILD/wick" check --device cuda
tail -5 "$OUT/check.log"
if [ "${MEMCHECK:-1}" = 1 ] && command -v compute-sanitizer >/dev/null 2>&1; then
  # The tests past 2^31 elements need gigabytes and are slow under the sanitizer; everything else runs.
  # API errors are not reported: the out-of-memory test provokes them on purpose.
  step memcheck 400 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$BUILD/tests/wick_tests" --gtest_filter='*cuda*:Gpu*:DTypes/GpuCopies*:-*LargeTensor*:*LargeTranspose*'
  tail -3 "$OUT/memcheck.log"
fi
echo "---"
cat "$OUT/summary.txt"
exit $status
