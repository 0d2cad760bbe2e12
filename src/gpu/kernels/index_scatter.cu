// scatter, scatter_add and index_add on the GPU (Note [GPU index kernels] in index.cu).
//
// One thread per element of the iteration shape. scatter moves bits (instantiated per element
// size) with plain stores: with repeated targets one of the values wins, unspecified which, as on
// the CPU. The adds are atomic (atomic_add in index.cuh), so repeated targets all count; for the
// floats the order of the adds, and so the rounding of the sum, may differ from the CPU's
// sequential order (the integers wrap and agree exactly).
#include "backend/dispatch.h"
#include "gpu/kernels/index.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

template <bool Add, class T, class I, class Index>
__global__ void __launch_bounds__(kBlock)
    scatter_kernel(Meta<Index, 3> m, Index n, T* dst, const T* src, const I* ids, int64_t dst_dim_stride) {
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[3];
    offsets_of(m, i, off);
    T* const t = dst + (static_cast<int64_t>(off[0]) + static_cast<int64_t>(ids[off[2]]) * dst_dim_stride);
    if constexpr (Add) {
      atomic_add(t, src[off[1]]);
    } else {
      *t = src[off[1]];
    }
  }
}

template <bool Add, class T, class I>
void scatter_launch(const LaunchCtx& ctx, const Plan<3>& p, T* dst, const T* src, const I* ids, int64_t dds) {
  for_each_launch<3>(p, true, [&]<class Index>(int first, const std::array<int64_t, 3>& off, int64_t) {
    const int64_t n = p.numel_from(first);
    gpu::launch<scatter_kernel<Add, T, I, Index>>(ctx, grid_for(ctx, n), kBlock, 0, make_meta<Index, 3>(p, first),
                                                  static_cast<Index>(n), dst + off[0], src + off[1], ids + off[2], dds);
  });
}

}  // namespace

void scatter(const LaunchCtx& ctx, const TensorArg& dst, const Strides& dst_strides, int64_t dst_dim_stride,
             const TensorArg& src, const Strides& src_strides, const TensorArg& ids, const Strides& ids_strides,
             const Shape& shape, bool add) {
  if (shape.numel() == 0) return;
  const Plan<3> p = collapse<3>(shape, {&dst_strides, &src_strides, &ids_strides});
  wick::dispatch_in<kIdTypes>(
      ids.dtype,
      [&]<class I>() {
        if (add) {
          wick::dispatch(
              dst.dtype,
              [&]<class T>() {
                scatter_launch<true, T, I>(ctx, p, dst.ptr<T>(), src.ptr<T>(), ids.ptr<I>(), dst_dim_stride);
              },
              ctx.op);
        } else {
          by_size(dtype_size(dst.dtype), [&]<class U>() {
            scatter_launch<false, U, I>(ctx, p, dst.ptr<U>(), src.ptr<U>(), ids.ptr<I>(), dst_dim_stride);
          });
        }
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
