#!/usr/bin/env bash
# Prepares .deps/root: OpenBLAS, libgfortran, GoogleTest, nlohmann-json, libzip and PCRE2 unpacked
# from Debian packages, for the lent GPU machine, which cannot fetch packages itself. Run here (with
# apt access), then name .deps in the device tool's `carry`; scripts/gpu-check.sh puts it on
# CMAKE_PREFIX_PATH and LD_LIBRARY_PATH when it is present.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps/root .deps/debs && mkdir -p .deps/debs .deps/root
(cd .deps/debs && apt-get download libopenblas0-openmp libopenblas-openmp-dev libgfortran5 libgtest-dev \
  nlohmann-json3-dev libzip-dev libzip4 libpcre2-dev libpcre2-8-0 \
  >/dev/null)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
rm -rf .deps/debs .deps/root/usr/share .deps/root/usr/src
# Static archives are not needed (the shared libraries are linked) and are large.
find .deps/root \( -name "libopenblas*.a" -o -name "liblapack*" -o -name "libblas*" -o -name "libpcre2-*.a" \
  -o -name "libpcre2-16*" -o -name "libpcre2-32*" \) -exec rm -f {} +
# The unpacked symlinks point at absolute /usr paths; make them relative.
find .deps/root -type l | while read -r l; do
  t=$(readlink "$l")
  case "$t" in /*) ln -sfn "$(realpath --relative-to="$(dirname "$l")" ".deps/root$t")" "$l" ;; esac
done
du -sh .deps
