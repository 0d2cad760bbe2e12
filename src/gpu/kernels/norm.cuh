// softmax, log_softmax, rms_norm, layer_norm on the GPU: one kernel template over the last dim,
// included by softmax.cu and norm.cu.
//
// Note [GPU row normalisation]
// One thread group per row (Note [GPU thread groups]), any src / dst strides: the kept dims are
// collapsed over (src, dst) and each row is walked with its own element stride.
//   held     the row is read once onto the chip, reduced there and written from there: each thread
//            holds kHeldVecs vectors in registers (16-byte vectors where the row has unit stride
//            and aligned starts: Vector; else elements one at a time, any stride: Scalar). Rows
//            too long for 512 threads' registers also keep batches in dynamic shared memory
//            (HeldRow), up to the device's opt-in size. layer_norm's exact two-pass variance then
//            costs one more group reduction and no extra read.
//   streamed longer rows, one block of 1024 threads per row, re-read from global memory: softmax
//            with an online (max, scaled sum) pair, rms_norm in two passes, layer_norm in three.
// Weight and bias are read as vectors beside the row where unit-stride and aligned (affine_vec).
//
// Note [GPU light rows]
// Rows of up to kLightBlock 16-byte vectors (4096 bf16, 2048 f32) read as vectors, with weights
// that are vectors too (or none), take a lighter kernel: one vector per thread (HeldRow, R = 1),
// blocks of 512 threads bounded to 32 registers so four fill a multiprocessor, the weight / bias
// vectors loaded beside the row before its reduction (HeldAffine). The held kernel keeps 32 f32 a
// thread at 64 registers, with half the threads resident. Group slots are masks and shifts
// (group_slot) and warps merge by butterfly (group_allreduce): with run-time divisions and a
// serial merge the light kernel ran twice the instructions. With one vector per thread the
// per-row cost dominates a row that reduces twice across warps, so softmax and layer_norm take
// the light kernel only for rows of one warp or less.
//
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

enum class RowOp { Softmax, RmsNorm, LayerNorm };

template <class T, class Index>
struct RowArgsN {
  Meta<Index, 2> outer;  // src, dst offsets of each row
  const T* src;
  T* dst;
  Index rows, n, ss, ds;    // ss, ds: element strides along the row
  unsigned group, batches;  // batches: of HeldRow in shared memory
};

template <class T>
struct NormParams {
  const T* w = nullptr;  // null: none
  const T* b = nullptr;
  int64_t ws = 0, bs = 0;
  double eps = 0;
  bool log = false;
  bool wvec = false;  // w and b (where given) have unit stride and 16-byte aligned starts
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

// Elements of a row one thread holds in registers: 32 f32 as vectors, 16 one by one (each element
// then also keeps its own address), half as many f64 (more would spill under 64 registers).
template <class T>
inline constexpr int kHeld = sizeof(compute_t<T>) == 8 ? 16 : 32;
template <class T, int V>
inline constexpr int kHeldVecs = (V == 1 ? kHeld<T> / 2 : kHeld<T> / V) / static_cast<int>(sizeof(compute_t<T>) / 4);

// A row held on chip by one thread group (see the Note): thread `lane` of G holds the vectors
// j = lane + (b * R + k) * G (k < R) of V elements each; batches b < `batches` live in shared
// memory (element e of (b, k) at ext[((b * R + k) * V + e) * G]), batch b == `batches` in
// registers. V > 1: 16-byte loads and stores (the host checked unit strides and alignment).
template <int V, class T, class Index, int Held = kHeldVecs<T, V>>
struct HeldRow {
  using C = compute_t<T>;
  static constexpr int R = Held;
  C v[R][V];
  C* ext;
  Index nv;  // vectors in the row (0 for a group past the last row)
  unsigned lane, group, batches;

  __device__ Index vec(unsigned b, int k) const { return lane + (static_cast<Index>(b) * R + k) * group; }
  __device__ C& slot(unsigned b, int k, int e) const { return ext[((b * R + k) * V + e) * group]; }

