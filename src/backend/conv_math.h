// Shape arithmetic and per-element index math of the conv / pool / resample / rope family, shared
// by the front end (output sizes), the CPU loops and the GPU kernels. Device-safe: no host-only
// includes, every function WICK_HOST_DEVICE.
//
// Note [Conv output sizes]
// PyTorch's formulas, ceil_mode off, with the division rounding down:
//   conv            out = floor((in + 2p - d(k-1) - 1) / s) + 1
//   conv transpose  out = (in - 1)s - 2p + d(k-1) + output_padding + 1
//   pool            out = floor((in + 2p - k) / s) + 1
// An output size of 0 gives an empty tensor (the backends never see it); the front end rejects a
// negative one.
#pragma once

#include <cstdint>

#include "wick/scalar_types.h"

namespace wick::convmath {

// n / s rounded down, for s >= 1.
WICK_HOST_DEVICE inline int64_t floor_div(int64_t n, int64_t s) { return n >= 0 ? n / s : -((-n + s - 1) / s); }

WICK_HOST_DEVICE inline int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return floor_div(in + 2 * p - d * (k - 1) - 1, s) + 1;
}

WICK_HOST_DEVICE inline int64_t conv_transpose_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                                                        int64_t output_padding) {
  return (in - 1) * s - 2 * p + d * (k - 1) + output_padding + 1;
}

WICK_HOST_DEVICE inline int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t p) {
  return floor_div(in + 2 * p - k, s) + 1;
}

// Input coordinate read by output position `o` through kernel tap `k` (may lie in the padding,
// i.e. outside [0, in)).
WICK_HOST_DEVICE inline int64_t conv_in_pos(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d) {
  return o * s - p + k * d;
}

// The output positions o in [0, out) whose input coordinate o * s + off lies in [0, in): the
// half-open range [*lo, *hi). Lets im2col / col2im loops skip the padding without a test per
// element.
WICK_HOST_DEVICE inline void valid_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t* lo, int64_t* hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = in - off <= 0 ? 0 : (in - off + s - 1) / s;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// Divisor of avg_pool2d for the window whose top-left corner (padding included) is (h0, w0).
// With count_include_pad the padded cells count, as in PyTorch; the window never reaches past
// in + p with ceil_mode off, so that count is always kh * kw.
WICK_HOST_DEVICE inline int64_t avg_pool_divisor(int64_t h0, int64_t w0, int64_t kh, int64_t kw, int64_t in_h,
                                                 int64_t in_w, bool count_include_pad) {
  if (count_include_pad) return kh * kw;
  const int64_t hs = h0 < 0 ? 0 : h0, ws = w0 < 0 ? 0 : w0;
  const int64_t he = h0 + kh > in_h ? in_h : h0 + kh, we = w0 + kw > in_w ? in_w : w0 + kw;
  return (he - hs) * (we - ws);
}

// PyTorch 'nearest': src = floor(dst * in / out), in integers so that it is exact for every size.
WICK_HOST_DEVICE inline int64_t nearest_src(int64_t dst, int64_t in, int64_t out) {
  const int64_t s = dst * in / out;
  return s < in - 1 ? s : in - 1;
}

// The two source taps of a bilinear output coordinate along one axis and the weight of the
// second one (the first one weighs 1 - lambda).
template <class A>
struct LinearTap {
  int64_t i0;
  int64_t i1;
  A lambda;
};

// align_corners: the corner pixels of input and output coincide; scale (in-1)/(out-1), 0 when
// out == 1. Otherwise half-pixel centres: src = (dst + 0.5) * in/out - 0.5, clamped at 0.
template <class A>
WICK_HOST_DEVICE inline LinearTap<A> linear_tap(int64_t dst, int64_t in, int64_t out, bool align_corners) {
  A src;
  if (align_corners) {
    const A scale = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
    src = scale * static_cast<A>(dst);
  } else {
    const A scale = static_cast<A>(in) / static_cast<A>(out);
    src = scale * (static_cast<A>(dst) + A(0.5)) - A(0.5);
    if (src < A(0)) src = A(0);
  }
  int64_t i0 = static_cast<int64_t>(src);
  if (i0 > in - 1) i0 = in - 1;
  const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
  return {i0, i1, src - static_cast<A>(i0)};
}

// One rotation of rope: the pair (a, b) by the angle whose cosine and sine are c, s.
template <class A>
WICK_HOST_DEVICE inline void rope_rotate(A a, A b, A c, A s, A* out_a, A* out_b) {
  *out_a = a * c - b * s;
  *out_b = b * c + a * s;
}

// max_pool2d's "larger": NaN wins and stays (PyTorch's `val > max || isnan(val)`).
template <class A>
WICK_HOST_DEVICE inline bool max_pool_takes(A v, A cur) {
  return v > cur || v != v;
}

}  // namespace wick::convmath
