#!/usr/bin/env bash
# Fetches rocBLAS 5.5 (packaged in Debian 13 "trixie" only) into a build-local prefix, so that the
# ROCm build of wick compiles and links its GEMM shim (src/gpu/runtime/blas.cu) on Debian 12.
# wick calls rocBLAS directly: hipBLAS would add a dependency on rocSOLVER for nothing.
#
#   scripts/fetch-rocblas.sh [PREFIX]        (default: .deps/rocm13 in the repository)
#
# Nothing is installed into the system and the system's apt sources are not touched: apt runs
# with its own state, cache and source list under PREFIX/.apt, and the .debs are unpacked with
# dpkg -x. cmake/WickGpu.cmake looks in .deps/rocm13 by default (cache variable WICK_ROCBLAS_ROOT).
# Debian 13's librocblas.so needs glibc 2.38 and GCC 13's libstdc++: on Debian 12 the ROCm build
# links against it, but its programs do not start (they need a newer system or a real ROCm).
# scripts/gpu-deps.sh starts with `rm -rf .deps`: run this script again after it.
# Idempotent: a prefix that already holds the headers and libraries is left as it is
# (WICK_FETCH_FORCE=1 fetches again).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${1:-$root/.deps/rocm13}"
mirror="${WICK_DEBIAN13_MIRROR:-http://deb.debian.org/debian}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
packages=(librocblas0 librocblas-dev)

have() {
  [ -f "$prefix/usr/include/rocblas/rocblas.h" ] && [ -e "$prefix/usr/lib/x86_64-linux-gnu/librocblas.so" ]
}

if [ "${WICK_FETCH_FORCE:-0}" != 1 ] && have; then
  echo "rocBLAS already in $prefix"
  exit 0
fi

apt_dir="$prefix/.apt"
mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/etc/preferences.d" \
  "$apt_dir/etc/apt.conf.d" "$apt_dir/debs"
touch "$apt_dir/state/status"
echo "deb [signed-by=$keyring] $mirror trixie main" >"$apt_dir/etc/sources.list"

# Every path apt reads or writes points into $apt_dir; the system's dpkg status is not consulted,
# so apt does not try to reconcile trixie's dependencies with what Debian 12 has installed.
apt_opts=(
  -o "Dir::State=$apt_dir/state"
  -o "Dir::State::status=$apt_dir/state/status"
  -o "Dir::Cache=$apt_dir/cache"
  -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
  -o "Dir::Etc::SourceParts=-"
  -o "Dir::Etc::Preferences=$apt_dir/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
  -o "Dir::Etc::Parts=$apt_dir/etc/apt.conf.d"
  -o "APT::Architecture=amd64"
  -o "APT::Architectures=amd64"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
)

echo "updating the Debian 13 package list in $apt_dir"
if ! apt-get "${apt_opts[@]}" -qq update; then
  echo "error: cannot read the Debian 13 package list from $mirror (no network?)" >&2
  exit 1
fi

(cd "$apt_dir/debs" && rm -f ./*.deb && apt-get "${apt_opts[@]}" -qq download "${packages[@]}")

for deb in "$apt_dir"/debs/*.deb; do
  echo "unpacking $(basename "$deb")"
  dpkg -x "$deb" "$prefix"
done

if ! have; then
  echo "error: the unpacked packages lack rocblas.h / librocblas.so under $prefix" >&2
  exit 1
fi
echo "rocBLAS in $prefix"
