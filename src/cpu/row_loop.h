// Row loops shared by the last-dim ops of the reduce family (softmax, norms, cumsum, sort): the
// kept dims are collapsed over every operand together (collapse_rows, backend/strided_plan.h) and
// the rows split across threads.
#pragma once

#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/reduce_math.h"
#include "cpu/parallel.h"
#include "cpu/simd.h"
#include "cpu/strided.h"

namespace wick::cpu {

// n elements of a row with element stride s, from T to the compute type C (load_row) and back
// (store_row, rounding once), through simd.h's conversions where the row is contiguous.
template <class T, class C>
void load_row(const T* p, int64_t n, int64_t s, C* buf) {
  if (s == 1 && simd::converter<C, T>()) {
    simd::converter<C, T>()(p, buf, n);
  } else if (s == 1) {
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i * s]);
  }
}

template <class T, class C>
void store_row(const C* buf, int64_t n, T* p, int64_t s) {
  if (s == 1 && simd::converter<T, C>()) {
    simd::converter<T, C>()(buf, p, n);
  } else if (s == 1) {
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(buf[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) p[i * s] = convert<T>(buf[i]);
  }
}

// Rows a group of for_each_last_dim_rows holds at most.
inline constexpr int64_t kMaxRowGroup = 16;

// Calls rows(offsets, g) for every row of the last dim of `shape`, in groups of g <= `group` (at
// most kMaxRowGroup) consecutive rows of one thread's share; offsets[j][k] is row j's start in
// operand k, whose strides are strides[k] (offsets exclude the layouts' own offsets).
// `work_per_row` is a rough cost in elements, for the thread grain.
template <size_t N, class F>
void for_each_last_dim_rows(const Shape& shape, const std::array<const Strides*, N>& strides, int64_t work_per_row,
                            int64_t group, F&& rows) {
  const Collapsed<N> c = collapse_rows<N>(shape, strides);
  const size_t r = c.shape.size();
  group = std::clamp<int64_t>(group, 1, kMaxRowGroup);
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(work_per_row, 1));
  parallel_ranges(c.numel, grain, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r, 0);
    std::array<int64_t, N> off{};
    std::array<std::array<int64_t, N>, kMaxRowGroup> offs;
    int64_t g = 0;
    int64_t rem = b;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rem % c.shape[d];
      rem /= c.shape[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * c.strides[k][d];
    }
    for (int64_t i = b; i < e; ++i) {
      offs[static_cast<size_t>(g++)] = off;
      if (g == group || i + 1 == e) {
        rows(offs.data(), g);
        g = 0;
      }
      for (size_t d = r; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) off[k] += c.strides[k][d];
        if (++idx[d] < c.shape[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= c.strides[k][d] * c.shape[d];
        idx[d] = 0;
      }
    }
  });
}

// Whether operand k of a group of g rows of n elements (for_each_last_dim_rows's offsets) lies
// end to end: unit element stride, row j at row 0 plus j * n.
template <size_t N>
bool rows_end_to_end(const std::array<int64_t, N>* off, int64_t g, size_t k, int64_t stride, int64_t n) {
  bool packed = stride == 1;
  for (int64_t j = 1; j < g && packed; ++j) packed = off[j][k] == off[0][k] + j * n;
  return packed;
}

// load_row / store_row over a group of g rows of n elements of operand k (row j at p + off[j][k],
// element stride `stride`) and a buffer holding them one after another: one call for rows that lie
// end to end, else one a row.
template <size_t N, class T, class C>
void load_rows(const T* p, const std::array<int64_t, N>* off, int64_t g, size_t k, int64_t stride, int64_t n, C* buf) {
  if (rows_end_to_end(off, g, k, stride, n)) return load_row(p + off[0][k], g * n, 1, buf);
  for (int64_t j = 0; j < g; ++j) load_row(p + off[j][k], n, stride, buf + j * n);
}

template <size_t N, class T, class C>
void store_rows(const C* buf, T* p, const std::array<int64_t, N>* off, int64_t g, size_t k, int64_t stride, int64_t n) {
  if (rows_end_to_end(off, g, k, stride, n)) return store_row(buf, g * n, p + off[0][k], 1);
  for (int64_t j = 0; j < g; ++j) store_row(buf + j * n, n, p + off[j][k], stride);
}

// Calls row(offsets) for every row of the last dim of `shape`: for_each_last_dim_rows one row at a
// time.
template <size_t N, class F>
void for_each_last_dim_row(const Shape& shape, const std::array<const Strides*, N>& strides, int64_t work_per_row,
                           F&& row) {
  for_each_last_dim_rows<N>(shape, strides, work_per_row, 1,
                            [&](const std::array<int64_t, N>* off, int64_t) { row(off[0]); });
}

// The starts of every last-dim row of `shape` in each operand, in row order (as
// for_each_last_dim_row's offsets), for the ops that split few long rows into chunks: fewer rows
// than kGrain, which for_each_last_dim_row visits in order in one task at a work of 1 per row.
template <size_t N>
std::vector<std::array<int64_t, N>> last_dim_row_starts(const Shape& shape,
                                                        const std::array<const Strides*, N>& strides) {
  std::vector<std::array<int64_t, N>> start;
  for_each_last_dim_row<N>(shape, strides, 1, [&](const std::array<int64_t, N>& off) { start.push_back(off); });
  return start;
}

// Values per leaf of lane_sum and of the sums that follow its order (softmax's exp_lane_sum).
inline constexpr int64_t kLaneBlock = 2048;

// The sum over [0, n) cut into leaves of kLaneBlock, block(b, e) giving leaf [b, e)'s sum, the
// leaves added pairwise (see Note [Reduction accumulators] in backend/reduce_math.h).
template <class C, class F>
C leaf_sum(int64_t n, F&& block) {
  Pairwise<C> pw;
  auto add = [](C a, C b) { return a + b; };
  for (int64_t b = 0; b < n; b += kLaneBlock) pw.push(block(b, std::min(n, b + kLaneBlock)), add);
  return pw.result(C(0), add);
}

// Sum of n contiguous values (Sq: of the squares (p[i] + shift)^2, each sum and square rounded to
// C; the default shift, -0, changes no value) in lanes, leaves of kLaneBlock added pairwise
// (leaf_sum). f32 leaves go to simd.h's sum16_f32 / sumsq16_f32, which add in the same order as
// the loop below.
template <bool Sq = false, class C>
C lane_sum(const C* p, int64_t n, C shift = C(-0.0)) {
  constexpr int kL = 16;
  auto term = [&](int64_t i) {
    if constexpr (Sq) {
      const C v = p[i] + shift;
      return v * v;
    } else {
      return p[i];
    }
  };
  return leaf_sum<C>(n, [&](int64_t b, int64_t e) -> C {
    if constexpr (std::is_same_v<C, float>) {
      const simd::Kernels& k = simd::kernels();
      return Sq ? k.sumsq16_f32(p + b, e - b, shift) : k.sum16_f32(p + b, e - b);
    } else {
      C lane[kL] = {};
      int64_t i = b;
      for (; i + kL <= e; i += kL)
        for (int l = 0; l < kL; ++l) lane[l] += term(i + l);
      C tail = 0;
      for (; i < e; ++i) tail += term(i);
      for (int w = kL / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
      return lane[0] + tail;
    }
  });
}

}  // namespace wick::cpu
