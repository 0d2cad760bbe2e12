// Convolutions on the CPU: im2col + GEMM (forward, in blocks of output pixels) and GEMM + col2im
// (transposed, in blocks of output channels), through OpenBLAS (Note [CPU conv blocks]). bf16 /
// f16 / f8 operands are widened to f32 once, multiplied with sgemm, and the result is rounded to
// the dtype once; f64 uses dgemm. From AVX-512 up the forward convolutions run on wick's packed
// GEMMs instead, which make the im2col as they pack it (Note [CPU conv on the packed GEMMs]): f32
// (and f16 / f8 widened to f32) from simd::Isa::Avx512, bf16 in bf16 from Isa::Avx512Bf16; so do
// the transposed ones at stride 1, as forward ones (Note [Transposed conv at stride 1]). The 1-d
// convolutions run as 2-d ones with a height of 1.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "backend/conv_geom.h"
#include "backend/conv_math.h"
#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm.h"
#include "cpu/simd.h"
#include "cpu/strided.h"

namespace wick::cpu {

namespace {

using conv::as_2d;
using conv::Geom;
using conv::geom;
using conv::params_2d;

// What the four convolutions need to know, in 2-d form. For the transposed convolutions (h, w)
// is the input size and (oh, ow) the (larger) output size, as in the forward case.
// The element type the GEMM runs in.
template <class T>
using gemm_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// src (any layout, element type T) as a contiguous row-major array of A; copies and widens only
// when it has to.
template <class A, class T>
const A* compute_view(const TensorArg& src, Scratch<A>& hold) {
  if constexpr (std::is_same_v<A, T>) {
    if (src.layout.is_contiguous()) return src.ptr<T>();
  }
  hold = scratch<A>(src.numel());
  backend().cast(src, TensorArg(hold.get(), dtype_of<A>, Layout(src.shape())));
  return hold.get();
}

int blas_int(int64_t v, const char* op) {
  if (v > INT_MAX)
    throw UnsupportedError(std::string("[") + op + "] GEMM dimension " + std::to_string(v) +
                           " exceeds the 32-bit BLAS interface");
  return static_cast<int>(v);
}

// C[m, n] = op(A) B with op(A) = A or A^T, all row-major.
template <class A>
void gemm(bool trans_a, int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const A* b, int64_t ldb, A* c,
          int64_t ldc, const char* op) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; BLAS implementations differ on whether k == 0 clears C
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, A(0));
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const int M = blas_int(m, op), N = blas_int(n, op), K = blas_int(k, op);
  const int LDA = blas_int(lda, op), LDB = blas_int(ldb, op), LDC = blas_int(ldc, op);
  if constexpr (std::is_same_v<A, double>) {
    cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0, a, LDA, b, LDB, 0.0, c, LDC);
  } else {
    cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0f, a, LDA, b, LDB, 0.0f, c, LDC);
  }
}

// One row (c, i, j) of im2col over the output pixels [p0, p1) of one sample:
// dst[p - p0] = xc[oh*sh - ph + i*dh, ow*sw - pw + j*dw] for p = oh * ow_count + ow, zero in the
// padding; xc is input channel c.
template <class A>
void im2col_row(const A* xc, A* dst, const Geom& g, int64_t i, int64_t j, int64_t p0, int64_t p1) {
  const int64_t off = j * g.dw - g.pw;
  int64_t wlo, whi;
  convmath::valid_range(off, g.sw, g.w, g.ow, &wlo, &whi);
  for (int64_t oh = p0 / g.ow; oh * g.ow < p1; ++oh) {
    // Columns [b, e) of output row oh lie in the range; o[ow - b] holds column ow.
    const int64_t b = std::max(p0, oh * g.ow) - oh * g.ow, e = std::min(p1, (oh + 1) * g.ow) - oh * g.ow;
    A* o = dst + (oh * g.ow + b - p0);
    const int64_t ih = convmath::conv_in_pos(oh, i, g.sh, g.ph, g.dh);
    if (ih < 0 || ih >= g.h) {
      std::fill(o, o + (e - b), A{});
      continue;
    }
    const A* xr = xc + ih * g.w;
    const int64_t lo = std::clamp(wlo, b, e), hi = std::clamp(whi, lo, e);
    std::fill(o, o + (lo - b), A{});
    if (g.sw == 1) {
      std::copy(xr + lo + off, xr + hi + off, o + (lo - b));
    } else {
      for (int64_t ow = lo; ow < hi; ++ow) o[ow - b] = xr[ow * g.sw + off];
    }
    std::fill(o + (hi - b), o + (e - b), A{});
  }
}

