// Host side of the strided elementwise framework: how a launch walks N operands that share a shape.
//
// Note [GPU launch plans]
// The host decides the path once per call (DESIGN principle 3), never each thread:
//  1. collapse: size-1 dims are dropped and neighbouring dims merged when every operand is
//     contiguous across them, in the StridedPlan both backends build (Note [Strided plans] in
//     backend/strided_plan.h); flat indices are kept, which rand relies on.
//  2. flat path: one dim left, the output has stride 1 and every input stride 1 or 0 (a scalar
//     broadcast). Vectorised loads and stores, grid-stride loop, 64-bit counters.
//  3. strided path: shape and strides (innermost first) go to the kernel by value in a Meta of
//     kMaxDims dims; no metadata is copied to the device. Index math is 32-bit when the element
//     count and every offset fit in int32, 64-bit otherwise.
//  4. more than kMaxDims dims after collapsing: the host loops over the outermost dims and
//     launches the 64-bit strided kernel once per slice of the innermost kMaxDims dims. Rare and
//     slower, but never an error.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>

#include "backend/strided_plan.h"
#include "gpu/config.h"
#include "wick/shape.h"

namespace wick::WICK_GPU_NS::kern {

inline constexpr int kMaxDims = 8;

// The host-side plan of a launch: the StridedPlan both backends build with collapse (Note [Strided
// plans]); make_meta (map.cuh) copies it into the kernels' Meta.
template <int N>
using Plan = StridedPlan<N>;

// Rewrites p in units of k elements: the innermost dim has stride 1 in every operand of the mask
// `wide` and stride 0 in the others, its length and the wide operands' other strides are
// multiples of k. Then a run of k elements is one unit of the wide operands (whose offsets divide
// by k) and has one offset in the others (left as they are). False, and p unchanged, otherwise;
// the caller checks that the wide operands' pointers are aligned to k elements.
template <size_t N>
bool widen_inner(StridedPlan<N>& p, int64_t k, unsigned wide) {
  const int r = p.rank() - 1;
  if (p.shape[r] % k != 0) return false;
  for (size_t j = 0; j < N; ++j) {
    const bool w = (wide >> j) & 1u;
    if (p.strides[j][r] != (w ? 1 : 0)) return false;
    for (int d = 0; d < r && w; ++d)
      if (p.strides[j][d] % k != 0) return false;
  }
  p.shape[r] /= k;
  p.numel /= k;
  for (int d = 0; d < r; ++d)
    for (size_t j = 0; j < N; ++j)
      if ((wide >> j) & 1u) p.strides[j][d] /= k;
  return true;
}

}  // namespace wick::WICK_GPU_NS::kern
