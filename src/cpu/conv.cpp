// Convolutions on the CPU: im2col + GEMM (forward) and GEMM + col2im (transposed), through
// OpenBLAS. bf16 / f16 / f8 operands are widened to f32 once, multiplied with sgemm, and the
// result is rounded to the dtype once; f64 uses dgemm. Forward bf16 convolutions on AVX512_BF16
// or AMX (simd::Isa::Avx512Bf16 and above) stay in bf16 instead: im2col in bf16 and wick's bf16
// GEMM (Note [bf16 GEMM] in gemm_bf16.cpp), which writes the output directly. The 1-d
// convolutions run as 2-d ones with a height of 1.
#include <cblas.h>

#include <algorithm>
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

using conv::Geom;
using conv::as_2d;
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

// col[(c, i, j), (oh, ow)] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], zero in the padding.
// x is one sample [c_in, h, w]; rows are independent, so they are split across threads.
template <class A>
void im2col(const A* x, A* col, const Geom& g) {
  const int64_t rows = g.c_in * g.kh * g.kw, plane = g.oh * g.ow;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t c = r / (g.kh * g.kw), i = (r / g.kw) % g.kh, j = r % g.kw;
      const A* xc = x + c * g.h * g.w;
      A* out = col + r * plane;
      int64_t wlo, whi;
      convmath::valid_range(j * g.dw - g.pw, g.sw, g.w, g.ow, &wlo, &whi);
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        A* o = out + oh * g.ow;
        const int64_t ih = convmath::conv_in_pos(oh, i, g.sh, g.ph, g.dh);
        if (ih < 0 || ih >= g.h) {
          std::fill(o, o + g.ow, A{});
          continue;
        }
        const A* xr = xc + ih * g.w;
        const int64_t off = j * g.dw - g.pw;
        std::fill(o, o + wlo, A{});
        if (g.sw == 1) {
          std::copy(xr + wlo + off, xr + whi + off, o + wlo);
        } else {
          for (int64_t ow = wlo; ow < whi; ++ow) o[ow] = xr[ow * g.sw + off];
        }
        std::fill(o + whi, o + g.ow, A{});
      }
    }
  });
}

// The adjoint of im2col: out[co, ih*sh - ph + i*dh, iw*sw - pw + j*dw] += col[(co, i, j), (ih, iw)]
// for one sample; out is [c_out, oh, ow] and is overwritten. Each thread owns whole output
// channels, so the accumulation needs no atomics.
template <class A>
void col2im(const A* col, A* out, const Geom& g) {
  const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  const int64_t work = g.kh * g.kw * in_plane;
  parallel_for(g.c_out, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t co = begin; co < end; ++co) {
      A* o = out + co * out_plane;
      std::fill(o, o + out_plane, A(0));
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const A* cr = col + ((co * g.kh + i) * g.kw + j) * in_plane;
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
  });
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

// The forward convolution with the GEMM in A: f32 or f64 through BLAS, or bf16 through gemm_bf16.
template <class A, class T>
void forward_in(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Geom& g, const char* op) {
  const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_out, c_in/groups * kh * kw]
  Scratch<A> hcol;
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  const int64_t kg = cg * g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  // A 1x1 kernel at stride 1 without padding reads the input as it is: no im2col.
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  if (!direct) hcol = scratch<A>(g.c_in * g.kh * g.kw * out_plane);
  for (int64_t n = 0; n < g.n; ++n) {
    const A* xn = v.x + n * g.c_in * in_plane;
    const A* col = xn;
    if (!direct) {
      im2col(xn, hcol.get(), g);
      col = hcol.get();
    }
    A* on = v.out + n * g.c_out * out_plane;
    if constexpr (std::is_same_v<A, bf16>) {
      gemm_bf16(
          g.groups,
          [&](int64_t gi) {
            return Bf16Gemm{{v.w + gi * cog * kg, cog, kg, kg, 1},
                            {col + gi * kg * out_plane, kg, out_plane, out_plane, 1},
                            {on + gi * cog * out_plane, cog, out_plane, out_plane, 1}};
          },
          simd::active());
    } else {
      for (int64_t gi = 0; gi < g.groups; ++gi)
        gemm<A>(false, cog, out_plane, kg, v.w + gi * cog * kg, kg, col + gi * kg * out_plane, out_plane,
                on + gi * cog * out_plane, out_plane, op);
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

void conv_transposed(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p,
                     const char* op) {
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        using A = gemm_t<T>;
        const ConvArrays<A, T> v(x, w, dst);  // v.w: [c_in, c_out/groups * kh * kw]
        Scratch<A> hcol;
        const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
        const int64_t kg = cog * g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
        // With a 1x1 kernel at stride 1, no padding and no growth, col2im is the identity.
        const bool direct =
            g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
        if (!direct) hcol = scratch<A>(g.c_out * g.kh * g.kw * in_plane);
        for (int64_t n = 0; n < g.n; ++n) {
          A* col = direct ? v.out + n * g.c_out * out_plane : hcol.get();
          // col[(co, i, j), pixel] = sum over the group's input channels ci of w[ci, (co, i, j)] x[ci, pixel]
          for (int64_t gi = 0; gi < g.groups; ++gi)
            gemm<A>(true, kg, in_plane, cg, v.w + gi * cg * kg, kg, v.x + (n * g.c_in + gi * cg) * in_plane, in_plane,
                    col + gi * kg * in_plane, in_plane, op);
          if (!direct) col2im(col, v.out + n * g.c_out * out_plane, g);
        }
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
