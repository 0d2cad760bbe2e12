// Pooling and resampling on the GPU: avg_pool2d, max_pool2d, upsample_nearest1d / 2d,
// upsample_bilinear2d. One thread per output element of [N, C, H, W] (upsample_nearest1d is the
// 2-d kernel with a height of 1, as on the CPU); input and output are read and written through
// their strides, so any layout works without a copy. Two row kernels take vector-aligned rows
// instead: nearest upsampling (vector stores, one thread for every output row of a source row;
// Note [GPU nearest rows]) and max_pool2d with unpadded windows that tile the row (vector loads
// and stores, V outputs per thread; Note [GPU max_pool rows]). The per-element math is the CPU's
// (src/backend/conv_math.h), in the same order, so pooling agrees with the CPU exactly; bilinear
// may differ in the last bit where the GPU compiler fuses a multiply and an add.
#include <algorithm>
#include <cstdint>

#include "backend/conv_geom.h"
#include "backend/conv_math.h"
#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS {

namespace kern {

namespace {

using conv::plane3;
using conv::plane4;
using conv::Plane4;

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
// capped grid left half the threads a second, serial window; the resampling kernels keep the
// capped grid, which is faster for them.
template <class F>
void launch_planes(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, bool extra_fits, const F& f,
                   bool window = false) {
  const int64_t total = y.n * y.c * y.h * y.w;
  if (total == 0) return;
  const unsigned grid = window ? flat_grid(total) : grid_for(ctx, total);
  if (extra_fits && total <= INT32_MAX && offsets_fit(x) && offsets_fit(y)) {
    gpu::launch<plane_kernel<uint32_t, F>>(ctx, grid, kBlock, 0, f, geo<uint32_t>(x, y), static_cast<uint32_t>(total));
  } else {
    gpu::launch<plane_kernel<int64_t, F>>(ctx, grid, kBlock, 0, f, geo<int64_t>(x, y), total);
  }
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
  // The running winner of a window, offered the elements in the CPU's order: the element and its
  // compute-type value, taken over by a larger value or a NaN (convmath::max_pool_takes).
  struct Best {
    T v;
    compute_t<T> a;
    Best() = default;
    __device__ explicit Best(T first) : v(first), a(convert<compute_t<T>>(first)) {}
    __device__ void offer(T c) {
      const compute_t<T> ca = convert<compute_t<T>>(c);
      if (convmath::max_pool_takes(ca, a)) {
        v = c;
        a = ca;
      }
    }
  };
  template <int K, class Index>
  __device__ T whole_window(const Geo<Index>& g, Index base) const {
    T v[K * K];
#pragma unroll
    for (int i = 0; i < K; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j)
        v[i * K + j] = x[base + static_cast<Index>(i) * g.xsh + static_cast<Index>(j) * g.xsw];
    Best best(v[0]);
#pragma unroll
    for (int t = 1; t < K * K; ++t) best.offer(v[t]);
    return best.v;
  }
  template <class Index>
  __device__ void operator()(const Geo<Index>& g, Index xo, Index yo, Index oh, Index ow) const {
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
    Best best(x[base]);
    for (int64_t ih = hs; ih < he; ++ih) {
      const T* row = x + xo + static_cast<Index>(ih) * g.xsh;
      for (int64_t iw = ws; iw < we; ++iw) best.offer(row[static_cast<Index>(iw) * g.xsw]);
    }
    y[yo] = best.v;
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

// Note [GPU nearest rows]
// upsample_nearest1d / 2d when dst has rows of unit stride whose starts are all aligned for
// V-element vector stores (the host checks dst's base pointer, width and other strides; src may
// have any strides). A thread makes V consecutive outputs of one output row (16 bytes, or 8 where
// dst allows only that), one item per thread on an uncapped grid (Note [GPU flat grid]). Its V
// source columns take one division and then an exact running remainder: with in = q * out + m,
// floor((ow + 1) * in / out) is floor(ow * in / out) + q, plus one when the remainder passes out.
// When out_h >= in_h, a thread works for one source row ih and stores the same registers into
// every output row whose source it is, oh in [ceil(ih * out_h / in_h), ceil((ih + 1) * out_h /
// in_h)); otherwise it makes one output row. Every output's source is convmath::nearest_src's
// floor(dst * in / out), so the bytes are the CPU's (whose clamp to in - 1 never acts for dst <
// out). Every division is by a launch constant, done as a multiply-high and a shift (Divider).

// n / d for 1 <= d <= INT32_MAX: in 32 bits as (umulhi(n, m) + n) >> s (n < 2^31, so the sum
// does not wrap), with s = ceil(log2 d) and m = floor(2^32 * (2^s - d) / d) + 1 (round-up
// division by an invariant integer, Granlund and Montgomery, 1994); in 64 bits a plain division.
template <class Index>
struct Divider;

template <>
struct Divider<uint32_t> {
  uint32_t d, m, s;
  explicit Divider(int64_t divisor) : d(static_cast<uint32_t>(divisor)), s(0) {
    while ((int64_t{1} << s) < divisor) ++s;
    m = static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << s) - d) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

template <>
struct Divider<int64_t> {
  int64_t d;
  explicit Divider(int64_t divisor) : d(divisor) {}
  __device__ __forceinline__ int64_t div(int64_t n) const { return n / d; }
};

// A row kernel launch: `units` row units per [n, c] plane, each a source row (grouped: out_h >=
// in_h) or an output row, times `vecs` V-element vectors per output row; units also divides the
// row math (by in_h when grouped, by out_h otherwise).
template <class Index>
struct NearestRows {
  Divider<Index> vecs, units, chans;
  Divider<Index> cols;  // out_w
  Index in_h, out_h, in_w;
  Index row_q, row_m;  // out_h / in_h and out_h % in_h (grouped only)
  Index col_q, col_m;  // in_w / out_w and in_w % out_w
  Index xsn, xsc, xsh, xsw, ysn, ysc, ysh;
  bool grouped;
};

template <int V, class U, class Index>
__global__ void __launch_bounds__(kBlock) nearest_rows_kernel(const U* x, U* y, NearestRows<Index> g, Index total) {
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const Index t = g.vecs.div(i), ow = (i - t * g.vecs.d) * V;
    const Index p = g.units.div(t), r = t - p * g.units.d;
    const Index n = g.chans.div(p), c = p - n * g.chans.d;
    Index ih = r, oh = r, oh_end = r + 1;
    if (g.grouped) {
      const Index a = r * g.out_h;
      oh = g.units.div(a + g.in_h - 1);  // ceil(a / in_h)
      const Index b = oh * g.in_h - a;   // in [0, in_h)
      oh_end = oh + g.row_q + (g.row_m > b ? Index{1} : Index{0});
    } else {
      ih = g.units.div(r * g.in_h);
    }
    const U* row = x + (n * g.xsn + c * g.xsc + ih * g.xsh);
    Index iw = g.cols.div(ow * g.in_w);
    Index rem = ow * g.in_w - iw * g.cols.d;
    Vec<U, V> v;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      v.v[j] = row[iw * g.xsw];
      rem += g.col_m;
      iw += g.col_q;
      if (rem >= g.cols.d) {
        rem -= g.cols.d;
        ++iw;
      }
    }
    U* out = y + (n * g.ysn + c * g.ysc + ow);
    for (; oh < oh_end; ++oh) *reinterpret_cast<Vec<U, V>*>(out + oh * g.ysh) = v;
  }
}

// Whether every row of an operand starts aligned for V-element vectors: unit stride along W, the
// strides of the other dims (those longer than 1) multiples of V, and the base pointer aligned.
template <class U>
bool row_starts_aligned(const Plane4& t, const U* base, int64_t v) {
  auto ok = [v](int64_t size, int64_t stride) { return size == 1 || stride % v == 0; };
  return t.sw == 1 && ok(t.n, t.sn) && ok(t.c, t.sc) && ok(t.h, t.sh) &&
         aligned_to(base, static_cast<size_t>(v) * sizeof(U));
}

// Whether every dst row can be stored as V-element vectors: aligned row starts and W a multiple of V.
template <class U>
bool rows_vectorisable(const Plane4& y, const U* base, int64_t v) {
  return y.w % v == 0 && row_starts_aligned(y, base, v);
}

template <int V, class U>
void launch_rows(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, const U* xp, U* yp, bool fits) {
  const bool grouped = y.h >= x.h;
  const int64_t units = grouped ? x.h : y.h;
  const int64_t total = y.n * y.c * units * (y.w / V);
  if (total == 0) return;
  auto make = [&]<class Index>() {
    auto I = [](int64_t v) { return static_cast<Index>(v); };
    return NearestRows<Index>{.vecs = Divider<Index>(y.w / V),
                              .units = Divider<Index>(units),
                              .chans = Divider<Index>(y.c),
                              .cols = Divider<Index>(y.w),
                              .in_h = I(x.h),
                              .out_h = I(y.h),
                              .in_w = I(x.w),
                              .row_q = I(grouped ? y.h / x.h : 0),
                              .row_m = I(grouped ? y.h % x.h : 0),
                              .col_q = I(x.w / y.w),
                              .col_m = I(x.w % y.w),
                              .xsn = I(x.sn),
                              .xsc = I(x.sc),
                              .xsh = I(x.sh),
                              .xsw = I(x.sw),
                              .ysn = I(y.sn),
                              .ysc = I(y.sc),
                              .ysh = I(y.sh),
                              .grouped = grouped};
  };
  // Every dividend is below 2^31 on the 32-bit path: i < total, ow * in_w < out_w * in_w, and
  // r * out_h + in_h - 1 < in_h * out_h (grouped: r < in_h <= out_h) or r * in_h < out_h * in_h.
  if (fits && y.n * y.c * y.h * y.w <= INT32_MAX && offsets_fit(x) && offsets_fit(y)) {
    gpu::launch<nearest_rows_kernel<V, U, uint32_t>>(
        ctx, flat_grid(total), kBlock, 0, xp, yp, make.template operator()<uint32_t>(), static_cast<uint32_t>(total));
  } else {
    gpu::launch<nearest_rows_kernel<V, U, int64_t>>(ctx, flat_grid(total), kBlock, 0, xp, yp,
                                                    make.template operator()<int64_t>(), total);
  }
}

void nearest(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, const TensorArg& src, const TensorArg& dst) {
  // dst * in must not wrap in 32 bits.
  const bool fits = y.h * x.h <= INT32_MAX && y.w * x.w <= INT32_MAX;
  auto run = [&]<class U>() {
    const U* xp = src.ptr<U>();
    U* yp = dst.ptr<U>();
    constexpr int kWide = 16 / sizeof(U), kNarrow = 8 / sizeof(U);
    if (rows_vectorisable(y, yp, kWide)) return launch_rows<kWide>(ctx, x, y, xp, yp, fits);
    if constexpr (kNarrow > 1) {
      if (rows_vectorisable(y, yp, kNarrow)) return launch_rows<kNarrow>(ctx, x, y, xp, yp, fits);
    }
    launch_planes(ctx, x, y, fits, Nearest<U>{xp, yp, x.h, x.w});
  };
  // A copy of bits: instantiated per element size.
  by_size(dtype_size(src.dtype), run);
}

// Note [GPU max_pool rows]
// max_pool2d with padding 0 whose windows tile the row (stride[1] == kernel[1], 2 or 3; kernel[0]
// and stride[0] any): a thread makes V consecutive outputs of one output row, whose windows read
// V * kw consecutive inputs of each window row as kw aligned V-element vector loads, and stores
// them as one vector. Windows 2 wide take V = 8 bytes of output where x's rows are aligned to 16
// bytes, so that each window row is one 16-byte load (Wide); otherwise V is the widest of 16, 8 or
// 4 bytes that out_w and both operands' alignment allow, 2 to 8 elements (16 hold too many
// registers on wave64 targets). The host checks: unit stride along W for x and dst; both base
// pointers aligned to V elements (x to 2V for Wide) and their N / C / H strides (of the dims longer
// than 1) multiples of that; out_w a multiple of V. Windows need not cover the whole input. When
// kh == kw every window row is loaded before the first comparison; each window is offered to
// MaxPool<T>::Best in row-major order, so NaNs and ties give the CPU's bytes. The index split is
// three multiply-highs per thread (Divider), one item per thread on an uncapped grid.
template <class Index>
struct PoolRows {
  Divider<Index> vecs, rows, chans;  // out_w / V, out_h, C
  Index kh, sh;
  Index xsn, xsc, xsh, ysn, ysc, ysh;
};

// Offers one window row of V windows, held as KW V-element vectors (window o's elements are
// o * KW .. o * KW + KW - 1), to their running winners; the first row starts them.
template <int V, int KW, class T>
__device__ __forceinline__ void offer_row(typename MaxPool<T>::Best (&best)[V], const Vec<T, V> (&w)[KW], bool first) {
  using Best = typename MaxPool<T>::Best;
#pragma unroll
  for (int o = 0; o < V; ++o)
#pragma unroll
    for (int j = 0; j < KW; ++j) {
      const T e = w[(o * KW + j) / V].v[(o * KW + j) % V];
      if (first && j == 0) {
        best[o] = Best(e);
      } else {
        best[o].offer(e);
      }
    }
}

// One window row of V windows as KW V-element vectors from r; Wide: as one vector of V * KW
// elements (16 bytes, r aligned to it).
template <int V, int KW, bool Wide, class T>
__device__ __forceinline__ void load_row(const Vec<T, V>* r, Vec<T, V> (&w)[KW]) {
  if constexpr (Wide) {
    static_assert(V * KW * sizeof(T) == 16);
    const Vec<T, V* KW> all = *reinterpret_cast<const Vec<T, V * KW>*>(r);
#pragma unroll
    for (int q = 0; q < KW; ++q)
#pragma unroll
      for (int e = 0; e < V; ++e) w[q].v[e] = all.v[q * V + e];
  } else {
#pragma unroll
    for (int q = 0; q < KW; ++q) w[q] = r[q];
  }
}

template <int V, int KW, bool Wide, class T, class Index>
__global__ void __launch_bounds__(kBlock) max_pool_rows_kernel(const T* x, T* y, PoolRows<Index> g, Index total) {
  using W = Vec<T, V>;
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const Index t = g.vecs.div(i), ow = (i - t * g.vecs.d) * V;
    const Index p = g.rows.div(t), oh = t - p * g.rows.d;
    const Index n = g.chans.div(p), c = p - n * g.chans.d;
    // oh * sh <= in_h - kh: the product fits wherever the offsets do.
    const W* row = reinterpret_cast<const W*>(x + (n * g.xsn + c * g.xsc + oh * g.sh * g.xsh + ow * KW));
    const Index row_step = g.xsh / V;  // in vectors: xsh is a multiple of V (or in_h is 1 and unused)
    typename MaxPool<T>::Best best[V];
    if (g.kh == KW) {
      W w[KW][KW];
#pragma unroll
      for (int r = 0; r < KW; ++r) load_row<V, KW, Wide>(row + static_cast<Index>(r) * row_step, w[r]);
#pragma unroll
      for (int r = 0; r < KW; ++r) offer_row<V, KW, T>(best, w[r], r == 0);
    } else {
      W w[KW];
      load_row<V, KW, Wide>(row, w);
      offer_row<V, KW, T>(best, w, true);
      for (Index r = 1; r < g.kh; ++r) {
        row += row_step;
        load_row<V, KW, Wide>(row, w);
        offer_row<V, KW, T>(best, w, false);
      }
    }
    W out;
#pragma unroll
    for (int o = 0; o < V; ++o) out.v[o] = best[o].v;
    *reinterpret_cast<W*>(y + (n * g.ysn + c * g.ysc + oh * g.ysh + ow)) = out;
  }
}

template <int V, int KW, bool Wide, class T>
void launch_max_pool_rows(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, const T* xp, T* yp,
                          const Pool2dParams& p) {
  const int64_t total = y.n * y.c * y.h * (y.w / V);
  if (total == 0) return;
  auto make = [&]<class Index>() {
    auto I = [](int64_t v) { return static_cast<Index>(v); };
    return PoolRows<Index>{.vecs = Divider<Index>(y.w / V),
                           .rows = Divider<Index>(y.h),
                           .chans = Divider<Index>(y.c),
                           .kh = I(p.kernel[0]),
                           .sh = I(p.stride[0]),
                           .xsn = I(x.sn),
                           .xsc = I(x.sc),
                           .xsh = I(x.sh),
                           .ysn = I(y.sn),
                           .ysc = I(y.sc),
                           .ysh = I(y.sh)};
  };
  // On the 32-bit path every dividend is below total <= INT32_MAX and every offset at most x's or
  // dst's largest one.
  if (y.n * y.c * y.h * y.w <= INT32_MAX && offsets_fit(x) && offsets_fit(y)) {
    gpu::launch<max_pool_rows_kernel<V, KW, Wide, T, uint32_t>>(
        ctx, flat_grid(total), kBlock, 0, xp, yp, make.template operator()<uint32_t>(), static_cast<uint32_t>(total));
  } else {
    gpu::launch<max_pool_rows_kernel<V, KW, Wide, T, int64_t>>(ctx, flat_grid(total), kBlock, 0, xp, yp,
                                                               make.template operator()<int64_t>(), total);
  }
}

// Runs max_pool2d through the row kernel when its preconditions hold (Note [GPU max_pool rows]);
// false leaves the work to plane_kernel.
template <class T>
bool max_pool_rows(const LaunchCtx& ctx, const Plane4& x, const Plane4& y, const T* xp, T* yp, const Pool2dParams& p) {
  const int64_t kw = p.kernel[1];
  if (p.padding[0] != 0 || p.padding[1] != 0 || p.stride[1] != kw || (kw != 2 && kw != 3)) return false;
  auto fits = [&](int64_t v) { return rows_vectorisable(y, yp, v) && row_starts_aligned(x, xp, v); };
  auto launch = [&]<int V>() {
    if (kw == 3) {
      launch_max_pool_rows<V, 3, false>(ctx, x, y, xp, yp, p);
      return true;
    }
    // 2-wide windows with 16 bytes of output meet the Wide path's conditions too, which took them.
    if constexpr (V * sizeof(T) < 16 || sizeof(T) > 4) {
      launch_max_pool_rows<V, 2, false>(ctx, x, y, xp, yp, p);
      return true;
    }
    return false;
  };
  // Windows 2 wide: 8 bytes of output per thread, whose window rows are one 16-byte load each.
  if constexpr (sizeof(T) <= 4) {
    constexpr int V = 8 / static_cast<int>(sizeof(T));
    if (kw == 2 && rows_vectorisable(y, yp, V) && row_starts_aligned(x, xp, 2 * V)) {
      launch_max_pool_rows<V, 2, true>(ctx, x, y, xp, yp, p);
      return true;
    }
  }
  // `Bytes` of output per thread, 2 to 8 elements.
  auto attempt = [&]<int Bytes>() {
    constexpr int V = Bytes / static_cast<int>(sizeof(T));
    if constexpr (V >= 2 && V <= 8) {
      return fits(V) && launch.template operator()<V>();
    } else {
      return false;
    }
  };
  return attempt.template operator()<16>() || attempt.template operator()<8>() || attempt.template operator()<4>();
}

}  // namespace

}  // namespace kern

