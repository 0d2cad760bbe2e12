#!/usr/bin/env bash
# Builds the CUDA backend for sm_90 on this machine (nvcc needs no GPU) and packs what a GPU run
# needs into .deps/prebuilt/wick-sm90.tar.xz: the `wick` tool, the test binary, and the OpenMP
# OpenBLAS runtime. The lent GPU machine then spends its time running, not compiling:
#
#   scripts/pack-prebuilt.sh [SOURCE_DIR]          # here; SOURCE_DIR defaults to this checkout
#   device run, carry [".deps/prebuilt"]:  PREBUILT=.deps/prebuilt/wick-sm90.tar.xz scripts/gpu-check.sh
#
# SOURCE_DIR may be another worktree (a branch under test); the build goes to SOURCE_DIR/build-sm90.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "${1:-$root}" && pwd)
build=$src/build-sm90
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DWICK_BENCH=ON -DWICK_WERROR=ON "${launcher[@]}" >/dev/null
ninja -C "$build" wick_tool wick_tests
blas=$(grep '^WICK_OPENBLAS_LIBRARY:' "$build/CMakeCache.txt" | cut -d= -f2)
case "$blas" in
  *openblas-openmp*) ;;
  *) echo "pack-prebuilt: $blas is not the OpenMP OpenBLAS (apt-get install libopenblas-openmp-dev)" >&2; exit 1 ;;
esac
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
cp "$build/wick" "$build/tests/wick_tests" "$stage/"
strip --strip-unneeded "$stage/wick" "$stage/wick_tests"
for l in libgfortran.so.5 libgomp.so.1; do cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')" "$stage/lib/"; done
cp -L "$(dirname "$blas")/libopenblas.so.0" "$stage/lib/"
git -C "$src" log --oneline -1 >"$stage/COMMIT"
git -C "$src" status --short >>"$stage/COMMIT"
mkdir -p "$root/.deps/prebuilt"
# Written aside and renamed, so that a device run never picks up half an archive.
tar -C "$stage" -cf - . | xz -T0 -6 >"$root/.deps/prebuilt/wick-sm90.tar.xz.part"
mv "$root/.deps/prebuilt/wick-sm90.tar.xz.part" "$root/.deps/prebuilt/wick-sm90.tar.xz"
ls -l "$root/.deps/prebuilt/wick-sm90.tar.xz"
