// sum and mean on the GPU (Note [GPU reductions] in reduce.cuh).
#include "backend/dispatch.h"
#include "gpu/kernels/reduce.cuh"

namespace wick::WICK_GPU_NS::kern {

void reduce_sum(const LaunchCtx& ctx, const TensorArg& src, int n_reduced, const TensorArg& dst, bool mean) {
  Backend& be = backend_of(ctx);
  if (mean) {
    wick::dispatch_in<kFloatTypes>(
        src.dtype, [&]<class T>() { run_reduce<SumOp<T, true>>(ctx, be, src, n_reduced, dst); }, ctx.op);
  } else {
    wick::dispatch(
        src.dtype, [&]<class T>() { run_reduce<SumOp<T, false>>(ctx, be, src, n_reduced, dst); }, ctx.op);
  }
}

}  // namespace wick::WICK_GPU_NS::kern