void kern::avg_pool2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  const kern::LaunchCtx ctx = base.with_op("avg_pool2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  wick::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        kern::launch_planes(ctx, xp, yp, true,
                            kern::AvgPool<T>{x.ptr<T>(), dst.ptr<T>(), kern::window(xp, p), p.count_include_pad});
      },
      ctx.op);
}

void kern::max_pool2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  const kern::LaunchCtx ctx = base.with_op("max_pool2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  wick::dispatch(
      x.dtype,
      [&]<class T>() {
        if (kern::max_pool_rows(ctx, xp, yp, x.ptr<T>(), dst.ptr<T>(), p)) return;
        kern::launch_planes(ctx, xp, yp, true, kern::MaxPool<T>{x.ptr<T>(), dst.ptr<T>(), kern::window(xp, p)}, true);
      },
      ctx.op);
}

void kern::upsample_nearest1d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& dst) {
  kern::nearest(base.with_op("upsample_nearest1d"), kern::plane3(x), kern::plane3(dst), x, dst);
}

void kern::upsample_nearest2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& dst) {
  kern::nearest(base.with_op("upsample_nearest2d"), kern::plane4(x), kern::plane4(dst), x, dst);
}

void kern::upsample_bilinear2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& dst,
                               bool align_corners) {
  const kern::LaunchCtx ctx = base.with_op("upsample_bilinear2d");
  const kern::Plane4 xp = kern::plane4(x), yp = kern::plane4(dst);
  wick::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        kern::launch_planes(ctx, xp, yp, true, kern::Bilinear<T>{x.ptr<T>(), dst.ptr<T>(), xp.h, xp.w, align_corners});
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS
