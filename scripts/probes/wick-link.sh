#!/usr/bin/env bash
# Prints the libraries a probe built against a build of wick links with: the link line of that
# build's `wick` tool (its rpath picks the OpenMP OpenBLAS), with libwick.a by its path and without
# the tool's own libwick_check.a.   g++ ... probe.cpp $(scripts/probes/wick-link.sh BUILD_DIR)
set -eu
b=${1:?usage: wick-link.sh BUILD_DIR}
awk '/^build wick:/{f=1} f&&/LINK_LIBRARIES/{sub(/.*LINK_LIBRARIES = /,""); print; exit}' "$b/build.ninja" |
  sed "s|libwick_check.a||; s|libwick.a|$b/libwick.a|"
