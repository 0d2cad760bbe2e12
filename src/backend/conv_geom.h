// Host-side conv geometry shared by the CPU and GPU backends: the sizes of one conv2d call, and the
// view of the 1-d ops as 2-d ones (height 1) so both backends run the 1-d convs on their 2-d code.
#pragma once

#include <cstdint>

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