  // Batch b's vectors into v, all loads in flight together.
  __device__ void fetch(const T* x, Index ss, unsigned b) {
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const Index j = vec(b, k);
      if (j >= nv) continue;
      if constexpr (V == 1) {
        v[k][0] = static_cast<C>(x[j * ss]);
      } else {
        const Vec<T, V> t = reinterpret_cast<const Vec<T, V>*>(x)[j];
#pragma unroll
        for (int e = 0; e < V; ++e) v[k][e] = static_cast<C>(t.v[e]);
      }
    }
  }
  // The shared batches go through v first, one batch of R loads in flight at a time.
  __device__ void load(const T* x, Index ss) {
    for (unsigned b = 0; b < batches; ++b) {
      fetch(x, ss, b);
#pragma unroll
      for (int k = 0; k < R; ++k)
        if (vec(b, k) < nv)
#pragma unroll
          for (int e = 0; e < V; ++e) slot(b, k, e) = v[k][e];
    }
    fetch(x, ss, batches);
  }
  // f(value&, element index) for every element held.
  template <class F>
  __device__ void each(F&& f) {
    for (unsigned b = 0; b < batches; ++b)
#pragma unroll
      for (int k = 0; k < R; ++k) {
        const Index j = vec(b, k);
        if (j < nv)
#pragma unroll
          for (int e = 0; e < V; ++e) f(slot(b, k, e), j * V + e);
      }
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const Index j = vec(batches, k);
      if (j < nv)
#pragma unroll
        for (int e = 0; e < V; ++e) f(v[k][e], j * V + e);
    }
  }
  // Stores every vector held, after fix(c, j) changed its values c in place (j: the vector's
  // index in the row, its first element j * V).
  template <class F>
  __device__ void store_vecs(T* y, Index ds, F&& fix) {
    auto put = [&](Index j, C(&c)[V]) {
      fix(c, j);
      if constexpr (V == 1) {
        y[j * ds] = convert<T>(c[0]);
      } else {
        reinterpret_cast<Vec<T, V>*>(y)[j] = vec_of<T>(c);
      }
    };
    for (unsigned b = 0; b < batches; ++b)
#pragma unroll
      for (int k = 0; k < R; ++k) {
        const Index j = vec(b, k);
        if (j >= nv) continue;
        C c[V];
#pragma unroll
        for (int e = 0; e < V; ++e) c[e] = slot(b, k, e);
        put(j, c);
      }
#pragma unroll
    for (int k = 0; k < R; ++k)
      if (vec(batches, k) < nv) put(vec(batches, k), v[k]);
  }
  // Stores out(value, element index) for every element held.
  template <class F>
  __device__ void store(T* y, Index ds, F&& out) {
    store_vecs(y, ds, [&](C(&c)[V], Index j) {
#pragma unroll
      for (int e = 0; e < V; ++e) c[e] = out(c[e], j * V + e);
    });
  }
};

// c, vector j of a row (elements j * V on), times the weight, plus the bias, as affine() does
// element by element; the weight and bias as vectors of V where they allow (p.wvec).
template <int V, class C, class T, class Index>
__device__ __forceinline__ void affine_vec(C (&c)[V], const NormParams<T>& p, Index j) {
  if constexpr (V > 1) {
    if (p.wvec) {
      if (p.w) {
        const Vec<T, V> w = reinterpret_cast<const Vec<T, V>*>(p.w)[j];
#pragma unroll
        for (int e = 0; e < V; ++e) c[e] *= static_cast<C>(w.v[e]);
      }
      if (p.b) {
        const Vec<T, V> b = reinterpret_cast<const Vec<T, V>*>(p.b)[j];
#pragma unroll
        for (int e = 0; e < V; ++e) c[e] += static_cast<C>(b.v[e]);
      }
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < V; ++e) c[e] = affine(c[e], p, static_cast<int64_t>(j) * V + e);
}

// The weight and bias vectors beside a light row's one held vector (Note [GPU light rows]), read
// with the row, before its reduction, where they are vectors (p.wvec). affine_vec keeps its own
// loads, each applied as it comes: through HeldAffine (both vectors loaded, then applied) the
// held kernel would spill.
template <int V, class T, bool Bias>
struct HeldAffine {
  Vec<T, V> w, b;
  template <class Index>
  __device__ void fetch(const NormParams<T>& p, Index j) {
    if (p.w) w = reinterpret_cast<const Vec<T, V>*>(p.w)[j];
    if (Bias && p.b) b = reinterpret_cast<const Vec<T, V>*>(p.b)[j];
  }
  template <class C>
  __device__ void apply(C (&c)[V], const NormParams<T>& p) const {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (p.w) c[e] *= static_cast<C>(w.v[e]);
      if (Bias && p.b) c[e] += static_cast<C>(b.v[e]);
    }
  }
};

