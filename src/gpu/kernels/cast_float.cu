// cast from bf16, f16, f32, f64, f8e4m3 (see cast.cu).
#include "backend/dispatch.h"
#include "gpu/kernels/cast_common.cuh"

namespace wick::WICK_GPU_NS::kern {

void cast_from_float(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  wick::dispatch_in<kFloatTypes>(
      src.dtype, [&]<class S>() { cast_from<S>(ctx, src, dst); }, "cast");
}

}  // namespace wick::WICK_GPU_NS::kern
