// min and max on the GPU (Note [GPU reductions] in reduce.cuh).
#include "backend/dispatch.h"
#include "gpu/kernels/reduce.cuh"

namespace wick::WICK_GPU_NS::kern {

void reduce_minmax(const LaunchCtx& ctx, const TensorArg& src, int n_reduced, const TensorArg& dst, bool is_max) {
  Backend& be = backend_of(ctx);
  wick::dispatch(
      src.dtype,
      [&]<class T>() {
        if (is_max) {
          run_reduce<MinMaxOp<T, true>>(ctx, be, src, n_reduced, dst);
        } else {
          run_reduce<MinMaxOp<T, false>>(ctx, be, src, n_reduced, dst);
        }
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
