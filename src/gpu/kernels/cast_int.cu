// cast from u8, u32, i64 (see cast.cu).
#include "backend/dispatch.h"
#include "gpu/kernels/cast_common.cuh"

namespace wick::WICK_GPU_NS::kern {

void cast_from_int(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  constexpr uint32_t kIntTypes = kAllTypes & ~kFloatTypes;
  wick::dispatch_in<kIntTypes>(
      src.dtype, [&]<class S>() { cast_from<S>(ctx, src, dst); }, "cast");
}

}  // namespace wick::WICK_GPU_NS::kern