// col[(c, i, j), p - p0] for the output pixels [p0, p1) of one sample x [c_in, h, w]: im2col's
// rows cut to those columns (row length p1 - p0).
template <class A>
void im2col_cols(const A* x, A* col, const Geom& g, int64_t p0, int64_t p1) {
  const int64_t rows = g.c_in * g.kh * g.kw;
  for (int64_t r = 0; r < rows; ++r)
    im2col_row(x + r / (g.kh * g.kw) * g.h * g.w, col + r * (p1 - p0), g, (r / g.kw) % g.kh, r % g.kw, p0, p1);
}

// The adjoint of im2col for one output channel of one sample: o[ih*sh - ph + i*dh, iw*sw - pw +
// j*dw] += colc[(i, j), (ih, iw)], o ([oh, ow]) overwritten; colc is the channel's kh * kw rows.
template <class A>
void col2im_channel(const A* colc, A* o, const Geom& g) {
  const int64_t in_plane = g.h * g.w;
  std::fill(o, o + g.oh * g.ow, A(0));
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const A* cr = colc + (i * g.kw + j) * in_plane;
      const int64_t off = j * g.dw - g.pw;
      int64_t wlo, whi;
      convmath::valid_range(off, g.sw, g.ow, g.w, &wlo, &whi);
      for (int64_t ih = 0; ih < g.h; ++ih) {
        const int64_t oh = convmath::conv_in_pos(ih, i, g.sh, g.ph, g.dh);
        if (oh < 0 || oh >= g.oh) continue;
        A* orow = o + oh * g.ow;
        const A* c = cr + ih * g.w;
        for (int64_t iw = wlo; iw < whi; ++iw) orow[iw * g.sw + off] += c[iw];
      }
    }
}

// The output buffer of a conv in A: dst itself when it already is a contiguous A array.
template <class A, class T>
A* output_buffer(const TensorArg& dst, Scratch<A>& hold) {
  if constexpr (std::is_same_v<A, T>) {
    if (dst.layout.is_contiguous()) return dst.ptr<T>();
  }
  hold = scratch<A>(dst.numel());
  return hold.get();
}

template <class A, class T>
void finish_output(const TensorArg& dst, const A* buf) {
  if (buf == static_cast<const void*>(dst.ptr<T>())) return;
  backend().cast(TensorArg(const_cast<A*>(buf), dtype_of<A>, Layout(dst.shape())), dst);
}

// A convolution's input, weights and output buffer in A (compute_view, output_buffer).
template <class A, class T>
struct ConvArrays {
  Scratch<A> hx, hw, ho;
  const A* x;
  const A* w;
  A* out;
  ConvArrays(const TensorArg& xa, const TensorArg& wa, const TensorArg& dst)
      : x(compute_view<A, T>(xa, hx)), w(compute_view<A, T>(wa, hw)), out(output_buffer<A, T>(dst, ho)) {}
};

// Note [CPU conv blocks]
// Below Isa::Avx512, for f64 and for small products (Note [CPU conv on the packed GEMMs]), the
// f32 / f64 forward convolution is cut into blocks of (sample, run of output pixels), spread
// over the threads: each block's im2col (kConvBlockBytes at most) goes to its thread's buffer and
// is multiplied right away, while it is still in that core's cache, by one single-threaded BLAS call
// per group (OpenBLAS's OpenMP build runs on the calling thread inside a parallel region) writing
// the block's columns of the output. The block count is rounded up to a multiple of the thread
// count, so every thread gets the same work. A whole sample's im2col with one GEMM threaded by
// OpenBLAS would send that im2col through memory and spread a GEMM of few rows over many threads
// poorly. The threads' buffers come from one allocation per call. The transposed convolution takes
// blocks of output channels the same way (transposed_blocks).
constexpr int64_t kConvBlockBytes = int64_t{1} << 20;
constexpr int64_t kConvMinCols = 16;