template <RowOp Kind, int V, class T, class Index, int R>
__device__ __forceinline__ void row_held(HeldRow<V, T, Index, R>& h, const T* x, T* y, Index ss, Index ds,
                                         const NormParams<T>& p, compute_t<T>* smem) {
  using C = compute_t<T>;
  const unsigned group = h.group;
  // A light row's weight and bias (vectors: the host checked p.wvec) are read before its
  // reduction, their latency hidden by it.
  constexpr bool kLight = R == 1 && V > 1;
  HeldAffine<V, T, Kind == RowOp::LayerNorm> pre;
  h.load(x, ss);
  if constexpr (kLight && Kind != RowOp::Softmax) {
    if (h.vec(0, 0) < h.nv) pre.fetch(p, h.vec(0, 0));
  }
  const auto scale_affine = [&](C(&c)[V], Index j, C scale) {
#pragma unroll
    for (int e = 0; e < V; ++e) c[e] *= scale;
    if constexpr (kLight) {
      pre.apply(c, p);
    } else {
      affine_vec<V>(c, p, j);
    }
  };
  const int64_t n = static_cast<int64_t>(h.nv) * V;
  if constexpr (Kind == RowOp::Softmax) {
    C m = minmax_identity<true, C>();
    h.each([&](C& v, Index) { m = minmax_step<true>(m, v); });
    m = group_allreduce<MaxMerge<C>>(m, group, smem);
    C s = 0;
    h.each([&](C& v, Index) {
      v -= m;
      const C e = std::exp(v);
      s += e;
      if (!p.log) v = e;
    });
    s = group_allreduce<SumMerge<C>>(s, group, smem);
    // One reciprocal and a multiply per element instead of an IEEE division (about ten
    // instructions in f32); the result may differ from the CPU's quotient in the last bit.
    const C lse = p.log ? std::log(s) : C(0), inv = C(1) / s;
    h.store(y, ds, [&](C v, Index) { return p.log ? v - lse : v * inv; });
  } else if constexpr (Kind == RowOp::RmsNorm) {
    C q = 0;
    h.each([&](C& v, Index) { q += v * v; });
    const C scale = rms_scale(group_allreduce<SumMerge<C>>(q, group, smem), n, p.eps);
    h.store_vecs(y, ds, [&](C(&c)[V], Index j) { scale_affine(c, j, scale); });
  } else {
    // Two reductions (mean, then squared deviations from it) as on the CPU: the row is on chip,
    // so the second costs one more group reduction, not a read, and no precision is lost to a
    // large mean.
    C s = 0;
    h.each([&](C& v, Index) { s += v; });
    const C mean = group_allreduce<SumMerge<C>>(s, group, smem) / static_cast<C>(n);
    C q = 0;
    h.each([&](C& v, Index) {
      v -= mean;
      q += v * v;
    });
    const C inv = inv_std(group_allreduce<SumMerge<C>>(q, group, smem) / static_cast<C>(n), p.eps);
    h.store_vecs(y, ds, [&](C(&c)[V], Index j) { scale_affine(c, j, inv); });
  }
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
    const C lse = std::log(st.s), inv = C(1) / st.s;  // a multiply per element, as in row_held
    for (Index i = lane; i < n; i += group) {
      const C d = at(i) - st.m;
      y[i * ds] = convert<T>(p.log ? d - lse : std::exp(d) * inv);
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

// Vector / Scalar: rows held (HeldRow), read as 16-byte vectors or element by element; Streamed:
// rows re-read; Light: rows of one vector per thread (Note [GPU light rows]).
enum class RowPath { Vector, Scalar, Streamed, Light };

template <class T>
inline constexpr int kRowVec = sizeof(T) < 16 ? static_cast<int>(16 / sizeof(T)) : 1;

// Light rows (Note [GPU light rows]): one vector per thread, blocks of kLightBlock threads, at
// least kLightMinBlocks of them per multiprocessor (at most 32 registers a thread).
inline constexpr unsigned kLightBlock = 512;
inline constexpr unsigned kLightMinBlocks = 4;

template <RowOp Kind, RowPath Path, class T, class Index>
__device__ __forceinline__ void lastdim_rows_of_block(const RowArgsN<T, Index>& a, const NormParams<T>& p) {
  __shared__ compute_t<T> smem[kMaxWarpsPerBlock];
  const unsigned per_block = groups_per_block(blockDim.x, a.group);
  const auto [lane, slot] = group_slot(a.group);
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < a.rows;
       base += static_cast<Index>(gridDim.x) * per_block) {
    const Index row = base + slot;
    const bool live = row < a.rows;
    Index off[2] = {0, 0};
    if (live) offsets_of(a.outer, row, off);
    // A group past the last row runs on an empty row: it must still join the group reductions.
    const Index n = live ? a.n : Index(0);
    if constexpr (Path == RowPath::Streamed) {
      row_streamed<Kind>(a.src + off[0], a.dst + off[1], n, a.ss, a.ds, lane, a.group, p, smem);
    } else {
      constexpr int V = Path == RowPath::Scalar ? 1 : kRowVec<T>;
      constexpr int R = Path == RowPath::Light ? 1 : kHeldVecs<T, V>;
      extern __shared__ unsigned char held_shared[];
      // Light rows never have shared batches; saying so at compile time keeps their loops out.
      const unsigned batches = Path == RowPath::Light ? 0u : a.batches;
      HeldRow<V, T, Index, R> h;
      h.ext = reinterpret_cast<compute_t<T>*>(held_shared) + (threadIdx.x - lane) * (batches * R * V) + lane;
      h.nv = n / V;
      h.lane = lane;
      h.group = a.group;
      h.batches = batches;
      row_held<Kind>(h, a.src + off[0], a.dst + off[1], a.ss, a.ds, p, smem);
    }
  }
}

template <RowOp Kind, RowPath Path, class T, class Index>
__global__ void __launch_bounds__(kMaxGroupBlock) lastdim_kernel(RowArgsN<T, Index> a, NormParams<T> p) {
  lastdim_rows_of_block<Kind, Path>(a, p);
}

template <RowOp Kind, class T, class Index>
__global__ void __launch_bounds__(kLightBlock, kLightMinBlocks)
    lastdim_light_kernel(RowArgsN<T, Index> a, NormParams<T> p) {
  lastdim_rows_of_block<Kind, RowPath::Light>(a, p);
}

// How the rows of a launch are walked (see the Note).
struct RowShape {
  RowPath path;
  unsigned group, batches;
  int64_t shared;  // bytes of dynamic shared memory per block
};

// Rows of n elements, read as vectors when `vec`. Up to 512 threads per row hold the row in
// registers; rows that need more threads take 512 with one batch in shared memory (two such
// blocks fit on a multiprocessor, so one computes while the other loads: softmax of 32768 f32
// per row), then 1024 with as many batches as the device's shared memory allows; longer rows are
// streamed.
template <class T>
RowShape row_shape(const LaunchCtx& ctx, int64_t n, bool vec) {
  const RowPath path = vec ? RowPath::Vector : RowPath::Scalar;
  const int64_t v = vec ? kRowVec<T> : 1, r = vec ? kHeldVecs<T, kRowVec<T>> : kHeldVecs<T, 1>;
  const int64_t nv = n / v, threads = (nv + r - 1) / r;
  if (threads <= 512) return {path, pow2_at_least(threads, 512), 0, 0};
  const int64_t budget = ctx.shared_per_block - 1024;  // the kernel's static shared memory
  for (const int64_t g : {int64_t{512}, int64_t{kMaxGroupBlock}}) {
    const int64_t batches = (nv + g * r - 1) / (g * r) - 1;
    const int64_t bytes = batches * r * v * g * static_cast<int64_t>(sizeof(compute_t<T>));
    if ((g == 512 && batches > 1) || bytes > budget) continue;
    return {path, static_cast<unsigned>(g), static_cast<unsigned>(batches), bytes};
  }
  return {RowPath::Streamed, kMaxGroupBlock, 0, 0};
}

// The last-dim rows of src -> dst (same shape): the kept dims collapsed over both, and whether
// the rows can be read and written as 16-byte vectors.
struct LastDimRows {
  Plan<2> plan;
  int64_t n, ss, ds;  // row length, element strides along the rows
  bool vec;
};

template <class T>
LastDimRows lastdim_rows(const TensorArg& src, const TensorArg& dst) {
  const size_t r = src.layout.rank();
  LastDimRows L{collapse_rows<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()}), src.layout.dim(r - 1),
                src.layout.stride(r - 1), dst.layout.stride(r - 1), false};
  // 16-byte loads and stores need unit strides along the row and every row start aligned.
  constexpr int kV = kRowVec<T>;
  L.vec =
      kV > 1 && L.ss == 1 && L.ds == 1 && L.n % kV == 0 && aligned_to(src.ptr<T>(), 16) && aligned_to(dst.ptr<T>(), 16);
  L.vec = L.vec && L.plan.strides_multiple_of(0, kV) && L.plan.strides_multiple_of(1, kV);
  return L;
}

