// Host-side geometry of the conv family shared by the CPU and GPU backends: the sizes of one conv2d
// call, the [N, C, H, W] planes of pooling and resampling, and the view of the 1-d ops as 2-d ones
// (height 1) so both backends run the 1-d ops on their 2-d code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "backend/backend.h"

namespace wick::conv {

struct Geom {
  int64_t n, c_in, h, w;
  int64_t c_out, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t groups;
};

// x [N, C_in, H, W], dst [N, C_out, OH, OW] (for the transposed convs x and dst swap roles).
inline Geom geom(const TensorArg& x, const TensorArg& dst, int64_t kh, int64_t kw, const Conv2dParams& p) {
  return {x.shape()[0], x.shape()[1],   x.shape()[2],   x.shape()[3], dst.shape()[1], kh,
          kw,           dst.shape()[2], dst.shape()[3], p.stride[0],  p.stride[1],    p.padding[0],
          p.padding[1], p.dilation[0],  p.dilation[1],  p.groups};
}

// Note [Transposed conv phases]
// Along one dim a transposed convolution sums out[o] = sum over taps t of x[(o + p - t d) / s] w[t],
// over the taps where the division is exact and lands in [0, in). Which taps those are depends only
// on o mod s, the output's phase: the outputs o = r, r + s, r + 2s, ... of phase r take the taps
// t0, t0 + L, t0 + 2L, ... below k, with L = s / gcd(s, d) and t0 the first tap with
// r + p - t0 d divisible by s (none when no tap below min(k, L) is). Output q of the phase
// (o = r + q s) and its a-th tap t0 + a L read x[q + c - a D] with c = (r + p - t0 d) / s and
// D = d / gcd(s, d): a forward convolution at stride 1 over x with padding -c and dilation -D (its
// input coordinate q - (-c) + a (-D), convmath::conv_in_pos), whose taps out of range read 0 as in
// the padding. So a transposed convolution is s_h * s_w such forward convolutions, each over a
// strided slice of the weights and writing a strided slice of the output; at stride 1 it is one,
// with padding -p and dilation -d. Phases without taps are zeros.
struct TransposedPhase {
  int64_t tap0, taps, tap_step;  // the taps t0 + a * tap_step, a < taps, of w
  int64_t pad, dil;              // the forward convolution's padding (any sign) and dilation (negative)
  int64_t out0, outs;            // its outputs out0 + q * s, q < outs
};

// The phase r (0 <= r < s) of one dim of a transposed convolution with kernel k, stride s, padding
// p, dilation d >= 1 and `out` outputs.
inline TransposedPhase transposed_phase(int64_t r, int64_t k, int64_t s, int64_t p, int64_t d, int64_t out) {
  const int64_t a = std::gcd(s, d);
  const int64_t step = s / a;
  TransposedPhase ph{0, 0, step, 0, -(d / a), r, r < out ? (out - r + s - 1) / s : 0};
  for (int64_t t = 0; t < k && t < step; ++t) {
    const int64_t v = r + p - t * d;
    if (v % s != 0) continue;
    ph.tap0 = t;
    ph.taps = (k - t + step - 1) / step;
    ph.pad = -(v / s);
    break;
  }
  return ph;
}

// The phases of one dim that have outputs: r < min(s, out).
inline std::vector<TransposedPhase> transposed_phases(int64_t k, int64_t s, int64_t p, int64_t d, int64_t out) {
  std::vector<TransposedPhase> v;
  for (int64_t r = 0; r < std::min(s, out); ++r) v.push_back(transposed_phase(r, k, s, p, d, out));
  return v;
}

// Sizes and strides of a 4-d [N, C, H, W] operand (the pooling and resampling ops, which work
// plane by plane).
struct Plane4 {
  int64_t n, c, h, w;      // sizes
  int64_t sn, sc, sh, sw;  // strides
};

inline Plane4 plane4(const TensorArg& t) {
  const Shape& s = t.shape();
  const Strides& st = t.layout.strides();
  return {s[0], s[1], s[2], s[3], st[0], st[1], st[2], st[3]};
}

// [N, C, L] as [N, C, 1, L].
inline Plane4 plane3(const TensorArg& t) {
  const Shape& s = t.shape();
  const Strides& st = t.layout.strides();
  return {s[0], s[1], 1, s[2], st[0], st[1], 0, st[2]};
}

// [A, B, L] viewed as [A, B, 1, L].
inline TensorArg as_2d(const TensorArg& t) {
  const Shape& s = t.shape();
  const Strides& st = t.layout.strides();
  return TensorArg(t.data, t.dtype,
                   Layout(Shape{s[0], s[1], 1, s[2]}, Strides{st[0], st[1], 0, st[2]}, t.layout.offset()));
}

inline Conv2dParams params_2d(const Conv1dParams& p) {
  Conv2dParams q;
  q.stride = {1, p.stride};
  q.padding = {0, p.padding};
  q.dilation = {1, p.dilation};
  q.groups = p.groups;
  q.output_padding = {0, p.output_padding};
  return q;
}

}  // namespace wick::conv