// A 1x1 kernel at stride 1 without padding, over an output the size of the input, reads the input
// as it is: no im2col (nor col2im for a transposed convolution). (A transposed one with output
// padding has a larger output.)
bool reads_input_as_is(const Geom& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How `lanes` runs of `len` items each (a sample's output pixels, a group's output channels) are
// cut into blocks of at most `widest` items: at least `narrowest` items a block (or the whole run),
// and where that allows, enough blocks for every thread to get the same count.
struct BlockSplit {
  int64_t per_lane, width;  // blocks per run, items per block (the last one of a run may be short)
};

BlockSplit split_runs(int64_t lanes, int64_t len, int64_t widest, int64_t narrowest) {
  int64_t per_lane = ceil_div(len, std::clamp<int64_t>(std::max(widest, narrowest), 1, len));
  const int64_t threads = num_threads();
  const int64_t balanced = ceil_div(ceil_div(lanes * per_lane, threads) * threads, lanes);
  per_lane = std::max(per_lane, std::min(balanced, ceil_div(len, narrowest)));
  const int64_t width = ceil_div(len, per_lane);
  return {ceil_div(len, width), width};
}

// Calls body(u, buf) for every block u in [0, blocks), spread over the threads by parallel_blocks
// (Note [Dynamic blocks]); buf is the calling thread's buffer of buf_elems elements (null when
// buf_elems is 0), taken from one allocation (parallel_blocks makes at most min(threads, blocks)
// calls of its body). Fewer than two kSmallGemm / block_flops blocks run on one thread (whose BLAS
// calls may then use the others).
template <class A, class F>
void for_each_block(int64_t blocks, double block_flops, int64_t buf_elems, F&& body) {
  const int64_t slots = buf_elems > 0 ? std::min<int64_t>(num_threads(), blocks) : 0;
  const Scratch<A> bufs = scratch<A>(slots * buf_elems);
  std::atomic<int64_t> next_slot{0};
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kSmallGemm / std::max(block_flops, 1.0)));
  parallel_blocks(blocks, grain, [&](auto&& next) {
    A* buf = buf_elems > 0 ? bufs.get() + next_slot.fetch_add(1) * buf_elems : nullptr;
    for (int64_t u = next(); u >= 0; u = next()) body(u, buf);
  });
}

template <class A, class T>
void forward_blocks(const ConvArrays<A, T>& v, const Geom& g, const char* op) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  const int64_t kg = cg * g.kh * g.kw, rows = g.c_in * g.kh * g.kw;
  const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  if (g.n == 0 || out_plane == 0 || g.c_out == 0) return;
  const bool direct = reads_input_as_is(g);
  const BlockSplit s =
      split_runs(g.n, out_plane, kConvBlockBytes / std::max<int64_t>(1, rows * int64_t{sizeof(A)}), kConvMinCols);
  const double block_flops =
      2.0 * static_cast<double>(g.c_out) * static_cast<double>(kg) * static_cast<double>(s.width);
  for_each_block<A>(g.n * s.per_lane, block_flops, direct ? 0 : rows * s.width, [&](int64_t u, A* buf) {
    const int64_t n = u / s.per_lane, p0 = u % s.per_lane * s.width, p1 = std::min(out_plane, p0 + s.width);
    const A* xn = v.x + n * g.c_in * in_plane;
    const A* col = xn + p0;  // direct: x's rows are the columns
    int64_t ldb = in_plane;
    if (!direct) {
      im2col_cols(xn, buf, g, p0, p1);
      col = buf;
      ldb = p1 - p0;
    }
    A* on = v.out + n * g.c_out * out_plane + p0;
    for (int64_t gi = 0; gi < g.groups; ++gi)
      gemm<A>(false, cog, p1 - p0, kg, v.w + gi * cog * kg, kg, col + gi * kg * ldb, ldb, on + gi * cog * out_plane,
              out_plane, op);
  });
}

// Note [CPU conv on the packed GEMMs]
// From Isa::Avx512 up the forward f32 convolution (f16 and f8 widened to f32) runs on wick's f32
// GEMM (Note [f32 GEMM] in gemm_packed_f32.cpp), and bf16 from Isa::Avx512Bf16 up on its bf16 GEMMs,
// with no im2col matrix: one call per convolution, each b an Im2col source (gemm.h MatSource) that
// the GEMM asks for a panel's rows (32 output pixels, 64 k) into an L1 buffer it packs right away;
// the weights are packed once for all samples. Blocks of c span as many row panels as keep a's part
// of one k block within kSourceABytes, so a panel is usually made once and nothing im2col-sized
// reaches memory. The source splits a chunk's pixels into runs inside one output row (pixel_runs)
// and tabulates per tap the lanes inside the image (tap_lanes): a row is one masked load (a gather
// at column strides above 1) per run and 16 lanes into zeroed lanes, so padding costs nothing.
// The last row panel runs a kernel of its own height (f32_kernel_rows). Products under kOwnF32Min
// multiply-adds stay on OpenBLAS, as in matmul; f64 always does; so do the transposed convolution's
// blocks (each would pack the sample's whole input again as b).

