// Host side of the strided elementwise framework: how a launch walks N operands that share a shape.
//
// Note [GPU launch plans]
// The host decides the path once per call (DESIGN principle 3), never each thread:
//  1. collapse: size-1 dims are dropped and neighbouring dims merged when every operand is
//     contiguous across them (the CPU's rule, src/cpu/strided.h). Merging keeps row-major order,
//     so the flat index of an element in the collapsed space is its flat index in the original
//     shape; rand relies on that (Note [Random streams]).
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
#include <vector>

#include "gpu/config.h"
#include "wick/shape.h"

namespace wick::WICK_GPU_NS::kern {

inline constexpr int kMaxDims = 8;

template <int N>
struct Plan {
  std::vector<int64_t> shape;                   // outermost first, at least one dim
  std::vector<std::array<int64_t, N>> strides;  // per dim, per operand (0 = output)
  int64_t numel = 1;
  int rank() const { return static_cast<int>(shape.size()); }
  // Whether every element offset reachable with dims [first, rank) and the count of those
  // elements fit in int32 (and no stride is negative).
  bool fits_32bit(int first = 0) const {
    int64_t count = 1;
    std::array<int64_t, N> max_off{};
    for (int d = first; d < rank(); ++d) {
      count *= shape[d];
      for (int k = 0; k < N; ++k) {
        if (strides[d][k] < 0) return false;
        max_off[k] += (shape[d] - 1) * strides[d][k];
      }
    }
    constexpr int64_t kLimit = INT32_MAX;
    if (count > kLimit) return false;
    for (int k = 0; k < N; ++k)
      if (max_off[k] > kLimit) return false;
    return true;
  }
  // Whether operand k's strides are multiples of v in every dim that moves (size > 1): with an
  // aligned base, every slice of operand k then starts aligned to v elements (vector paths).
  bool strides_multiple_of(int k, int64_t v) const {
    for (int d = 0; d < rank(); ++d)
      if (shape[d] > 1 && strides[d][k] % v != 0) return false;
    return true;
  }
  // Where slice s of the outer dims [0, first) starts in each operand (item 4 of the Note).
  std::array<int64_t, N> slice_offsets(int first, int64_t s) const {
    std::array<int64_t, N> off{};
    for (int d = first - 1; d >= 0; --d) {
      const int64_t idx = s % shape[d];
      s /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += idx * strides[d][k];
    }
    return off;
  }
  // Flat path (see the Note): bit k-1 of *broadcast is set when input k has stride 0.
  bool flat(unsigned* broadcast) const {
    if (rank() != 1 || strides[0][0] != 1) return false;
    unsigned mask = 0;
    for (int k = 1; k < N; ++k) {
      if (strides[0][k] == 0 && shape[0] > 1) {
        mask |= 1u << (k - 1);
      } else if (strides[0][k] != 1 && shape[0] > 1) {
        return false;
      }
    }
    *broadcast = mask;
    return true;
  }
};

// strides[k] are operand k's strides over `shape`.
template <int N>
Plan<N> make_plan(const Shape& shape, const std::array<const Strides*, N>& strides) {
  Plan<N> p;
  p.numel = shape.numel();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    std::array<int64_t, N> s;
    for (int k = 0; k < N; ++k) s[k] = (*strides[k])[i];
    if (!p.shape.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        if (p.strides.back()[k] != s[k] * shape[i]) merge = false;
      if (merge) {
        p.shape.back() *= shape[i];
        p.strides.back() = s;
        continue;
      }
    }
    p.shape.push_back(shape[i]);
    p.strides.push_back(s);
  }
  if (p.shape.empty()) {  // a scalar, or only size-1 dims: one element
    p.shape.push_back(1);
    std::array<int64_t, N> s;
    s.fill(1);
    p.strides.push_back(s);
  }
  return p;
}

// Rewrites p in units of k elements: the innermost dim has stride 1 in every operand of the mask
// `wide` and stride 0 in the others, its length and the wide operands' other strides are
// multiples of k. Then a run of k elements is one unit of the wide operands (whose offsets divide
// by k) and has one offset in the others (left as they are). False, and p unchanged, otherwise;
// the caller checks that the wide operands' pointers are aligned to k elements.
template <int N>
bool widen_inner(Plan<N>& p, int64_t k, unsigned wide) {
  const int r = p.rank() - 1;
  if (p.shape[r] % k != 0) return false;
  for (int j = 0; j < N; ++j) {
    const bool w = (wide >> j) & 1u;
    if (p.strides[r][j] != (w ? 1 : 0)) return false;
    for (int d = 0; d < r && w; ++d)
      if (p.strides[d][j] % k != 0) return false;
  }
  p.shape[r] /= k;
  p.numel /= k;
  for (int d = 0; d < r; ++d)
    for (int j = 0; j < N; ++j)
      if ((wide >> j) & 1u) p.strides[d][j] /= k;
  return true;
}

}  // namespace wick::WICK_GPU_NS::kern
