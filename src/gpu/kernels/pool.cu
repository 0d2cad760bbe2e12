// Pooling and resampling on the GPU: avg_pool2d, max_pool2d, upsample_nearest1d / 2d,
// upsample_bilinear2d. One thread per output element of [N, C, H, W] (upsample_nearest1d is the
// 2-d kernel with a height of 1, as on the CPU); input and output are read and written through
// their strides, so any layout works without a copy. The per-element math is the CPU's
// (src/backend/conv_math.h), in the same order, so pooling agrees with the CPU exactly; bilinear
// may differ in the last bit where the GPU compiler fuses a multiply and an add.
#include <algorithm>
#include <cstdint>

#include "backend/conv_math.h"
#include "cpu/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS {

namespace kern {

namespace {

// Sizes and strides of a 4-d [N, C, H, W] operand.
struct Plane4 {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
};

Plane4 plane4(const TensorArg& t) {
  const Shape& s = t.shape();
  const Strides& st = t.layout.strides();
  return {s[0], s[1], s[2], s[3], st[0], st[1], st[2], st[3]};
}

// [N, C, L] as [N, C, 1, L].
Plane4 plane3(const TensorArg& t) {
  const Shape& s = t.shape();
  const Strides& st = t.layout.strides();
  return {s[0], s[1], 1, s[2], st[0], st[1], 0, st[2]};
}

// What a thread needs to find its output element and its input plane, in the launch's index type.
template <class Index>
struct Geo {
  Index c, h, w;  // output sizes below N
  Index xsn, xsc, xsh, xsw;
  Index ysn, ysc, ysh, ysw;
};

// f(g, x_plane_offset, y_element_offset, oh, ow) computes and stores one output element.
template <class Index, class F>
__global__ void __launch_bounds__(kBlock) plane_kernel(F f, Geo<Index> g, Index total) {
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const Index ow = i % g.w;
    Index t = i / g.w;
    const Index oh = t % g.h;
    t /= g.h;
    const Index c = t % g.c;
    const Index n = t / g.c;
    f(g, n * g.xsn + c * g.xsc, n * g.ysn + c * g.ysc + oh * g.ysh + ow * g.ysw, oh, ow);
  }
}

bool offsets_fit(const Plane4& p) {
  if (p.sn < 0 || p.sc < 0 || p.sh < 0 || p.sw < 0) return false;
  const int64_t max = (p.n - 1) * p.sn + (p.c - 1) * p.sc + (p.h - 1) * p.sh + (p.w - 1) * p.sw;
  return max <= INT32_MAX;
}

template <class Index>
Geo<Index> geo(const Plane4& x, const Plane4& y) {
  auto I = [](int64_t v) { return static_cast<Index>(v); };
  return {I(y.c), I(y.h), I(y.w), I(x.sn), I(x.sc), I(x.sh), I(x.sw), I(y.sn), I(y.sc), I(y.sh), I(y.sw)};
}

// 32-bit index math when every offset and the element count fit (and `extra_fits` agrees).
// `window`: one output per thread on an uncapped grid (Note [GPU flat grid]), for max_pool2d, whose
// capped grid left half the threads a second, serial window (max_pool2d row: 0.032 -> 0.022 ms with
// the whole-window loads below); the resampling kernels keep the capped grid, which was faster
// for them (upsample_nearest2d row: 0.094 against 0.134 ms uncapped).
template <class F>
void launch_planes(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, bool extra_fits, const F& f,
                   bool window = false) {
  const int64_t total = y.n * y.c * y.h * y.w;
  if (total == 0) return;
  const auto stream = gpu::native_stream(ctx.stream);
  const unsigned grid = window ? flat_grid(total) : grid_for(ctx, total);
  if (extra_fits && total <= INT32_MAX && offsets_fit(x) && offsets_fit(y)) {
    plane_kernel<uint32_t, F><<<grid, kBlock, 0, stream>>>(f, geo<uint32_t>(x, y), static_cast<uint32_t>(total));
  } else {
    plane_kernel<int64_t, F><<<grid, kBlock, 0, stream>>>(f, geo<int64_t>(x, y), total);
  }
  gpu::check_launch(ctx.op, ctx.device);
}

struct Window {
  int64_t in_h, in_w, kh, kw, sh, sw, ph, pw;
};

Window window(const Plane4& x, const Pool2dParams& p) {
  return {x.h, x.w, p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.padding[0], p.padding[1]};
}

template <class T>
struct AvgPool {
  const T* x;
  T* y;
  Window k;
  bool count_include_pad;
  template <class Index>
  __device__ void operator()(const Geo<Index>& g, Index xo, Index yo, Index oh, Index ow) const {
    using A = compute_t<T>;
    const int64_t h0 = static_cast<int64_t>(oh) * k.sh - k.ph, w0 = static_cast<int64_t>(ow) * k.sw - k.pw;
    const int64_t hs = h0 > 0 ? h0 : 0, he = h0 + k.kh < k.in_h ? h0 + k.kh : k.in_h;
    const int64_t ws = w0 > 0 ? w0 : 0, we = w0 + k.kw < k.in_w ? w0 + k.kw : k.in_w;
    A sum = 0;
    for (int64_t ih = hs; ih < he; ++ih) {
      const T* row = x + xo + static_cast<Index>(ih) * g.xsh;
      for (int64_t iw = ws; iw < we; ++iw) sum += convert<A>(row[static_cast<Index>(iw) * g.xsw]);
    }
    const int64_t div = convmath::avg_pool_divisor(h0, w0, k.kh, k.kw, k.in_h, k.in_w, count_include_pad);
    y[yo] = convert<T>(sum / static_cast<A>(div));
  }
};

// Every window holds at least one real element: the front end keeps padding <= kernel / 2.
// Whole 2x2 and 3x3 windows load every element before comparing (independent loads in flight
// instead of a loop with a data-dependent trip count); the order of comparison, and so the result
// with NaNs and ties, is the general loop's.
template <class T>
struct MaxPool {
  const T* x;
  T* y;
  Window k;
  template <int K, class Index>
  __device__ T whole_window(const Geo<Index>& g, Index base) const {
    using A = compute_t<T>;
    T v[K * K];
#pragma unroll
    for (int i = 0; i < K; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j)
        v[i * K + j] = x[base + static_cast<Index>(i) * g.xsh + static_cast<Index>(j) * g.xsw];
    T best = v[0];
    A best_v = convert<A>(best);
#pragma unroll
    for (int t = 1; t < K * K; ++t) {
      const A a = convert<A>(v[t]);
      if (convmath::max_pool_takes(a, best_v)) {
        best = v[t];
        best_v = a;
      }
    }
    return best;
  }
  template <class Index>
  __device__ void operator()(const Geo<Index>& g, Index xo, Index yo, Index oh, Index ow) const {
    using A = compute_t<T>;
    const int64_t h0 = static_cast<int64_t>(oh) * k.sh - k.ph, w0 = static_cast<int64_t>(ow) * k.sw - k.pw;
    const int64_t hs = h0 > 0 ? h0 : 0, he = h0 + k.kh < k.in_h ? h0 + k.kh : k.in_h;
    const int64_t ws = w0 > 0 ? w0 : 0, we = w0 + k.kw < k.in_w ? w0 + k.kw : k.in_w;
    const Index base = xo + static_cast<Index>(hs) * g.xsh + static_cast<Index>(ws) * g.xsw;
    const bool whole = he - hs == k.kh && we - ws == k.kw && k.kh == k.kw;
    if (whole && k.kh == 2) {
      y[yo] = whole_window<2>(g, base);
      return;
    }
    if (whole && k.kh == 3) {
      y[yo] = whole_window<3>(g, base);
      return;
    }
    T best = x[base];
    A best_v = convert<A>(best);
    for (int64_t ih = hs; ih < he; ++ih) {
      const T* row = x + xo + static_cast<Index>(ih) * g.xsh;
      for (int64_t iw = ws; iw < we; ++iw) {
        const T v = row[static_cast<Index>(iw) * g.xsw];
        const A a = convert<A>(v);
        if (convmath::max_pool_takes(a, best_v)) {
          best = v;
          best_v = a;
        }
      }
    }
    y[yo] = best;
  }
};

// convmath::nearest_src in the launch's index type (the host checks that dst * in fits).
template <class Index>
__device__ __forceinline__ Index nearest_src(Index dst, Index in, Index out) {
  if constexpr (std::is_same_v<Index, int64_t>) {
    return convmath::nearest_src(dst, in, out);
  } else {
    const Index s = dst * in / out;
    return s < in - 1 ? s : in - 1;
  }
}

template <class U>
struct Nearest {
  const U* x;
  U* y;
  int64_t in_h, in_w;
  template <class Index>
  __device__ void operator()(const Geo<Index>& g, Index xo, Index yo, Index oh, Index ow) const {
    const Index ih = nearest_src<Index>(oh, static_cast<Index>(in_h), g.h);
    const Index iw = nearest_src<Index>(ow, static_cast<Index>(in_w), g.w);
    y[yo] = x[xo + ih * g.xsh + iw * g.xsw];
  }
};

template <class T>
struct Bilinear {
  const T* x;
  T* y;
  int64_t in_h, in_w;
  bool align_corners;
  template <class Index>
  __device__ void operator()(const Geo<Index>& g, Index xo, Index yo, Index oh, Index ow) const {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const convmath::LinearTap<A> a = convmath::linear_tap<A>(oh, in_h, g.h, align_corners);
    const convmath::LinearTap<A> b = convmath::linear_tap<A>(ow, in_w, g.w, align_corners);
    const T* r0 = x + xo + static_cast<Index>(a.i0) * g.xsh;
    const T* r1 = x + xo + static_cast<Index>(a.i1) * g.xsh;
    const Index c0 = static_cast<Index>(b.i0) * g.xsw, c1 = static_cast<Index>(b.i1) * g.xsw;
    const A top = (A(1) - b.lambda) * convert<A>(r0[c0]) + b.lambda * convert<A>(r0[c1]);
    const A bot = (A(1) - b.lambda) * convert<A>(r1[c0]) + b.lambda * convert<A>(r1[c1]);
    y[yo] = convert<T>((A(1) - a.lambda) * top + a.lambda * bot);
  }
};

void nearest(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, const TensorArg& src, const TensorArg& dst) {
  // dst * in must not wrap in 32 bits.
  const bool fits = y.h * x.h <= INT32_MAX && y.w * x.w <= INT32_MAX;
  auto run = [&]<class U>() { launch_planes(ctx, x, y, fits, Nearest<U>{src.ptr<U>(), dst.ptr<U>(), x.h, x.w}); };
  // A copy of bits: instantiated per element size.
  switch (dtype_size(src.dtype)) {
    case 1:
      return run.template operator()<uint8_t>();
    case 2:
      return run.template operator()<uint16_t>();
    case 4:
      return run.template operator()<uint32_t>();
    default:
      return run.template operator()<uint64_t>();
  }
}

}  // namespace

}  // namespace kern