// What the Im2col sources of one convolution share: the geometry, and per kernel column j the
// output columns whose input column lies inside the image (convmath::valid_range).
struct Im2colPlan {
  Geom g;
  std::vector<int64_t> wlo, whi;
  // Im2col::rows may take the AVX-512 path (Note [CPU conv on the packed GEMMs]; the packed GEMMs
  // run from Isa::Avx512 up): its lane offsets are 32-bit (gathers), so one channel's plane and the
  // reach of a 32-pixel run must stay well inside that.
  bool vector_rows;
  explicit Im2colPlan(const Geom& geom)
      : g(geom),
        wlo(static_cast<size_t>(geom.kw)),
        whi(wlo),
        vector_rows(geom.h * geom.w + 64 * (geom.sw + 1) < (int64_t{1} << 30)) {
    for (int64_t j = 0; j < g.kw; ++j)
      convmath::valid_range(j * g.dw - g.pw, g.sw, g.w, g.ow, &wlo[static_cast<size_t>(j)],
                            &whi[static_cast<size_t>(j)]);
  }
};

// A run of output pixels inside one output row: pixels lane0 .. lane0 + lanes - 1 of a chunk of 32
// are columns ow0 .. ow0 + lanes - 1 of output row oh.
struct PixelRun {
  int64_t oh, ow0;
  int lane0, lanes;
};

// The runs of the `count` (<= 32) output pixels from p0 on; returns how many.
int pixel_runs(const Geom& g, int64_t p0, int64_t count, PixelRun* run) {
  int n = 0;
  int64_t oh = p0 / g.ow, ow = p0 - oh * g.ow;
  for (int64_t q = 0; q < count; ++oh, ow = 0) {
    const int64_t len = std::min(count - q, g.ow - ow);
    run[n++] = {oh, ow, static_cast<int>(q), static_cast<int>(len)};
    q += len;
  }
  return n;
}

// Per output pixel run and kernel tap (c, i, j): the lanes of the run whose input lies inside the
// image (a mask over the chunk's 32 lanes, 0 if none) and the offset e in channel c's plane such
// that lane l reads element e + l * sw.
struct TapLanes {
  uint32_t mask;
  int64_t e;
};
inline TapLanes tap_lanes(const Im2colPlan& pl, const PixelRun& r, int64_t i, int64_t j) {
  const Geom& g = pl.g;
  const int64_t ih = convmath::conv_in_pos(r.oh, i, g.sh, g.ph, g.dh);
  if (ih < 0 || ih >= g.h) return {0, 0};
  const int64_t lo = std::max(r.ow0, pl.wlo[static_cast<size_t>(j)]);
  const int64_t hi = std::min(r.ow0 + r.lanes, pl.whi[static_cast<size_t>(j)]);
  if (lo >= hi) return {0, 0};
  const int64_t l0 = r.lane0 + lo - r.ow0, l1 = r.lane0 + hi - r.ow0;
  const uint32_t upto = l1 >= 32 ? ~0u : (1u << l1) - 1;
  return {upto & ~((1u << l0) - 1), ih * g.w + (r.ow0 - r.lane0) * g.sw + j * g.dw - g.pw};
}

