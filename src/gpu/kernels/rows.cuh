// Row walks of the GPU's last-dim ops (cumsum, sort): a kernel handles whole rows of the last dim
// and finds where row r starts in each operand from the kept (outer) dims, collapsed over all
// operands together (collapse_rows, Note [Strided plans]). Offsets are 64-bit: a row walk does
// O(n) work per row, so the division chain per row costs nothing.
#pragma once

#include <array>
#include <cstdint>

#include "backend/backend.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

template <int N>
using RowMeta = Meta<int64_t, N>;

// Start of row r (< the launch's row count) in each of the N operands.
template <int N>
__device__ __forceinline__ void row_offsets(const RowMeta<N>& m, int64_t r, int64_t (&off)[N]) {
  offsets_of(m, r, off);
}

// Calls launch(meta, rows, base) for slices of the rows of `shape`'s last dim: meta walks `rows`
// rows, whose offsets are relative to base[k] in operand k. One call unless more than kMaxDims
// kept dims remain after collapsing (then one per index of the outermost ones).
template <int N, class F>
void for_each_row_slice(const Shape& shape, const std::array<const Strides*, N>& strides, F&& launch) {
  const Plan<N> p = collapse_rows<N>(shape, strides);
  const int first = p.rank() > kMaxDims ? p.rank() - kMaxDims : 0;
  const RowMeta<N> m = make_meta<int64_t, N>(p, first);
  const int64_t rows = p.numel_from(first);
  int64_t slices = 1;
  for (int d = 0; d < first; ++d) slices *= p.shape[d];
  for (int64_t s = 0; s < slices; ++s) launch(m, rows, p.slice_offsets(first, s));
}

// Blocks for a grid-stride loop over `work` blocks' worth of rows.
inline unsigned row_grid(int64_t work) {
  constexpr int64_t kMaxGrid = int64_t{1} << 20;  // HIP caps blocks x threads below 2^32
  return static_cast<unsigned>(work < 1 ? 1 : (work < kMaxGrid ? work : kMaxGrid));
}

}  // namespace wick::WICK_GPU_NS::kern