// Calls launch.template operator()<Index>(a) for the launches over L's rows (one unless the kept
// dims do not fit a Meta), a's group and batches left 0. 32-bit math also needs the in-row offsets
// and `extra` more thread positions past the row's end (a held row's padding) to fit.
template <class T, class F>
void for_each_lastdim_launch(const LastDimRows& L, const TensorArg& src, const TensorArg& dst, int64_t extra,
                             F&& launch) {
  const int64_t limit = INT32_MAX / 2;
  const int64_t so = L.plan.max_offset(0), dso = L.plan.max_offset(1);
  const bool extra_fits = L.ss >= 0 && L.ds >= 0 && so >= 0 && dso >= 0 && L.n + extra < limit &&
                          (L.n - 1) * L.ss + so < limit && (L.n - 1) * L.ds + dso < limit;
  for_each_launch<2>(L.plan, extra_fits, [&]<class Index>(int first, const std::array<int64_t, 2>& off, int64_t) {
    const RowArgsN<T, Index> a{make_meta<Index, 2>(L.plan, first),
                               src.ptr<T>() + off[0],
                               dst.ptr<T>() + off[1],
                               static_cast<Index>(L.plan.numel_from(first)),
                               static_cast<Index>(L.n),
                               static_cast<Index>(L.ss),
                               static_cast<Index>(L.ds),
                               0u,
                               0u};
    launch.template operator()<Index>(a);
  });
}