// Rows k0 .. k0 + rows - 1 of an Im2col over one chunk of up to 32 output pixels from p0: the
// pixel runs, and a cursor over the rows' taps (c, i, j), which the rows take in turn, channel
// after channel. Where the rows span every tap, the lanes of each tap over the runs are worked
// out once (a table of taps x runs), else row by row.
class ChunkTaps {
 public:
  ChunkTaps(const Im2colPlan& pl, int64_t p0, int64_t count, int64_t k0, int64_t rows) : pl_(pl) {
    const int64_t taps = pl.g.kh * pl.g.kw;
    c_ = k0 / taps, i_ = k0 % taps / pl.g.kw, j_ = k0 % pl.g.kw;
    nr_ = pixel_runs(pl.g, p0, count, run_);
    table_ = rows >= taps && taps * nr_ <= kTable;
    if (table_)
      for (int64_t t = 0; t < taps; ++t)
        for (int u = 0; u < nr_; ++u) lanes_[t * nr_ + u] = tap_lanes(pl, run_[u], t / pl.g.kw, t % pl.g.kw);
  }
  int runs() const { return nr_; }
  // The current row's input channel (within the group), and its tap's lanes over the runs.
  int64_t channel() const { return c_; }
  const TapLanes* lanes() {
    if (table_) return lanes_ + (i_ * pl_.g.kw + j_) * nr_;
    for (int u = 0; u < nr_; ++u) row_[u] = tap_lanes(pl_, run_[u], i_, j_);
    return row_;
  }
  // On to the next row.
  void next() {
    if (++j_ == pl_.g.kw) {
      j_ = 0;
      if (++i_ == pl_.g.kh) i_ = 0, ++c_;
    }
  }

 private:
  static constexpr int64_t kTable = 128;
  const Im2colPlan& pl_;
  int64_t c_, i_, j_;
  PixelRun run_[32];
  int nr_;
  bool table_;
  TapLanes lanes_[kTable], row_[32];
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WICK_CONV_AVX512 1
// x + e as an address, for masked loads and gathers whose first lanes may lie before x (masked off:
// they are never read).
template <class A>
inline const A* at_offset(const A* x, int64_t e) {
  return reinterpret_cast<const A*>(reinterpret_cast<uintptr_t>(x) + static_cast<uintptr_t>(e) * sizeof(A));
}

// Rows k0 .. k0 + kk of an Im2col over the output pixels j0 .. j0 + cols, 32 lanes at a time: each
// row's lanes start at zero (the padding) and take the lanes of each pixel run inside the image by
// one masked load (a gather for sw > 1) per 16 lanes.
__attribute__((target("avx512f"))) void im2col_rows_f32(const Im2colPlan& pl, const float* x, int64_t k0, int64_t kk,
                                                        int64_t j0, int64_t cols, float* out, int64_t ld) {
  const Geom& g = pl.g;
  const int64_t plane = g.h * g.w;
  const __m512i lane_idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                              _mm512_set1_epi32(static_cast<int>(g.sw)));
  for (int64_t q0 = 0; q0 < cols; q0 += 32) {
    const int64_t n = std::min<int64_t>(32, cols - q0);
    ChunkTaps ct(pl, j0 + q0, n, k0, kk);
    const __mmask16 keep0 = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    const __mmask16 keep1 = static_cast<__mmask16>(n >= 32 ? 0xffff : n <= 16 ? 0 : (1u << (n - 16)) - 1);
    for (int64_t r = 0; r < kk; ++r, ct.next()) {
      const float* xc = x + ct.channel() * plane;
      const TapLanes* tl = ct.lanes();
      __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
      for (int u = 0; u < ct.runs(); ++u) {
        const TapLanes t = tl[u];
        const __mmask16 m0 = static_cast<__mmask16>(t.mask), m1 = static_cast<__mmask16>(t.mask >> 16);
        if (g.sw == 1) {
          if (m0) v0 = _mm512_mask_loadu_ps(v0, m0, at_offset(xc, t.e));
          if (m1) v1 = _mm512_mask_loadu_ps(v1, m1, at_offset(xc, t.e + 16));
        } else {
          if (m0)
            v0 = _mm512_mask_i32gather_ps(v0, m0, _mm512_add_epi32(lane_idx, _mm512_set1_epi32(static_cast<int>(t.e))),
                                          xc, 4);
          if (m1)
            v1 = _mm512_mask_i32gather_ps(
                v1, m1, _mm512_add_epi32(lane_idx, _mm512_set1_epi32(static_cast<int>(t.e + 16 * g.sw))), xc, 4);
        }
      }
      _mm512_mask_storeu_ps(out + r * ld + q0, keep0, v0);
      _mm512_mask_storeu_ps(out + r * ld + q0 + 16, keep1, v1);
    }
  }
}

