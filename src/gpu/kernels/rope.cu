// Rotary position embeddings on the GPU: rope (pairs (i, i + D/2)) and rope_i (pairs (2i, 2i + 1)).
//
// The iteration runs over x's leading dims [..., T] plus one dim of pair chunks, with four
// operands: dst and x at the first member of a chunk's first pair (the second members lie a fixed
// distance further), cos and sin with stride 0 on every leading dim but T. That is an ordinary
// launch plan (Note [GPU launch plans]): dims are collapsed, any strides and broadcasts cost
// nothing extra, and the index math is 32-bit when it fits. 8/16-bit floats compute in f32
// (convmath::rope_rotate, the CPU's math) and round once.
//
// Note [GPU rope vectors]
// A chunk is one pair, read element by element, unless the last dims of x, dst, cos and sin have
// unit stride and every vector lands aligned: then a thread takes 16 bytes of pairs. rope reads
// V = 16 / sizeof(T) first members, the V second members half a row further and V cosines and
// sines as 16-byte vectors; rope_i reads V = 8 / sizeof(T) pairs as one 16-byte vector of x and
// 8-byte vectors of cos and sin. Element by element, a warp's load is only 64 bytes of bf16.
#include <cstdint>

#include "backend/conv_math.h"
#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/index.cuh"

