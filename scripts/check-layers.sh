#!/usr/bin/env bash
# Checks the layer rules of docs/ARCHITECTURE.md on the source tree (no build needed):
#   - nothing under src/gpu includes "cpu/...";
#   - nothing under src/cpu or src/gpu includes "core/..." (the backends serve the front end, not
#     the other way round);
#   - nothing under src/backend or src/quant includes "cpu/...", "gpu/..." or "core/..." (the block
#     codecs of src/quant serve both backends and are compiled for the host and the GPUs);
#   - the public headers (include/) include only "wick/..." and system headers;
#   - vendor names (cudaMalloc, cuLaunchKernel, CUBLAS_OP_N, hipStream_t, nvrtcCompileProgram,
#     cub::, vendor headers such as <cuda_runtime.h>, ...) appear under src/ only in src/gpu/runtime.
#     Comments and string literals are ignored; wick's own names (cuda_provider, WICK_CUDA) are not
#     vendor names.
# Prints file:line for every violation and exits 1 if there is any, else 0.
#
# usage: scripts/check-layers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

sources() { find "$@" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.cu' \
  -o -name '*.cuh' -o -name '*.inc' \) | LC_ALL=C sort; }

report=$(mktemp)
trap 'rm -f "$report"' EXIT

# include_rule NAME ERE FILE...: every `#include "X"` whose X matches ERE is a violation.
include_rule() {
  local name=$1 pattern=$2
  shift 2
  [ $# -gt 0 ] || return 0
  grep -HnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($pattern)" "$@" |
    sed "s|^\([^:]*:[0-9]*\):[[:space:]]*|\1: $name: |" >>"$report" || true
}

mapfile -t gpu < <(sources src/gpu)
mapfile -t cpu < <(sources src/cpu)
mapfile -t backend < <(sources src/backend src/quant)
mapfile -t public < <(sources include)

include_rule "src/gpu includes src/cpu" 'cpu/' "${gpu[@]}"
include_rule "a backend includes src/core" 'core/' "${cpu[@]}" "${gpu[@]}"
include_rule "src/backend or src/quant includes a backend or src/core" '(cpu|gpu|core)/' "${backend[@]}"
include_rule "a public header includes a non-public header" '[^w]|w[^i]|wi[^c]|wic[^k]|wick[^/]' "${public[@]}"

# Vendor names outside src/gpu/runtime: comments, string and character literals are blanked first
# (keeping line numbers), then identifiers with a vendor prefix followed by an upper-case letter
# (cudaMalloc, cuModuleLoad, hipblasGemmEx, nvrtcCreateProgram), the vendors' upper-case constants
# (CUDA_R_16BF, CUBLAS_OP_N, HIPRTC_SUCCESS), cub:: / hipcub:: and vendor headers are reported.
mapfile -t outside < <(sources src | grep -v '^src/gpu/runtime/')
if [ ${#outside[@]} -gt 0 ]; then
  perl -e '
    my $prefix = qr/(?:cuda|cudart|cu|cublas|cublasLt|cufft|curand|cusparse|cusolver|cudnn|nvrtc|nvjitlink|nccl|
                     hip|hipblas|hipblasLt|hipfft|hiprand|hipsparse|hipsolver|hiprtc|rocblas|rocm|rccl|miopen)/x;
    my $upper = qr/(?:CUDA|CUDART|CU|CUBLAS|CUFFT|CURAND|CUSPARSE|CUDNN|NVRTC|NCCL|HIP|HIPBLAS|HIPRTC|ROCBLAS|RCCL)/x;
    my $vendor = qr/\b(?:${prefix}[A-Z][A-Za-z0-9_]*|${upper}_[A-Z0-9_]+|(?:hip)?cub::|(?:hip)?cub\s*::)/x;
    my $header = qr/^\s*\#\s*include\s*<\s*(?:cuda|cub|cublas|cufft|curand|cudnn|nvrtc|nccl|hip|hipcub|hipblas|
                     rocblas|rccl|hiprtc|nvtx|nvToolsExt)[^>]*>/x;
    for my $file (@ARGV) {
      open(my $fh, "<", $file) or die "$file: $!";
      local $/;
      my $text = <$fh>;
      close $fh;
      my @raw = split /\n/, $text, -1;
      # Blank comments and literals, keeping their newlines.
      $text =~ s{
          (//[^\n]*)
        | (/\*.*?\*/)
        | (R"([^(\s]{0,16})\(.*?\)\4")
        | ("(?:\\.|[^"\\\n])*")
        | (\x27(?:\\.|[^\x27\\\n])*\x27)
      }{ my $m = $&; (my $k = $m) =~ s/[^\n]//g; $k }gsex;
      my @lines = split /\n/, $text, -1;
      for my $i (0 .. $#lines) {
        my @hits = $raw[$i] =~ $header ? ($&) : ($lines[$i] =~ /$vendor/g);
        next unless @hits;
        (my $src = $raw[$i]) =~ s/^\s+//;
        print "$file:", $i + 1, ": vendor name outside src/gpu/runtime (", join(", ", @hits), "): $src\n";
      }
    }
  ' "${outside[@]}" >>"$report"
fi

if [ -s "$report" ]; then
  n=$(wc -l <"$report")
  echo "check-layers: $n violation(s) of the layer rules (docs/ARCHITECTURE.md):"
  cat "$report"
  exit 1
fi
echo "check-layers: ${#gpu[@]} gpu, ${#cpu[@]} cpu, ${#backend[@]} backend, ${#public[@]} public and" \
  "${#outside[@]} non-runtime src files follow the layer rules"
