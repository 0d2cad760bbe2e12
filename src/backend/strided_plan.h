// The host-side plan of a strided op over N operands that share a shape, built once per call and
// used by the CPU loops (src/cpu/strided.h) and the GPU launches (src/gpu/kernels/plan.h) alike.
//
// Note [Strided plans]
// The host picks the path once per call (DESIGN principle 3), never each element or thread.
// collapse() drops size-1 dims and merges neighbouring dims where every operand is contiguous
// across them (the outer stride equals the inner stride times the inner size, in every operand).
// Merging keeps row-major order, so an element's flat index in the collapsed space is its flat
// index in the original shape; rand relies on that (Note [Random streams] in philox.h). A scalar,
// or a shape of size-1 dims only, leaves one dim of size 1 and stride 1. Strides are element
// strides, layout offsets excluded. The GPU copies a plan into the fixed-capacity Meta its kernels
// take by value (Note [GPU launch plans]); the CPU walks it directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "wick/shape.h"

namespace wick {

template <size_t N>
struct StridedPlan {
  Dims shape;                   // outermost first, at least one dim (inline storage: no allocation)
  std::array<Dims, N> strides;  // strides[k][d]: operand k's stride along dim d (operand 0 the output)
  int64_t numel = 1;

  int rank() const { return static_cast<int>(shape.size()); }

  // Elements of dims [first, rank).
  int64_t numel_from(int first) const {
    int64_t n = 1;
    for (int d = first; d < rank(); ++d) n *= shape[d];
    return n;
  }

  // The largest element offset operand k reaches; -1 when one of its strides is negative.
  int64_t max_offset(size_t k) const {
    int64_t m = 0;
    for (int d = 0; d < rank(); ++d) {
      if (strides[k][d] < 0) return -1;
      m += (shape[d] - 1) * strides[k][d];
    }
    return m;
  }

  // Whether every element offset reachable with dims [first, rank), and the count of those
  // elements, fit in int32 (and no stride is negative): the 32-bit index path.
  bool fits_32bit(int first = 0) const {
    constexpr int64_t kLimit = INT32_MAX;
    int64_t count = 1;
    std::array<int64_t, N> max_off{};
    for (int d = first; d < rank(); ++d) {
      count *= shape[d];
      for (size_t k = 0; k < N; ++k) {
        if (strides[k][d] < 0) return false;
        max_off[k] += (shape[d] - 1) * strides[k][d];
      }
    }
    if (count > kLimit) return false;
    for (size_t k = 0; k < N; ++k)
      if (max_off[k] > kLimit) return false;
    return true;
  }

  // Whether operand k's strides are multiples of v in every dim that moves (size > 1): with an
  // aligned base, every slice of operand k then starts aligned to v elements (vector paths).
  bool strides_multiple_of(size_t k, int64_t v) const {
    for (int d = 0; d < rank(); ++d)
      if (shape[d] > 1 && strides[k][d] % v != 0) return false;
    return true;
  }

  // Where slice s of the outer dims [0, first) starts in each operand (its row-major index over
  // those dims is s).
  std::array<int64_t, N> slice_offsets(int first, int64_t s) const {
    std::array<int64_t, N> off{};
    for (int d = first - 1; d >= 0; --d) {
      const int64_t idx = s % shape[d];
      s /= shape[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
    return off;
  }

  // The flat fast path: one dim left, the output at stride 1 and every input at stride 1 or 0 (a
  // scalar broadcast). Sets bit k-1 of *broadcast when input k has stride 0.
  bool flat(unsigned* broadcast) const {
    if (rank() != 1 || strides[0][0] != 1) return false;
    unsigned mask = 0;
    for (size_t k = 1; k < N; ++k) {
      if (strides[k][0] == 0 && shape[0] > 1) {
        mask |= 1u << (k - 1);
      } else if (strides[k][0] != 1 && shape[0] > 1) {
        return false;
      }
    }
    *broadcast = mask;
    return true;
  }
};

// The plan of N operands over `shape`, strides[k] being operand k's strides (Note [Strided plans]).
template <size_t N>
StridedPlan<N> collapse(const Shape& shape, const std::array<const Strides*, N>& strides) {
  StridedPlan<N> p;
  p.numel = shape.numel();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!p.shape.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        if (p.strides[k].back() != (*strides[k])[i] * shape[i]) merge = false;
      if (merge) {
        p.shape.back() *= shape[i];
        for (size_t k = 0; k < N; ++k) p.strides[k].back() = (*strides[k])[i];
        continue;
      }
    }
    p.shape.push_back(shape[i]);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back((*strides[k])[i]);
  }
  if (p.shape.empty()) {
    p.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) p.strides[k].push_back(1);
  }
  return p;
}

// The row split of the last-dim ops (softmax, norms, cumsum, sort, ...): the rows of `shape`'s last
// dim, as the plan of the other dims collapsed over all operands. Element r of the plan's index
// space is row r, and its offsets are where that row starts in each operand. The last dim's length
// and strides are the caller's.
template <size_t N>
StridedPlan<N> collapse_rows(const Shape& shape, const std::array<const Strides*, N>& strides) {
  const size_t outer = shape.empty() ? 0 : shape.size() - 1;
  const Shape os(shape.begin(), shape.begin() + outer);
  std::array<Strides, N> st;
  std::array<const Strides*, N> sp;
  for (size_t k = 0; k < N; ++k) {
    st[k] = Strides(strides[k]->begin(), strides[k]->begin() + outer);
    sp[k] = &st[k];
  }
  return collapse<N>(os, sp);
}

}  // namespace wick
