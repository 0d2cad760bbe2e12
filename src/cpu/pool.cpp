// Pooling and resampling on the CPU. Each works plane by plane ([N, C] planes of [H, W]), the
// planes split across threads; input and output are read and written through their strides, so
// any layout (transposed, narrowed, broadcast) needs no copy. upsample_nearest1d runs as the 2-d
// kernel with a height of 1.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/conv_geom.h"
#include "backend/conv_math.h"
#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"

namespace wick::cpu {

namespace {

using conv::plane3;
using conv::plane4;
using conv::Plane4;

// Calls f(src_plane_offset, dst_plane_offset) for every (n, c) plane, in parallel; `per_plane` is
// the work of one plane in elements, for the grain.
template <class F>
void for_each_plane(const Plane4& x, const Plane4& y, int64_t per_plane, F&& f) {
  const int64_t planes = y.n * y.c;
  parallel_ranges(planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(per_plane, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / y.c, c = i % y.c;
      f(n * x.sn + c * x.sc, n * y.sn + c * y.sc);
    }
  });
}

// A pooling window, clipped to the input: rows [hs, he) and columns [ws, we) of the plane at xo;
// (h0, w0) is its unclipped top left corner (negative in the padding).
struct Window {
  int64_t xo, h0, w0, hs, he, ws, we;
};

// f(window, y index) for every output of a pooling with kernel kh x kw (p's strides and padding).
template <class F>
void for_each_window(const Plane4& x, const Plane4& y, const Pool2dParams& p, F&& f) {
  const int64_t kh = p.kernel[0], kw = p.kernel[1];
  for_each_plane(x, y, y.h * y.w * kh * kw, [&](int64_t xo, int64_t yo) {
    for (int64_t oh = 0; oh < y.h; ++oh) {
      const int64_t h0 = oh * p.stride[0] - p.padding[0];
      const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, x.h);
      for (int64_t ow = 0; ow < y.w; ++ow) {
        const int64_t w0 = ow * p.stride[1] - p.padding[1];
        f(Window{xo, h0, w0, hs, he, std::max<int64_t>(w0, 0), std::min(w0 + kw, x.w)}, yo + oh * y.sh + ow * y.sw);
      }
    }
  });
}

template <class T>
void avg_pool_typed(const TensorArg& src, const TensorArg& dst, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Plane4 x = plane4(src), y = plane4(dst);
  const T* xp = src.ptr<T>();
  T* yp = dst.ptr<T>();
  for_each_window(x, y, p, [&](const Window& w, int64_t yi) {
    A sum = 0;
    for (int64_t ih = w.hs; ih < w.he; ++ih)
      for (int64_t iw = w.ws; iw < w.we; ++iw) sum += convert<A>(xp[w.xo + ih * x.sh + iw * x.sw]);
    const int64_t div = convmath::avg_pool_divisor(w.h0, w.w0, p.kernel[0], p.kernel[1], x.h, x.w, p.count_include_pad);
    yp[yi] = convert<T>(sum / static_cast<A>(div));
  });
}

// The max of the rows x cols window at p: its elements offered in row-major order to
// convmath::max_pool_takes (a NaN takes over from anything, ties keep the earlier element).
template <class T, class A, class I>
inline T window_best(const T* p, I rows, I cols, int64_t sh, int64_t sw) {
  T best = p[0];
  A best_v = convert<A>(best);
  for (I ih = 0; ih < rows; ++ih)
    for (I iw = 0; iw < cols; ++iw) {
      const T v = p[ih * sh + iw * sw];
      const A a = convert<A>(v);
      if (convmath::max_pool_takes(a, best_v)) {
        best = v;
        best_v = a;
      }
    }
  return best;
}

// The max of a K x K window with no padding in it, in window_best's order (the same result): a
// compile-time K unrolls the common 2x2 and 3x3 windows.
template <int K, class T, class A>
inline T window_max(const T* p, int64_t sh, int64_t sw) {
  if constexpr (std::is_same_v<T, A> && std::is_floating_point_v<T>) {
    // maxss-style selects and a NaN flag: no branch per element (random data mispredicts half
    // of them); a window with a NaN goes to window_best, whose order decides which NaN comes out.
    T m = p[0];
    bool nan = false;
    for (int ih = 0; ih < K; ++ih)
      for (int iw = 0; iw < K; ++iw) {
        const T v = p[ih * sh + iw * sw];
        nan |= v != v;
        m = v > m ? v : m;
      }
    if (!nan) return m;
  }
  return window_best<T, A>(p, K, K, sh, sw);
}