namespace wick::WICK_GPU_NS {

namespace kern {

namespace {

template <class T, int V>
__device__ __forceinline__ Vec<T, V> load(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}

// V pairs per thread. Inter: the V pairs are 2V adjacent elements of x and of dst; otherwise the
// V second members lie x_pair (y_pair) elements after the V first ones.
template <class T, int V, bool Inter, class Index>
__global__ void __launch_bounds__(kBlock)
    rope_kernel(Meta<Index, 4> m, Index n, T* y, const T* x, const T* cs, const T* sn, Index x_pair, Index y_pair) {
  using A = compute_t<T>;
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[4];
    offsets_of(m, i, off);
    const Vec<T, V> c = load<T, V>(cs + off[2]), s = load<T, V>(sn + off[3]);
    if constexpr (Inter) {
      const Vec<T, 2 * V> xv = load<T, 2 * V>(x + off[1]);
      A o[2 * V];
#pragma unroll
      for (int k = 0; k < V; ++k)
        convmath::rope_rotate<A>(convert<A>(xv.v[2 * k]), convert<A>(xv.v[2 * k + 1]), convert<A>(c.v[k]),
                                 convert<A>(s.v[k]), &o[2 * k], &o[2 * k + 1]);
      *reinterpret_cast<Vec<T, 2 * V>*>(y + off[0]) = vec_of<T, 2 * V>(o);
    } else {
      const Vec<T, V> xa = load<T, V>(x + off[1]), xb = load<T, V>(x + off[1] + x_pair);
      A oa[V], ob[V];
#pragma unroll
      for (int k = 0; k < V; ++k)
        convmath::rope_rotate<A>(convert<A>(xa.v[k]), convert<A>(xb.v[k]), convert<A>(c.v[k]), convert<A>(s.v[k]),
                                 &oa[k], &ob[k]);
      *reinterpret_cast<Vec<T, V>*>(y + off[0]) = vec_of<T, V>(oa);
      *reinterpret_cast<Vec<T, V>*>(y + off[0] + y_pair) = vec_of<T, V>(ob);
    }
  }
}

// Whether offset + the largest plan offset of operand k stays in int32 (offset >= 0).
bool pair_fits(const Plan<4>& p, int k, int64_t offset) {
  if (offset < 0) return false;
  int64_t max = offset;
  for (int d = 0; d < p.rank(); ++d) max += (p.shape[d] - 1) * p.strides[k][d];
  return max <= INT32_MAX;
}

struct RopeGeometry {
  int64_t half;            // pairs per row
  int64_t x_pair, y_pair;  // element distance between the two members of a pair
  int64_t x_step, y_step;  // ... and between consecutive pairs
};

// The plan over [..., T, half / V] (operands dst, x, cos, sin) for chunks of V pairs.
Plan<4> rope_plan(const TensorArg& x, const TensorArg& cs, const TensorArg& sn, const TensorArg& dst,
                  const RopeGeometry& g, int64_t v) {
  const size_t rank = x.shape().size();
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  Strides ys(dst.layout.strides().begin(), dst.layout.strides().end() - 1);
  Strides xs(x.layout.strides().begin(), x.layout.strides().end() - 1);
  Strides cst = rope_table_strides(cs, rank), sst = rope_table_strides(sn, rank);
  cst[rank - 1] *= v;  // chunks of v pairs along the last dim
  sst[rank - 1] *= v;
  shape.push_back(g.half / v);
  ys.push_back(g.y_step * v);
  xs.push_back(g.x_step * v);
  return collapse<4>(shape, {&ys, &xs, &cst, &sst});
}

template <class T, int V, bool Inter>
void rope_launch(const LaunchCtx& ctx, const Plan<4>& p, const RopeGeometry& g, const TensorArg& x, const TensorArg& cs,
                 const TensorArg& sn, const TensorArg& dst) {
  const bool fits = pair_fits(p, 0, g.y_pair) && pair_fits(p, 1, g.x_pair);
  T* const y = dst.ptr<T>();
  const T* const xp = x.ptr<T>();
  const T* const cp = cs.ptr<T>();
  const T* const sp = sn.ptr<T>();
  for_each_launch<4>(p, fits, [&]<class Index>(int first, const std::array<int64_t, 4>& off, int64_t) {
    const int64_t n = p.numel_from(first);
    gpu::launch<rope_kernel<T, V, Inter, Index>>(
        ctx, grid_for(ctx, n), kBlock, 0, make_meta<Index, 4>(p, first), static_cast<Index>(n), y + off[0], xp + off[1],
        cp + off[2], sp + off[3], static_cast<Index>(g.x_pair), static_cast<Index>(g.y_pair));
  });
}

// Whether chunks of v pairs can be vectors (Note [GPU rope vectors]), given unit-stride last dims
// and whole chunks per row: every vector of x and dst (2v elements for rope_i, else v at both
// members) and of cos and sin (v elements) aligned, in every slice of the plan.
bool vectors_fit(const Plan<4>& p, const TensorArg& x, const TensorArg& cs, const TensorArg& sn, const TensorArg& dst,
                 int64_t v, bool interleaved) {
  const int64_t elem = static_cast<int64_t>(dtype_size(x.dtype)), w = interleaved ? 2 * v : v;
  const int64_t vec[4] = {w, w, v, v};
  const void* ptr[4] = {dst.ptr<char>(), x.ptr<char>(), cs.ptr<char>(), sn.ptr<char>()};
  for (int k = 0; k < 4; ++k)
    if (!aligned_to(static_cast<const char*>(ptr[k]), static_cast<size_t>(vec[k] * elem)) ||
        !p.strides_multiple_of(k, vec[k]))
      return false;
  return true;
}

template <class T>
void rope_typed(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& cs, const TensorArg& sn,
                const TensorArg& dst, bool interleaved) {
  const size_t rank = x.shape().size();
  const int64_t half = x.shape()[rank - 1] / 2;
  if (x.numel() == 0 || half == 0) return;
  const int64_t xd = x.layout.stride(rank - 1), yd = dst.layout.stride(rank - 1);
  const RopeGeometry g{half, interleaved ? xd : half * xd, interleaved ? yd : half * yd, interleaved ? 2 * xd : xd,
                       interleaved ? 2 * yd : yd};
  // Vectors need unit-stride last dims and whole chunks a row; only then is their plan built.
  constexpr int kPlainV = static_cast<int>(16 / sizeof(T)), kInterV = static_cast<int>(8 / sizeof(T));
  const int v = interleaved ? kInterV : kPlainV;
  if (v > 1 && xd == 1 && yd == 1 && cs.layout.stride(1) == 1 && sn.layout.stride(1) == 1 && half % v == 0) {
    const Plan<4> p = rope_plan(x, cs, sn, dst, g, v);
    if (vectors_fit(p, x, cs, sn, dst, v, interleaved)) {
      if (!interleaved) return rope_launch<T, kPlainV, false>(ctx, p, g, x, cs, sn, dst);
      if constexpr (kInterV > 1) return rope_launch<T, kInterV, true>(ctx, p, g, x, cs, sn, dst);
    }
  }
  rope_launch<T, 1, false>(ctx, rope_plan(x, cs, sn, dst, g, 1), g, x, cs, sn, dst);
}

}  // namespace

}  // namespace kern

void kern::rope(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& cos, const TensorArg& sin,
                const TensorArg& dst, bool interleaved) {
  const kern::LaunchCtx ctx = base.with_op(interleaved ? "rope_i" : "rope");
  wick::dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { kern::rope_typed<T>(ctx, x, cos, sin, dst, interleaved); }, ctx.op);
}

}  // namespace wick::WICK_GPU_NS
