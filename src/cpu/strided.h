// Strided iteration for the CPU backend.
//
// The host picks the path once per call (DESIGN principle 3): operands that share a shape are first
// collapsed into a StridedPlan (backend/strided_plan.h: size-1 dims dropped, neighbouring dims
// merged when every operand is contiguous across them). for_each_row visits whole rows of the
// innermost dim, the outer index space split across threads (for kernels that need a row at a
// time). for_each_chunk, for elementwise work, also cuts long rows into chunks, so that a
// contiguous tensor (one collapsed row) is still spread over all threads, and walks transposed
// operands in tiles; map is built on it.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/strided_plan.h"
#include "cpu/parallel.h"

namespace wick::cpu {

// N operands over one shape, after collapsing (Note [Strided plans] in backend/strided_plan.h).
template <size_t N>
using Collapsed = StridedPlan<N>;

// Calls row(offsets, n, inner_strides) over the innermost rows cut into pieces of at most `block`
// elements, the pieces split across threads, a thread per grain_elems elements at most; offsets
// are element offsets relative to each operand's base (layout offset not included). c must not be
// empty.
template <size_t N, class Row>
void for_each_piece(const Collapsed<N>& c, int64_t block, Row&& row, int64_t grain_elems = kGrain) {
  const size_t rank = c.shape.size();
  const int64_t inner = c.shape[rank - 1];
  const int64_t rows = c.numel / inner;
  const int64_t per_row = (inner + block - 1) / block;
  std::array<int64_t, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = c.strides[k][rank - 1];
  const int64_t grain = std::max<int64_t>(1, grain_elems / block);
  parallel_ranges(rows * per_row, grain, [&](int64_t begin, int64_t end) {
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

// Calls row(offsets, n, inner_strides) for every whole innermost row of the collapsed iteration
// space, the rows split across threads.
template <size_t N, class F>
void for_each_row(const Collapsed<N>& c, F&& row) {
  if (c.numel == 0) return;
  for_each_piece<N>(c, c.shape.back(), row);
}

// Side of the square tiles of for_each_tile.
inline constexpr int64_t kTile = 64;

// Calls tile(offsets, i0, j0, ni, nj) for every kTile x kTile tile of the two innermost dims (in
// parallel); offsets are the operands' offsets at the outer index of the tile, before the two
// inner dims are applied.
template <size_t N, class Tile>
void for_each_tile_block(const Collapsed<N>& c, Tile&& tile) {
  const size_t rank = c.shape.size();
  const int64_t rows = c.shape[rank - 2], cols = c.shape[rank - 1];
  const int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  const int64_t units = c.numel / (rows * cols) * tile_rows * tile_cols;
  parallel_ranges(units, std::max<int64_t>(1, kGrain / (kTile * kTile)), [&](int64_t begin, int64_t end) {
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
      tile(off, i0, j0, std::min(kTile, rows - i0), std::min(kTile, cols - j0));
    }
  });
}

// Calls row(...) as for_each_chunk does, in kTile x kTile tiles of the two innermost dims, so that
// an operand whose stride is 1 along the second-innermost dim (a transposed input; the output is
// row-major) reads each cache line it loads kTile times before it is evicted.
template <size_t N, class Row>
void for_each_tile(const Collapsed<N>& c, Row&& row) {
  const size_t rank = c.shape.size();
  std::array<int64_t, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = c.strides[k][rank - 1];
  for_each_tile_block<N>(c, [&](const std::array<int64_t, N>& off, int64_t i0, int64_t j0, int64_t ni, int64_t nj) {
    for (int64_t i = i0; i < i0 + ni; ++i) {
      std::array<int64_t, N> o;
      for (size_t k = 0; k < N; ++k) o[k] = off[k] + i * c.strides[k][rank - 2] + j0 * st[k];
      row(o, nj, st);
    }
  });
}

// True when operand k of c is transposed against a row-major dst (operand 0): stride 1 along the
// second-innermost dim, another stride along the innermost one.
template <size_t N>
bool transposed_operand(const Collapsed<N>& c, size_t k) {
  const size_t rank = c.shape.size();
  if (rank < 2 || c.shape[rank - 1] <= 1 || c.shape[rank - 2] <= 1) return false;
  const int64_t s = c.strides[k][rank - 1];
  return s != 0 && s != 1 && c.strides[k][rank - 2] == 1;
}

// Calls row(offsets, n, inner_strides) over chunks of at most kGrain elements of the innermost
// rows; offsets are relative to each operand's base pointer (layout offset excluded).
template <size_t N, class Row>
void for_each_chunk(const Collapsed<N>& c, Row&& row) {
  if (c.numel == 0) return;
  for (size_t k = 0; k < N; ++k)
    if (transposed_operand(c, k)) return for_each_tile<N>(c, row);
  for_each_piece<N>(c, std::min<int64_t>(c.shape.back(), kGrain), row);
}

namespace detail {
template <class Out, class... In, class F, size_t... I, size_t N>
inline void map_row(F& f, Out* out, const std::tuple<In*...>& base, const std::array<int64_t, N>& off, int64_t n,
                    const std::array<int64_t, N>& st, std::index_sequence<I...>) {
  if ((st[0] == 1) && ((st[I + 1] == 1) && ...)) {
    const std::tuple<In*...> p{(std::get<I>(base) + off[I + 1])...};
    for (int64_t j = 0; j < n; ++j) out[j] = f(std::get<I>(p)[j]...);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j * st[0]] = f(std::get<I>(base)[off[I + 1] + j * st[I + 1]]...);
  }
}
}  // namespace detail

template <class T>
using ArgFor = TensorArg;

// One source transposed against a row-major dst (x.t().contiguous(), casts of such views): each
// tile is read along the source's unit stride into a buffer in dst's order, then each dst row is
// written by emit(buffer_row, dst_row, n, dst_stride). Walking the source across rows instead
// touches kTile lines a power-of-two stride apart, which share a cache set (a 4096 x 4096 f32
// transpose ran at a seventh of the copy bandwidth).
template <class Out, class In, class Emit>
void map_transposed(const Emit& emit, const Collapsed<2>& c, Out* out, const In* in) {
  const size_t rank = c.shape.size();
  const int64_t dr = c.strides[0][rank - 2], dc = c.strides[0][rank - 1];
  const int64_t sc = c.strides[1][rank - 1];  // the source's stride along dst's rows; 1 down its columns
  for_each_tile_block<2>(c, [&](const std::array<int64_t, 2>& off, int64_t i0, int64_t j0, int64_t ni, int64_t nj) {
    In buf[kTile][kTile + 1];  // buf[i][j] = source element (i0 + i, j0 + j); padded against set conflicts
    for (int64_t j = 0; j < nj; ++j) {
      const In* p = in + off[1] + i0 + (j0 + j) * sc;
      for (int64_t i = 0; i < ni; ++i) buf[i][j] = p[i];
    }
    for (int64_t i = 0; i < ni; ++i) emit(buf[i], out + off[0] + (i0 + i) * dr + j0 * dc, nj, dc);
  });
}

// dst[i] = f(src0[i], src1[i], ...) over dst's shape (the sources have that shape too), each
// operand with its own layout. Out and In... are the element types, given explicitly:
//   map<float, float, float>(add, dst, a, b);
template <class Out, class... In, class F>
void map(F&& f, const TensorArg& dst, const ArgFor<In>&... src) {
  constexpr size_t N = 1 + sizeof...(In);
  const Collapsed<N> c = collapse<N>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()...});
  if constexpr (N == 2) {
    if (c.numel > 0 && transposed_operand(c, 1) && !transposed_operand(c, 0)) {
      const auto emit = [&f](const auto* b, Out* q, int64_t n, int64_t dq) {
        if (dq == 1) {
          for (int64_t j = 0; j < n; ++j) q[j] = f(b[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) q[j * dq] = f(b[j]);
        }
      };
      return map_transposed<Out, In...>(emit, c, dst.ptr<Out>(), src.template ptr<In>()...);
    }
  }
  Out* const o = dst.ptr<Out>();
  const std::tuple<In*...> base{src.template ptr<In>()...};
  for_each_chunk<N>(c, [&](const std::array<int64_t, N>& off, int64_t n, const std::array<int64_t, N>& st) {
    detail::map_row<Out, In...>(f, o + off[0], base, off, n, st, std::index_sequence_for<In...>{});
  });
}

// dst = kernel(src) elementwise, kernel(const In* in, Out* out, n) working on contiguous arrays.
// Every element goes through the kernel, whatever the layouts (strided and transposed operands
// are staged through small buffers), so results never depend on strides.
template <class Out, class In, class Kernel>
void map_vec(const Kernel& kernel, const TensorArg& dst, const TensorArg& src) {
  const Collapsed<2> c = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
  Out* const o = dst.ptr<Out>();
  const In* const in = src.ptr<In>();
  if (c.numel > 0 && transposed_operand(c, 1) && !transposed_operand(c, 0)) {
    const auto emit = [&kernel](const In* b, Out* q, int64_t n, int64_t dq) {
      if (dq == 1) return kernel(b, q, n);
      Out t[kTile];
      kernel(b, t, n);
      for (int64_t j = 0; j < n; ++j) q[j * dq] = t[j];
    };
    return map_transposed<Out, In>(emit, c, o, in);
  }
  for_each_chunk<2>(c, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    if (st[0] == 1 && st[1] == 1) return kernel(in + off[1], o + off[0], n);
    constexpr int64_t kStage = 256;
    In ib[kStage];
    Out ob[kStage];
    for (int64_t i = 0; i < n; i += kStage) {
      const int64_t m = std::min(kStage, n - i);
      for (int64_t j = 0; j < m; ++j) ib[j] = in[off[1] + (i + j) * st[1]];
      kernel(ib, ob, m);
      for (int64_t j = 0; j < m; ++j) o[off[0] + (i + j) * st[0]] = ob[j];
    }
  });
}

}  // namespace wick::cpu