void GpuBackend::avg_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  const kern::LaunchCtx ctx = enter("avg_pool2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  cpu::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        kern::launch_planes(ctx, xp, yp, true,
                            kern::AvgPool<T>{x.ptr<T>(), dst.ptr<T>(), kern::window(xp, p), p.count_include_pad});
      },
      ctx.op);
}

void GpuBackend::max_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  const kern::LaunchCtx ctx = enter("max_pool2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  cpu::dispatch(
      x.dtype,
      [&]<class T>() {
        kern::launch_planes(ctx, xp, yp, true, kern::MaxPool<T>{x.ptr<T>(), dst.ptr<T>(), kern::window(xp, p)},
                            true);
      },
      ctx.op);
}

void GpuBackend::upsample_nearest1d(const TensorArg& x, const TensorArg& dst) {
  kern::nearest(enter("upsample_nearest1d"), kern::plane3(x), kern::plane3(dst), x, dst);
}

void GpuBackend::upsample_nearest2d(const TensorArg& x, const TensorArg& dst) {
  kern::nearest(enter("upsample_nearest2d"), kern::plane4(x), kern::plane4(dst), x, dst);
}

void GpuBackend::upsample_bilinear2d(const TensorArg& x, const TensorArg& dst, bool align_corners) {
  const kern::LaunchCtx ctx = enter("upsample_bilinear2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  cpu::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        kern::launch_planes(ctx, xp, yp, true, kern::Bilinear<T>{x.ptr<T>(), dst.ptr<T>(), xp.h, xp.w, align_corners});
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS
