// softmax, log_softmax, rms_norm, layer_norm on the GPU: one kernel template over the last dim,
// included by softmax.cu and norm.cu.
//
// Note [GPU row normalisation]
// One thread group per row (Note [GPU thread groups]), any src / dst strides: the kept dims are
// collapsed over (src, dst) and each row is walked with its own element stride.
//   cached   rows of up to kCached * 1024 elements: each thread loads its kCached elements
//            (i = lane + k * G) into registers once, the group reduces (max then sum of exp for
//            softmax; sum of squares for rms_norm; sum, then sum of squared deviations for
//            layer_norm), and the results are written from the registers: one read, one write.
//   streamed longer rows, one block of 1024 threads per row, re-reading the row from global
//            memory: softmax keeps an online (max, scaled sum) pair per thread (one read, then a
//            read and a write), rms_norm two passes, layer_norm three (mean, squared deviations,
//            write).
// The math and its order are the CPU's (src/cpu/norm.cpp): compute type f32 for the 16/8-bit
// floats and f32, f64 for f64, one rounding on store; a NaN anywhere in a softmax row, a +inf, or
// a row of only -inf gives a row of NaN, as on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/reduce_math.h"
#include "gpu/kernels/group.cuh"
#include "gpu/kernels/index.cuh"

namespace wick::WICK_GPU_NS::kern {

inline constexpr int kCached = 8;

enum class RowOp { Softmax, RmsNorm, LayerNorm };

template <class T, class Index>
struct RowArgsN {
  Meta<Index, 2> outer;  // src, dst offsets of each row
  const T* src;
  T* dst;
  Index rows, n, ss, ds;  // ss, ds: element strides along the row
  unsigned group;
};

template <class T>
struct NormParams {
  const T* w = nullptr;  // null: none
  const T* b = nullptr;
  int64_t ws = 0, bs = 0;
  double eps = 0;
  bool log = false;
};

template <class C>
struct SumMerge {
  __device__ static C merge(C a, C b) { return a + b; }
};
template <class C>
struct MaxMerge {
  __device__ static C merge(C a, C b) { return minmax_step<true>(a, b); }
};

// Online softmax state: the running max m and the sum of exp(x - m) (see the Note for NaN / inf).
template <class C>
struct SoftmaxState {
  C m, s;
  __device__ SoftmaxState shuffled(int mask) const { return {shfl_bits(m, mask), shfl_bits(s, mask)}; }
  __device__ static SoftmaxState merge(SoftmaxState a, SoftmaxState b) {
    const C m = minmax_step<true>(a.m, b.m);
    if (m == -std::numeric_limits<C>::infinity()) return {m, C(0)};  // nothing, or only -inf, so far
    return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
  }
};

template <class C, class T>
__device__ __forceinline__ C param(const T* p, int64_t stride, int64_t i) {
  return static_cast<C>(p[i * stride]);
}

// y (the normalised value of element i) times the weight, plus the bias, as the CPU orders it.
template <class C, class T>
__device__ __forceinline__ C affine(C y, const NormParams<T>& p, int64_t i) {
  if (p.w) y *= param<C>(p.w, p.ws, i);
  if (p.b) y += param<C>(p.b, p.bs, i);
  return y;
}

template <RowOp Kind, class T, class Index>
__device__ __forceinline__ void row_cached(const T* x, T* y, Index n, Index ss, Index ds, unsigned lane, unsigned group,
                                           const NormParams<T>& p, compute_t<T>* smem) {
  using C = compute_t<T>;
  C v[kCached];
#pragma unroll
  for (int k = 0; k < kCached; ++k) {
    const Index i = lane + k * group;
    v[k] = i < n ? static_cast<C>(x[i * ss]) : C(0);
  }
  auto valid = [&](int k) { return lane + k * group < n; };
  if constexpr (Kind == RowOp::Softmax) {
    C m = minmax_identity<true, C>();
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (valid(k)) m = minmax_step<true>(m, v[k]);
    m = group_allreduce<MaxMerge<C>>(m, group, smem);
    C s = 0;
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (valid(k)) {
        v[k] -= m;
        const C e = std::exp(v[k]);
        s += e;
        if (!p.log) v[k] = e;
      }
    s = group_allreduce<SumMerge<C>>(s, group, smem);
    const C lse = p.log ? std::log(s) : C(0);
#pragma unroll
    for (int k = 0; k < kCached; ++k) v[k] = p.log ? v[k] - lse : v[k] / s;
  } else if constexpr (Kind == RowOp::RmsNorm) {
    C q = 0;
#pragma unroll
    for (int k = 0; k < kCached; ++k) q += v[k] * v[k];  // padding is 0
    q = group_allreduce<SumMerge<C>>(q, group, smem);
    const C scale = rms_scale(q, static_cast<int64_t>(n), p.eps);
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (valid(k)) v[k] = affine(v[k] * scale, p, static_cast<int64_t>(lane + k * group));
  } else {
    C s = 0;
#pragma unroll
    for (int k = 0; k < kCached; ++k) s += v[k];
    const C mean = group_allreduce<SumMerge<C>>(s, group, smem) / static_cast<C>(n);
    C q = 0;
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (valid(k)) {
        v[k] -= mean;
        q += v[k] * v[k];
      }
    q = group_allreduce<SumMerge<C>>(q, group, smem);
    const C inv = inv_std(q / static_cast<C>(n), p.eps);
#pragma unroll
    for (int k = 0; k < kCached; ++k)
      if (valid(k)) v[k] = affine(v[k] * inv, p, static_cast<int64_t>(lane + k * group));
  }
#pragma unroll
  for (int k = 0; k < kCached; ++k)
    if (valid(k)) y[(lane + k * group) * ds] = convert<T>(v[k]);
}

template <RowOp Kind, class T, class Index>
__device__ __forceinline__ void row_streamed(const T* x, T* y, Index n, Index ss, Index ds, unsigned lane,
                                             unsigned group, const NormParams<T>& p, compute_t<T>* smem) {
  using C = compute_t<T>;
  auto at = [&](Index i) { return static_cast<C>(x[i * ss]); };
  if constexpr (Kind == RowOp::Softmax) {
    using S = SoftmaxState<C>;
    __shared__ S ssmem[kMaxWarpsPerBlock];
    S st{minmax_identity<true, C>(), C(0)};
    for (Index i = lane; i < n; i += group) st = S::merge(st, S{at(i), C(1)});
    st = group_allreduce<S>(st, group, ssmem);
    const C lse = std::log(st.s);
    for (Index i = lane; i < n; i += group) {
      const C d = at(i) - st.m;
      y[i * ds] = convert<T>(p.log ? d - lse : std::exp(d) / st.s);
    }
  } else if constexpr (Kind == RowOp::RmsNorm) {
    C q = 0;
    for (Index i = lane; i < n; i += group) {
      const C v = at(i);
      q += v * v;
    }
    const C scale = rms_scale(group_allreduce<SumMerge<C>>(q, group, smem), static_cast<int64_t>(n), p.eps);
    for (Index i = lane; i < n; i += group) y[i * ds] = convert<T>(affine(at(i) * scale, p, static_cast<int64_t>(i)));
  } else {
    C s = 0;
    for (Index i = lane; i < n; i += group) s += at(i);
    const C mean = group_allreduce<SumMerge<C>>(s, group, smem) / static_cast<C>(n);
    C q = 0;
    for (Index i = lane; i < n; i += group) {
      const C d = at(i) - mean;
      q += d * d;
    }
    const C inv = inv_std(group_allreduce<SumMerge<C>>(q, group, smem) / static_cast<C>(n), p.eps);
    for (Index i = lane; i < n; i += group)
      y[i * ds] = convert<T>(affine((at(i) - mean) * inv, p, static_cast<int64_t>(i)));
  }
}

template <RowOp Kind, bool Cached, class T, class Index>
__global__ void __launch_bounds__(kMaxGroupBlock) lastdim_kernel(RowArgsN<T, Index> a, NormParams<T> p) {
  __shared__ compute_t<T> smem[kMaxWarpsPerBlock];
  const unsigned per_block = blockDim.x / a.group, lane = threadIdx.x % a.group;
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < a.rows;
       base += static_cast<Index>(gridDim.x) * per_block) {
    const Index row = base + threadIdx.x / a.group;
    const bool live = row < a.rows;
    Index off[2] = {0, 0};
    if (live) offsets_of(a.outer, row, off);
    // A group past the last row runs on an empty row: it must still join the group reductions.
    const Index n = live ? a.n : Index(0);
    if constexpr (Cached) {
      row_cached<Kind>(a.src + off[0], a.dst + off[1], n, a.ss, a.ds, lane, a.group, p, smem);
    } else {
      row_streamed<Kind>(a.src + off[0], a.dst + off[1], n, a.ss, a.ds, lane, a.group, p, smem);
    }
  }
}

// Runs Kind over every last-dim row of src into dst (same shape).
template <RowOp Kind, class T>
void run_lastdim(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst, const NormParams<T>& p) {
  if (src.numel() == 0) return;
  const size_t r = src.layout.rank();
  const int64_t n = src.layout.dim(r - 1), ss = src.layout.stride(r - 1), ds = dst.layout.stride(r - 1);
  Shape oshape;
  Strides osrc, odst;
  for (size_t d = 0; d + 1 < r; ++d) {
    oshape.push_back(src.layout.dim(d));
    osrc.push_back(src.layout.stride(d));
    odst.push_back(dst.layout.stride(d));
  }
  const Plan<2> plan = make_plan<2>(oshape, {&osrc, &odst});
  const bool cached = n <= int64_t{kCached} * kMaxGroupBlock;
  const unsigned group = cached ? pow2_at_least((n + kCached - 1) / kCached, kMaxGroupBlock) : kMaxGroupBlock;
  const unsigned block = std::max<unsigned>(group, kBlock), per_block = block / group;
  // 32-bit math also needs the in-row offsets (and the padded thread indices) to fit.
  const int64_t limit = INT32_MAX / 2;
  const int64_t so = max_offset(plan, 0), dso = max_offset(plan, 1);
  const bool extra_fits = ss >= 0 && ds >= 0 && so >= 0 && dso >= 0 && n + int64_t{kCached} * kMaxGroupBlock < limit &&
                          (n - 1) * ss + so < limit && (n - 1) * ds + dso < limit;
  for_each_launch<2>(plan, extra_fits, [&]<class Index>(int first, const std::array<int64_t, 2>& off, int64_t) {
    const int64_t rows = numel_from(plan, first);
    const RowArgsN<T, Index> a{make_meta<Index, 2>(plan, first),
                               src.ptr<T>() + off[0],
                               dst.ptr<T>() + off[1],
                               static_cast<Index>(rows),
                               static_cast<Index>(n),
                               static_cast<Index>(ss),
                               static_cast<Index>(ds),
                               group};
    const int64_t blocks = (rows + per_block - 1) / per_block;
    const unsigned grid = capped_grid(ctx, blocks);
    const auto stream = gpu::native_stream(ctx.stream);
    if (cached) {
      lastdim_kernel<Kind, true, T, Index><<<grid, block, 0, stream>>>(a, p);
    } else {
      lastdim_kernel<Kind, false, T, Index><<<grid, block, 0, stream>>>(a, p);
    }
    gpu::check_launch(ctx.op, ctx.device);
  });
}

}  // namespace wick::WICK_GPU_NS::kern
