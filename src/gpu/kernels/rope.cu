// Rotary position embeddings on the GPU: rope (pairs (i, i + D/2)) and rope_i (pairs (2i, 2i + 1)).
//
// One thread per pair. The iteration runs over x's leading dims [..., T] plus one dim of D/2
// pairs, with four operands: dst and x at the first member of the pair (the second lies a fixed
// distance further), cos and sin with stride 0 on every leading dim but T. That is an ordinary
// launch plan (Note [GPU launch plans]): dims are collapsed, any strides and broadcasts cost
// nothing extra, and the index math is 32-bit when it fits. 8/16-bit floats compute in f32
// (convmath::rope_rotate, the CPU's math) and round once.
#include <cstdint>

#include "backend/conv_math.h"
#include "cpu/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/index.cuh"

namespace wick::WICK_GPU_NS {

namespace kern {

namespace {

template <class T, class Index>
__global__ void __launch_bounds__(kBlock)
    rope_kernel(Meta<Index, 4> m, Index n, T* y, const T* x, const T* cs, const T* sn, Index x_pair, Index y_pair) {
  using A = compute_t<T>;
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[4];
    offsets_of(m, i, off);
    A oa, ob;
    convmath::rope_rotate<A>(convert<A>(x[off[1]]), convert<A>(x[off[1] + x_pair]), convert<A>(cs[off[2]]),
                             convert<A>(sn[off[3]]), &oa, &ob);
    y[off[0]] = convert<T>(oa);
    y[off[0] + y_pair] = convert<T>(ob);
  }
}

// Whether offset + the largest plan offset of operand k stays in int32 (offset >= 0).
bool pair_fits(const Plan<4>& p, int k, int64_t offset) {
  if (offset < 0) return false;
  int64_t max = offset;
  for (int d = 0; d < p.rank(); ++d) max += (p.shape[d] - 1) * p.strides[d][k];
  return max <= INT32_MAX;
}

template <class T>
void rope_typed(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& cs, const TensorArg& sn,
                const TensorArg& dst, bool interleaved) {
  const size_t rank = x.shape().size();
  const int64_t d = x.shape()[rank - 1], half = d / 2;
  if (x.numel() == 0 || half == 0) return;
  const int64_t xd = x.layout.stride(rank - 1), yd = dst.layout.stride(rank - 1);
  // Element distance between the two members of a pair, and between consecutive pairs.
  const int64_t x_pair = interleaved ? xd : half * xd, x_step = interleaved ? 2 * xd : xd;
  const int64_t y_pair = interleaved ? yd : half * yd, y_step = interleaved ? 2 * yd : yd;

  Shape shape(x.shape().begin(), x.shape().end() - 1);
  Strides ys(dst.layout.strides().begin(), dst.layout.strides().end() - 1);
  Strides xs(x.layout.strides().begin(), x.layout.strides().end() - 1);
  Strides cst(rank - 1, 0), sst(rank - 1, 0);
  cst[rank - 2] = cs.layout.stride(0);
  sst[rank - 2] = sn.layout.stride(0);
  shape.push_back(half);
  ys.push_back(y_step);
  xs.push_back(x_step);
  cst.push_back(cs.layout.stride(1));
  sst.push_back(sn.layout.stride(1));
  const Plan<4> p = make_plan<4>(shape, {&ys, &xs, &cst, &sst});
  const bool fits = pair_fits(p, 0, y_pair) && pair_fits(p, 1, x_pair);

  T* const y = dst.ptr<T>();
  const T* const xp = x.ptr<T>();
  const T* const cp = cs.ptr<T>();
  const T* const sp = sn.ptr<T>();
  for_each_launch<4>(p, fits, [&]<class Index>(int first, const std::array<int64_t, 4>& off, int64_t) {
    const int64_t n = numel_from(p, first);
    gpu::launch<rope_kernel<T, Index>>(ctx, grid_for(ctx, n), kBlock, 0, make_meta<Index, 4>(p, first),
                                       static_cast<Index>(n), y + off[0], xp + off[1], cp + off[2], sp + off[3],
                                       static_cast<Index>(x_pair), static_cast<Index>(y_pair));
  });
}

}  // namespace

}  // namespace kern

void GpuBackend::rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst,
                      bool interleaved) {
  const kern::LaunchCtx ctx = enter(interleaved ? "rope_i" : "rope");
  cpu::dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { kern::rope_typed<T>(ctx, x, cos, sin, dst, interleaved); }, ctx.op);
}

}  // namespace wick::WICK_GPU_NS