// Every window holds at least one real element: the front end keeps padding <= kernel / 2.
template <class T>
void max_pool_typed(const TensorArg& src, const TensorArg& dst, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Plane4 x = plane4(src), y = plane4(dst);
  const T* xp = src.ptr<T>();
  T* yp = dst.ptr<T>();
  const int64_t kh = p.kernel[0], kw = p.kernel[1];
  for_each_window(x, y, p, [&](const Window& w, int64_t yi) {
    if (kh == kw && (kh == 2 || kh == 3) && w.hs == w.h0 && w.he == w.h0 + kh && w.ws == w.w0 && w.we == w.w0 + kw) {
      const T* win = xp + w.xo + w.h0 * x.sh + w.w0 * x.sw;
      yp[yi] = kh == 2 ? window_max<2, T, A>(win, x.sh, x.sw) : window_max<3, T, A>(win, x.sh, x.sw);
      return;
    }
    yp[yi] = window_best<T, A>(xp + w.xo + w.hs * x.sh + w.ws * x.sw, w.he - w.hs, w.we - w.ws, x.sh, x.sw);
  });
}

template <class T>
void nearest_typed(const Plane4& x, const Plane4& y, const T* xp, T* yp) {
  std::vector<int64_t> src_h(static_cast<size_t>(y.h)), src_w(static_cast<size_t>(y.w));
  for (int64_t i = 0; i < y.h; ++i) src_h[static_cast<size_t>(i)] = convmath::nearest_src(i, x.h, y.h) * x.sh;
  for (int64_t i = 0; i < y.w; ++i) src_w[static_cast<size_t>(i)] = convmath::nearest_src(i, x.w, y.w) * x.sw;
  for_each_plane(x, y, y.h * y.w, [&](int64_t xo, int64_t yo) {
    for (int64_t oh = 0; oh < y.h; ++oh) {
      const T* xr = xp + xo + src_h[static_cast<size_t>(oh)];
      T* yr = yp + yo + oh * y.sh;
      if (y.sw == 1) {
        for (int64_t ow = 0; ow < y.w; ++ow) yr[ow] = xr[src_w[static_cast<size_t>(ow)]];
      } else {
        for (int64_t ow = 0; ow < y.w; ++ow) yr[ow * y.sw] = xr[src_w[static_cast<size_t>(ow)]];
      }
    }
  });
}

void nearest(const Plane4& x, const Plane4& y, const TensorArg& src, const TensorArg& dst, const char* op) {
  dispatch(
      src.dtype, [&]<class T>() { nearest_typed<T>(x, y, src.ptr<T>(), dst.ptr<T>()); }, op);
}

template <class T>
void bilinear_typed(const TensorArg& src, const TensorArg& dst, bool align_corners) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Plane4 x = plane4(src), y = plane4(dst);
  const T* xp = src.ptr<T>();
  T* yp = dst.ptr<T>();
  std::vector<convmath::LinearTap<A>> th(static_cast<size_t>(y.h)), tw(static_cast<size_t>(y.w));
  for (int64_t i = 0; i < y.h; ++i) th[static_cast<size_t>(i)] = convmath::linear_tap<A>(i, x.h, y.h, align_corners);
  for (int64_t i = 0; i < y.w; ++i) tw[static_cast<size_t>(i)] = convmath::linear_tap<A>(i, x.w, y.w, align_corners);
  for_each_plane(x, y, 4 * y.h * y.w, [&](int64_t xo, int64_t yo) {
    for (int64_t oh = 0; oh < y.h; ++oh) {
      const convmath::LinearTap<A>& a = th[static_cast<size_t>(oh)];
      const T* r0 = xp + xo + a.i0 * x.sh;
      const T* r1 = xp + xo + a.i1 * x.sh;
      for (int64_t ow = 0; ow < y.w; ++ow) {
        const convmath::LinearTap<A>& b = tw[static_cast<size_t>(ow)];
        const int64_t c0 = b.i0 * x.sw, c1 = b.i1 * x.sw;
        const A top = (A(1) - b.lambda) * convert<A>(r0[c0]) + b.lambda * convert<A>(r0[c1]);
        const A bot = (A(1) - b.lambda) * convert<A>(r1[c0]) + b.lambda * convert<A>(r1[c1]);
        yp[yo + oh * y.sh + ow * y.sw] = convert<T>((A(1) - a.lambda) * top + a.lambda * bot);
      }
    }
  });
}

}  // namespace

void CpuBackend::avg_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { avg_pool_typed<T>(x, dst, p); }, "avg_pool2d");
}

void CpuBackend::max_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  dispatch(
      x.dtype, [&]<class T>() { max_pool_typed<T>(x, dst, p); }, "max_pool2d");
}

void CpuBackend::upsample_nearest1d(const TensorArg& x, const TensorArg& dst) {
  nearest(plane3(x), plane3(dst), x, dst, "upsample_nearest1d");
}

void CpuBackend::upsample_nearest2d(const TensorArg& x, const TensorArg& dst) {
  nearest(plane4(x), plane4(dst), x, dst, "upsample_nearest2d");
}

void CpuBackend::upsample_bilinear2d(const TensorArg& x, const TensorArg& dst, bool align_corners) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { bilinear_typed<T>(x, dst, align_corners); }, "upsample_bilinear2d");
}

}  // namespace wick::cpu
