// Loops of the CPU elementwise ops (unary, binary, where_cond): the iteration space is collapsed
// once on the host (strided.h collapse), then cut into chunks of the innermost dim so that a
// contiguous tensor (one collapsed dim, one row) is still spread over all threads; for_each_row
// alone would give it a single thread. Row kernels pick their loop from the inner strides once per
// chunk: unit stride (flat, vectorisable) or stride 0 (a broadcast scalar, loaded once) for each
// operand, and a general strided loop otherwise.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "cpu/strided.h"

namespace wick::cpu::ew_loops {

// Side of the square tiles of for_each_tile.
inline constexpr int64_t kTile = 64;

// Calls row(...) as for_each_chunk does, in kTile x kTile tiles of the two innermost dims, so that
// an operand whose stride is 1 along the second-innermost dim (a transposed input; the output is
// row-major) reads each cache line it loads kTile times before it is evicted.
template <size_t N, class Row>
void for_each_tile(const Collapsed<N>& c, Row&& row) {
  const size_t rank = c.shape.size();
  const int64_t rows = c.shape[rank - 2], cols = c.shape[rank - 1];
  const int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  const int64_t units = c.numel / (rows * cols) * tile_rows * tile_cols;
  std::array<int64_t, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = c.strides[k][rank - 1];
  parallel_for(units, std::max<int64_t>(1, kGrain / (kTile * kTile)), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t rest = u;
      const int64_t tc = rest % tile_cols;
      rest /= tile_cols;
      const int64_t tr = rest % tile_rows;
      rest /= tile_rows;
      std::array<int64_t, N> off{};
      for (size_t d = rank - 2; d-- > 0;) {  // outer dims: one division per tile, not per element
        const int64_t i = rest % c.shape[d];
        rest /= c.shape[d];
        for (size_t k = 0; k < N; ++k) off[k] += i * c.strides[k][d];
      }
      const int64_t i0 = tr * kTile, j0 = tc * kTile;
      const int64_t ni = std::min(kTile, rows - i0), nj = std::min(kTile, cols - j0);
      for (int64_t i = i0; i < i0 + ni; ++i) {
        std::array<int64_t, N> o;
        for (size_t k = 0; k < N; ++k) o[k] = off[k] + i * c.strides[k][rank - 2] + j0 * st[k];
        row(o, nj, st);
      }
    }
  });
}

// Calls row(offsets, n, inner_strides) over chunks of at most kGrain elements of the innermost
// rows; offsets are relative to each operand's base pointer (layout offset excluded).
template <size_t N, class Row>
void for_each_chunk(const Collapsed<N>& c, Row&& row) {
  if (c.numel == 0) return;
  const size_t rank = c.shape.size();
  if (rank >= 2 && c.shape[rank - 1] > 1 && c.shape[rank - 2] > 1) {
    for (size_t k = 0; k < N; ++k) {
      const int64_t s = c.strides[k][rank - 1];
      if (s != 0 && s != 1 && c.strides[k][rank - 2] == 1) return for_each_tile<N>(c, row);
    }
  }
  const int64_t inner = c.shape[rank - 1];
  const int64_t rows = c.numel / inner;
  const int64_t block = std::min<int64_t>(inner, kGrain);
  const int64_t per_row = (inner + block - 1) / block;
  std::array<int64_t, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = c.strides[k][rank - 1];
  const int64_t grain = std::max<int64_t>(1, kGrain / block);
  parallel_for(rows * per_row, grain, [&](int64_t begin, int64_t end) {
    // multi-index of the first row over the outer dims, and the operands' offsets there
    std::vector<int64_t> idx(rank, 0);
    int64_t r = begin / per_row;
    int64_t blk = begin % per_row;
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = r % c.shape[d];
      r /= c.shape[d];
    }
    std::array<int64_t, N> off{};
    for (size_t k = 0; k < N; ++k)
      for (size_t d = 0; d + 1 < rank; ++d) off[k] += idx[d] * c.strides[k][d];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t j0 = blk * block;
      std::array<int64_t, N> o;
      for (size_t k = 0; k < N; ++k) o[k] = off[k] + j0 * st[k];
      row(o, std::min(block, inner - j0), st);
      if (++blk < per_row) continue;
      blk = 0;
      for (size_t d = rank - 1; d-- > 0;) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k) off[k] += c.strides[k][d];
        if (idx[d] < c.shape[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= c.strides[k][d] * c.shape[d];
        idx[d] = 0;
      }
    }
  });
}

