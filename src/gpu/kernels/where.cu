// where_cond: dst = cond != 0 ? t : f. The values are only moved, so the kernels instantiate per
// element size (unsigned words), not per dtype: 3 condition dtypes x 4 sizes.
#include <cstdint>

#include "backend/dispatch.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

template <class Cond, class V>
struct Select {
  __device__ V operator()(int64_t, Cond k, V t, V f) const { return k != 0 ? t : f; }
};

template <class Cond, class V>
void select(const LaunchCtx& ctx, const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  map<V, Cond, V, V>(ctx, Select<Cond, V>{}, dst, cond, t, f);
}

}  // namespace

void where_cond(const LaunchCtx& ctx, const TensorArg& cond, const TensorArg& t, const TensorArg& f,
                const TensorArg& dst) {
  constexpr uint32_t kCondTypes = kIntTypes;
  wick::dispatch_in<kCondTypes>(
      cond.dtype,
      [&]<class Cond>() {
        switch (dtype_size(t.dtype)) {
          case 1:
            return select<Cond, uint8_t>(ctx, cond, t, f, dst);
          case 2:
            return select<Cond, uint16_t>(ctx, cond, t, f, dst);
          case 4:
            return select<Cond, uint32_t>(ctx, cond, t, f, dst);
          default:
            return select<Cond, uint64_t>(ctx, cond, t, f, dst);
        }
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