// The same for bf16 at unit stride, 32 lanes of 16 bits in one vector.
__attribute__((target("avx512f,avx512bw"))) void im2col_rows_bf16(const Im2colPlan& pl, const bf16* x, int64_t k0,
                                                                  int64_t kk, int64_t j0, int64_t cols, bf16* out,
                                                                  int64_t ld) {
  const int64_t plane = pl.g.h * pl.g.w;
  for (int64_t q0 = 0; q0 < cols; q0 += 32) {
    const int64_t n = std::min<int64_t>(32, cols - q0);
    ChunkTaps ct(pl, j0 + q0, n, k0, kk);
    const __mmask32 keep = static_cast<__mmask32>(n >= 32 ? ~0u : (1u << n) - 1);
    for (int64_t r = 0; r < kk; ++r, ct.next()) {
      const uint16_t* xc = &x[ct.channel() * plane].bits;
      const TapLanes* tl = ct.lanes();
      __m512i v = _mm512_setzero_si512();
      for (int u = 0; u < ct.runs(); ++u)
        if (tl[u].mask) v = _mm512_mask_loadu_epi16(v, tl[u].mask, at_offset(xc, tl[u].e));
      _mm512_mask_storeu_epi16(&out[r * ld + q0].bits, keep, v);
    }
  }
}
#endif

// The im2col matrix of one sample and group (rows (c, i, j) over the group's input channels c,
// columns the output pixels), made where the GEMM packs it; x is the group's first channel.
template <class A>
class Im2col final : public MatSource<A> {
 public:
  Im2col(const A* x, const Im2colPlan& plan) : x_(x), pl_(&plan) {}
  void rows(int64_t k0, int64_t kk, int64_t j0, int64_t cols, A* out, int64_t ld) const override {
    const Geom& g = pl_->g;
#if defined(WICK_CONV_AVX512)
    if (pl_->vector_rows) {
      if constexpr (std::is_same_v<A, float>) return im2col_rows_f32(*pl_, x_, k0, kk, j0, cols, out, ld);
      if constexpr (std::is_same_v<A, bf16>) {
        if (g.sw == 1) return im2col_rows_bf16(*pl_, x_, k0, kk, j0, cols, out, ld);
      }
    }
#endif
    const int64_t taps = g.kh * g.kw, plane = g.h * g.w;
    for (int64_t r = k0; r < k0 + kk; ++r)
      im2col_row(x_ + r / taps * plane, out + (r - k0) * ld, g, r / g.kw % g.kh, r % g.kw, j0, j0 + cols);
  }

 private:
  const A* x_;
  const Im2colPlan* pl_;
};

// The forward convolution on wick's packed GEMM for A (float or bf16) at level isa (Note [CPU conv
// on the packed GEMMs]): out = conv(x, w) with x, w and out contiguous arrays of A.
template <class A>
void forward_packed(const A* x, const A* w, A* out, const Geom& g, simd::Isa isa) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  const int64_t kg = cg * g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  const int64_t count = g.n * g.groups;
  const bool direct = reads_input_as_is(g);  // the 1x1 kernel reads x as b
  const Im2colPlan plan(g);
  std::vector<Im2col<A>> sources;
  if (!direct) {
    sources.reserve(static_cast<size_t>(count));
    for (int64_t u = 0; u < count; ++u)
      sources.emplace_back(x + (u / g.groups * g.c_in + u % g.groups * cg) * in_plane, plan);
  }
  auto product = [&](int64_t u) {
    const int64_t n = u / g.groups, gi = u % g.groups;
    GemmOf<A> pr{{w + gi * cog * kg, cog, kg, kg, 1},
                 {x + (n * g.c_in + gi * cg) * in_plane, kg, out_plane, out_plane, 1},
                 {out + (n * g.c_out + gi * cog) * out_plane, cog, out_plane, out_plane, 1}};
    if (!direct) pr.b_source = &sources[static_cast<size_t>(u)];
    return pr;
  };
  if constexpr (std::is_same_v<A, bf16>) {
    gemm_bf16(count, product, isa);
  } else {
    gemm_f32(count, product, isa);
  }
}

// Whether a forward convolution of geometry g with its GEMM in A runs on the packed GEMMs at level
// isa: bf16 always (forward_in<bf16> is called from Isa::Avx512Bf16 up), f32 from Isa::Avx512 up
// where a product reaches kOwnF32Min multiply-adds, f64 never.
template <class A>
bool runs_packed(const Geom& g, simd::Isa isa) {
  if constexpr (std::is_same_v<A, bf16>) return true;
  if constexpr (std::is_same_v<A, double>) return false;
  const double work = static_cast<double>(g.c_out / g.groups) * static_cast<double>(g.c_in / g.groups * g.kh * g.kw) *
                      static_cast<double>(g.oh * g.ow);
  return isa >= simd::Isa::Avx512 && work >= kOwnF32Min;
}