// The light shape of rows held in registers (Note [GPU light rows]) where it applies, else `held`.
template <RowOp Kind, class T>
RowShape light_or(const LaunchCtx& ctx, const RowShape& held, int64_t n, const NormParams<T>& p) {
  if (held.path != RowPath::Vector || held.batches != 0 || ((p.w || p.b) && !p.wvec)) return held;
  const int64_t nv = n / kRowVec<T>;
  const unsigned group = pow2_at_least(nv, kLightBlock);
  // Softmax and layer_norm reduce twice: across warps, their held rows are faster.
  if (nv > kLightBlock || (Kind != RowOp::RmsNorm && group > static_cast<unsigned>(ctx.warp_size))) return held;
  return {RowPath::Light, group, 0, 0};
}

// Runs Kind over every last-dim row of src into dst (same shape), L = lastdim_rows<T>(src, dst).
template <RowOp Kind, class T>
void run_lastdim(const LaunchCtx& ctx, const LastDimRows& L, const TensorArg& src, const TensorArg& dst,
                 const NormParams<T>& p) {
  const RowShape shape = light_or<Kind, T>(ctx, row_shape<T>(ctx, L.n, L.vec), L.n, p);
  const unsigned group = shape.group;
  const unsigned block = shape.path == RowPath::Light ? kLightBlock : std::max<unsigned>(group, kBlock);
  const unsigned per_block = block / group;
  const int64_t held = int64_t{kMaxGroupBlock} * 32 * (shape.batches + 1);  // >= the elements a group holds
  for_each_lastdim_launch<T>(L, src, dst, held, [&]<class Index>(RowArgsN<T, Index> a) {
    a.group = group;
    a.batches = shape.batches;
    const int64_t blocks = (static_cast<int64_t>(a.rows) + per_block - 1) / per_block;
    const unsigned grid = capped_grid(ctx, blocks);
    const auto launch = [&]<auto kernel>() {
      if (shape.shared > 0) gpu::allow_dynamic_shared<kernel>(shape.shared, ctx.op, ctx.device);
      gpu::launch<kernel>(ctx, grid, block, static_cast<size_t>(shape.shared), a, p);
    };
    switch (shape.path) {
      case RowPath::Vector:
        return launch.template operator()<lastdim_kernel<Kind, RowPath::Vector, T, Index>>();
      case RowPath::Scalar:
        return launch.template operator()<lastdim_kernel<Kind, RowPath::Scalar, T, Index>>();
      case RowPath::Streamed:
        return launch.template operator()<lastdim_kernel<Kind, RowPath::Streamed, T, Index>>();
      case RowPath::Light:
        return launch.template operator()<lastdim_light_kernel<Kind, T, Index>>();
    }
  });
}

// The same, working out the rows.
template <RowOp Kind, class T>
void run_lastdim(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst, const NormParams<T>& p) {
  if (src.numel() > 0) run_lastdim<Kind, T>(ctx, lastdim_rows<T>(src, dst), src, dst, p);
}

}  // namespace wick::WICK_GPU_NS::kern
