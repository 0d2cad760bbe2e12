// Convolutions on the CPU: im2col + GEMM (forward, in blocks of output pixels) and GEMM + col2im
// (transposed, in blocks of output channels), through OpenBLAS (Note [CPU conv blocks]). bf16 /
// f16 / f8 operands are widened to f32 once, multiplied with sgemm, and the result is rounded to
// the dtype once; f64 uses dgemm. Forward bf16 convolutions on AVX512_BF16 or AMX
// (simd::Isa::Avx512Bf16 and above) stay in bf16 instead: im2col in bf16 and wick's bf16 GEMM
// (Note [bf16 GEMM] in gemm_packed.cpp), which writes the output directly. The 1-d convolutions run
// as 2-d ones with a height of 1.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <memory>
#include <string>
#include <type_traits>

#include "backend/conv_geom.h"
#include "backend/conv_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/dispatch.h"
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

// col[(c, i, j), (oh, ow)] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], zero in the padding.
// x is one sample [c_in, h, w]; rows are independent, so they are split across threads.
template <class A>
void im2col(const A* x, A* col, const Geom& g) {
  const int64_t rows = g.c_in * g.kh * g.kw, plane = g.oh * g.ow;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      im2col_row(x + r / (g.kh * g.kw) * g.h * g.w, col + r * plane, g, (r / g.kw) % g.kh, r % g.kw, 0, plane);
  });
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
// The f32 / f64 forward convolution is cut into blocks of (sample, run of output pixels), spread
// over the threads: each block's im2col (kConvBlockBytes at most) goes to its thread's buffer and
// is multiplied right away, while it is still in that core's cache, by one single-threaded BLAS call
// per group (OpenBLAS's OpenMP build runs on the calling thread inside a parallel region) writing
// the block's columns of the output. The block count is rounded up to a multiple of the thread
// count, so every thread gets the same work. The whole-sample form before it (im2col of a sample,
// then one GEMM threaded by OpenBLAS: c_out rows by all the pixels) spread a 64-row GEMM over 16
// threads poorly and wrote and read the sample's whole im2col (7.2 MB for C64 56x56 3x3) through
// memory. On the GPU machine's 16-core Xeon, same machine and build, whole-sample against blocks of
// 512 KiB: conv2d N2 C64 56x56 3x3 f32 1.73-1.97 -> 0.86-0.88 ms, conv1d N2 C256 L4096 4.44-4.63
// -> 4.17-4.32 ms; blocks of 128 / 256 KiB were slower, 1 MiB (the Xeon's L2 is 2 MiB) and 4 MiB
// about the same as 512 KiB. With 1 MiB and one buffer allocation per call (the threads had taken
// theirs from the allocator at once, 7% of the samples in its lock): conv2d 0.64-0.79 ms
// (0.69-0.85x torch), conv1d 3.2-3.8 ms (1.2-1.95x torch). The transposed convolution takes blocks
// of output channels the same way (transposed_blocks): conv_transpose2d N2 C64 56x56 3x3 f32
// 1.14-1.37 -> 0.71-0.81 ms (0.86-0.96x torch in the same runs). In a sampled profile of the
// forward conv, the calling thread spends about 40% of the op waiting for the other threads at the
// region's end although every thread has the same work: the 16 cores of the lent VM do not run
// alike.
constexpr int64_t kConvBlockBytes = int64_t{1} << 20;
constexpr int64_t kConvMinCols = 16;

// A 1x1 kernel at stride 1 without padding reads the input as it is: no im2col.
bool reads_input_as_is(const Geom& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
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

// The forward convolution with the GEMM in A: f32 or f64 through BLAS (forward_blocks), or bf16
// through gemm_bf16 a sample at a time.
template <class A, class T>
void forward_in(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Geom& g, const char* op) {
  const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_out, c_in/groups * kh * kw]
  if constexpr (!std::is_same_v<A, bf16>) {
    forward_blocks(v, g, op);
  } else {
    Scratch<A> hcol;
    const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
    const int64_t kg = cg * g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
    const bool direct = reads_input_as_is(g);
    if (!direct) hcol = scratch<A>(g.c_in * g.kh * g.kw * out_plane);
    for (int64_t n = 0; n < g.n; ++n) {
      const A* xn = v.x + n * g.c_in * in_plane;
      const A* col = xn;
      if (!direct) {
        im2col(xn, hcol.get(), g);
        col = hcol.get();
      }
      A* on = v.out + n * g.c_out * out_plane;
      gemm_bf16(
          g.groups,
          [&](int64_t gi) {
            return Bf16Gemm{{v.w + gi * cog * kg, cog, kg, kg, 1},
                            {col + gi * kg * out_plane, kg, out_plane, out_plane, 1},
                            {on + gi * cog * out_plane, cog, out_plane, out_plane, 1}};
          },
          simd::active());
    }
  }
  finish_output<A, T>(dst, v.out);
}

void conv_forward(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p, const char* op) {
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        if constexpr (std::is_same_v<T, bf16>) {
          if (simd::active() >= simd::Isa::Avx512Bf16) return forward_in<bf16, T>(x, w, dst, g, op);
        }
        forward_in<gemm_t<T>, T>(x, w, dst, g, op);
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
  // With a 1x1 kernel at stride 1, no padding and no growth, col2im is the identity.
  const bool direct = reads_input_as_is(g) && g.oh == g.h && g.ow == g.w;
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

void conv_transposed(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p,
                     const char* op) {
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        using A = gemm_t<T>;
        const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_in, c_out/groups * kh * kw]
        transposed_blocks(v, g, op);
        finish_output<A, T>(dst, v.out);
      },
      op);
}

}  // namespace

void CpuBackend::conv1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  conv_forward(as_2d(x), as_2d(w), as_2d(dst), params_2d(p), "conv1d");
}

void CpuBackend::conv2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  conv_forward(x, w, dst, p, "conv2d");
}

void CpuBackend::conv_transpose1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  conv_transposed(as_2d(x), as_2d(w), as_2d(dst), params_2d(p), "conv_transpose1d");
}

void CpuBackend::conv_transpose2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  conv_transposed(x, w, dst, p, "conv_transpose2d");
}

}  // namespace wick::cpu