// dst = f(src) for one element type T (same in and out), f taking and returning T.
template <class T, class F>
void unary(const F& f, const TensorArg& src, const TensorArg& dst) {
  const Collapsed<2> c = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
  T* const out = dst.ptr<T>();
  const T* const in = src.ptr<T>();
  for_each_chunk<2>(c, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    T* o = out + off[0];
    const T* s = in + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t j = 0; j < n; ++j) o[j] = f(s[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = f(s[j * st[1]]);
    }
  });
}

// dst = f(load(a), load(b)), f returning Out. Operands of a broadcast scalar along the row are
// loaded (and converted) once per chunk.
template <class T, class Out, class Load, class F>
void binary(const Load& load, const F& f, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  const Collapsed<3> c =
      collapse<3>(dst.shape(), {&dst.layout.strides(), &a.layout.strides(), &b.layout.strides()});
  Out* const out = dst.ptr<Out>();
  const T* const pa = a.ptr<T>();
  const T* const pb = b.ptr<T>();
  for_each_chunk<3>(c, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    Out* o = out + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t j = 0; j < n; ++j) o[j] = f(load(x[j]), load(y[j]));
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const auto yv = load(y[0]);
      for (int64_t j = 0; j < n; ++j) o[j] = f(load(x[j]), yv);
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const auto xv = load(x[0]);
      for (int64_t j = 0; j < n; ++j) o[j] = f(xv, load(y[j]));
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = f(load(x[j * st[1]]), load(y[j * st[2]]));
    }
  });
}

// dst = cond != 0 ? t : f, for a value type V of the element's size (the bits are copied).
template <class Cond, class V>
void where(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  const Collapsed<4> c = collapse<4>(
      dst.shape(), {&dst.layout.strides(), &cond.layout.strides(), &t.layout.strides(), &f.layout.strides()});
  V* const out = dst.ptr<V>();
  const Cond* const pc = cond.ptr<Cond>();
  const V* const pt = t.ptr<V>();
  const V* const pf = f.ptr<V>();
  for_each_chunk<4>(c, [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
    V* o = out + off[0];
    const Cond* k = pc + off[1];
    const V* x = pt + off[2];
    const V* y = pf + off[3];
    // Unit or zero stride for t and f, decided at compile time (a scalar branch, e.g.
    // where(mask, x, 0), is common).
    // Both branches are loaded unconditionally: a conditional load keeps the loop from being
    // vectorised (into a blend).
    auto flat = [&]<bool kTUnit, bool kFUnit>() {
      for (int64_t j = 0; j < n; ++j) {
        const V xv = x[kTUnit ? j : 0], yv = y[kFUnit ? j : 0];
        o[j] = k[j] != 0 ? xv : yv;
      }
    };
    if (st[0] == 1 && st[1] == 1 && (st[2] == 0 || st[2] == 1) && (st[3] == 0 || st[3] == 1)) {
      if (st[2] == 1 && st[3] == 1) {
        flat.template operator()<true, true>();
      } else if (st[2] == 1) {
        flat.template operator()<true, false>();
      } else if (st[3] == 1) {
        flat.template operator()<false, true>();
      } else {
        flat.template operator()<false, false>();
      }
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * st[0]] = k[j * st[1]] != 0 ? x[j * st[2]] : y[j * st[3]];
    }
  });
}

}  // namespace wick::cpu::ew_loops