// The forward convolution with the GEMM in A: bf16 on wick's bf16 GEMM; f32 on wick's f32 GEMM or
// through OpenBLAS in blocks; f64 through OpenBLAS in blocks.
template <class A, class T>
void forward_in(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Geom& g, simd::Isa isa,
                const char* op) {
  const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_out, c_in/groups * kh * kw]
  if (runs_packed<A>(g, isa)) {
    if constexpr (!std::is_same_v<A, double>) forward_packed(v.x, v.w, v.out, g, isa);
  } else {
    if constexpr (!std::is_same_v<A, bf16>) forward_blocks(v, g, op);
  }
  finish_output<A, T>(dst, v.out);
}

void conv_forward(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p, simd::Isa isa,
                  const char* op) {
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        if constexpr (std::is_same_v<T, bf16>) {
          if (isa >= simd::Isa::Avx512Bf16) return forward_in<bf16, T>(x, w, dst, g, isa, op);
        }
        forward_in<gemm_t<T>, T>(x, w, dst, g, isa, op);
      },
      op);
}

// The transposed convolution, in blocks of (sample, group, run of output channels) spread over the
// threads like the forward one (Note [CPU conv blocks]): a block's GEMM (col[(co, i, j), pixel] =
// sum over the group's input channels ci of w[ci, (co, i, j)] x[ci, pixel], single-threaded) goes
// to its thread's buffer of at most kConvBlockBytes where a channel fits, and col2im adds it into
// those channels' outputs at once; a block owns its channels' outputs, so nothing is shared. With
// fewer blocks than threads, one GEMM per sample and group threaded by BLAS, then col2im over the
// channels in parallel.
template <class A, class T>
void transposed_blocks(const ConvArrays<A, T>& v, const Geom& g, const char* op) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups, taps = g.kh * g.kw;
  const int64_t kg = cog * taps, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  if (g.n == 0 || g.c_out == 0 || out_plane == 0) return;
  const bool direct = reads_input_as_is(g);  // col2im is the identity
  const int64_t lanes = g.n * g.groups, channel_elems = taps * in_plane;
  const BlockSplit s =
      split_runs(lanes, cog, kConvBlockBytes / std::max<int64_t>(1, channel_elems * int64_t{sizeof(A)}), 1);
  if (lanes * s.per_lane < num_threads()) {
    Scratch<A> hcol;
    if (!direct) hcol = scratch<A>(g.c_out * taps * in_plane);
    for (int64_t n = 0; n < g.n; ++n) {
      A* on = v.out + n * g.c_out * out_plane;
      A* col = direct ? on : hcol.get();
      for (int64_t gi = 0; gi < g.groups; ++gi)
        gemm<A>(true, kg, in_plane, cg, v.w + gi * cg * kg, kg, v.x + (n * g.c_in + gi * cg) * in_plane, in_plane,
                col + gi * kg * in_plane, in_plane, op);
      if (direct) continue;
      parallel_for(g.c_out, std::max<int64_t>(1, kGrain / std::max<int64_t>(channel_elems, 1)),
                   [&](int64_t c0, int64_t c1) {
                     for (int64_t co = c0; co < c1; ++co)
                       col2im_channel(col + co * channel_elems, on + co * out_plane, g);
                   });
    }
    return;
  }
  const double block_flops = 2.0 * static_cast<double>(s.width * channel_elems) * static_cast<double>(cg);
  for_each_block<A>(lanes * s.per_lane, block_flops, direct ? 0 : s.width * channel_elems, [&](int64_t u, A* buf) {
    const int64_t lane = u / s.per_lane, n = lane / g.groups, gi = lane % g.groups;
    const int64_t c0 = u % s.per_lane * s.width, c1 = std::min(cog, c0 + s.width);
    A* on = v.out + (n * g.c_out + gi * cog) * out_plane;  // the group's first output channel
    A* col = direct ? on + c0 * out_plane : buf;
    gemm<A>(true, (c1 - c0) * taps, in_plane, cg, v.w + gi * cg * kg + c0 * taps, kg,
            v.x + (n * g.c_in + gi * cg) * in_plane, in_plane, col, in_plane, op);
    if (direct) return;
    for (int64_t c = c0; c < c1; ++c) col2im_channel(buf + (c - c0) * channel_elems, on + c * out_plane, g);
  });
}

