// softmax and log_softmax on the GPU (Note [GPU row normalisation] in norm.cuh).
#include "cpu/dispatch.h"
#include "gpu/kernels/norm.cuh"

namespace wick::WICK_GPU_NS::kern {

void softmax(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst, bool log) {
  cpu::dispatch_in<kFloatTypes>(
      src.dtype,
      [&]<class T>() {
        NormParams<T> p;
        p.log = log;
        run_lastdim<RowOp::Softmax, T>(ctx, src, dst, p);
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
