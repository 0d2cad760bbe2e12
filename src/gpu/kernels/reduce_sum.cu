// sum and mean on the GPU (Note [GPU reductions] in reduce.cuh).
#include "cpu/dispatch.h"
#include "gpu/kernels/reduce.cuh"

namespace wick::WICK_GPU_NS::kern {

void reduce_sum(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                bool mean) {
  if (mean) {
    cpu::dispatch_in<kFloatTypes>(
        src.dtype, [&]<class T>() { run_reduce<SumOp<T, true>>(ctx, be, src, n_reduced, dst); }, ctx.op);
  } else {
    cpu::dispatch(
        src.dtype, [&]<class T>() { run_reduce<SumOp<T, false>>(ctx, be, src, n_reduced, dst); }, ctx.op);
  }
}

}  // namespace wick::WICK_GPU_NS::kern