// Note [Transposed conv at stride 1]
// At stride 1 a transposed convolution is a forward one over the same input, with each group's
// kernel flipped in both spatial dims and its two channel dims swapped, and padding d (k - 1) - p
// in place of p: out[o] = sum over taps t of x[o + p - t d] w[t], and with t' = k - 1 - t that is
// x[o - (d (k - 1) - p) + t' d] w[k - 1 - t'], a forward convolution's sum. Output padding (less
// than d at stride 1) adds outputs past the last full window, whose taps past the input read the
// forward im2col's padding. Where that padding is not negative (p <= d (k - 1)) and the forward
// convolution runs on the packed GEMMs (Note [CPU conv on the packed GEMMs]), the transposed one
// goes that way (forward_geom, transposed_as_forward): no col buffer and no col2im. Larger strides
// stay on transposed_blocks, which beat one forward convolution per output phase spread afterwards
// into its strided positions.
bool as_forward(const Geom& g) {
  return g.sh == 1 && g.sw == 1 && g.ph <= g.dh * (g.kh - 1) && g.pw <= g.dw * (g.kw - 1);
}
Geom forward_geom(const Geom& g) {
  Geom f = g;
  f.ph = g.dh * (g.kh - 1) - g.ph;
  f.pw = g.dw * (g.kw - 1) - g.pw;
  return f;
}

template <class A, class T>
void transposed_as_forward(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Geom& g, simd::Isa isa) {
  const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_in, c_out/groups * kh * kw]
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups, taps = g.kh * g.kw;
  const Scratch<A> wf = scratch<A>(g.c_out * cg * taps);  // [c_out, c_in/groups * kh * kw], flipped
  parallel_for(g.c_out, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cg * taps)), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t gi = o / cog, co = o % cog;
      for (int64_t ci = 0; ci < cg; ++ci) {
        const A* src = v.w + ((gi * cg + ci) * cog + co) * taps;
        A* out = wf.get() + (o * cg + ci) * taps;
        for (int64_t t = 0; t < taps; ++t) out[t] = src[taps - 1 - t];
      }
    }
  });
  forward_packed(v.x, wf.get(), v.out, forward_geom(g), isa);
  finish_output<A, T>(dst, v.out);
}

void conv_transposed(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p, simd::Isa isa,
                     const char* op) {
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        using A = gemm_t<T>;
        if (as_forward(g)) {  // Note [Transposed conv at stride 1]
          if constexpr (std::is_same_v<T, bf16>) {
            if (isa >= simd::Isa::Avx512Bf16) return transposed_as_forward<bf16, T>(x, w, dst, g, isa);
          }
          if constexpr (std::is_same_v<A, float>) {
            if (runs_packed<float>(forward_geom(g), isa)) return transposed_as_forward<float, T>(x, w, dst, g, isa);
          }
        }
        const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_in, c_out/groups * kh * kw]
        transposed_blocks(v, g, op);
        finish_output<A, T>(dst, v.out);
      },
      op);
}

void check_level(simd::Isa isa, const char* op) {
  if (isa > simd::detected())
    throw UnsupportedError(std::string("[") + op + "] level " + simd::isa_name(isa) + " is above this cpu's (" +
                           simd::isa_name(simd::detected()) + ")");
}

}  // namespace

void conv2d_at(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p, simd::Isa isa) {
  check_level(isa, "conv2d");
  conv_forward(x, w, dst, p, isa, "conv2d");
}

void conv_transpose2d_at(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p,
                         simd::Isa isa) {
  check_level(isa, "conv_transpose2d");
  conv_transposed(x, w, dst, p, isa, "conv_transpose2d");
}

void CpuBackend::conv1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  conv_forward(as_2d(x), as_2d(w), as_2d(dst), params_2d(p), simd::active(), "conv1d");
}

void CpuBackend::conv2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  conv_forward(x, w, dst, p, simd::active(), "conv2d");
}

void CpuBackend::conv_transpose1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  conv_transposed(as_2d(x), as_2d(w), as_2d(dst), params_2d(p), simd::active(), "conv_transpose1d");
}

void CpuBackend::conv_transpose2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  conv_transposed(x, w, dst, p, simd::active(), "conv_transpose2d");
}

}  // namespace wick::cpu
