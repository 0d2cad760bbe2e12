// The conversion functor of cast, shared by cast.cu, cast_int.cu and cast_float.cu.
#pragma once

#include <type_traits>

#include "backend/dispatch.h"
#include "gpu/kernels/tile.cuh"

namespace wick::WICK_GPU_NS::kern {

template <class D, class S>
struct Convert {
  __device__ D operator()(int64_t, S v) const { return convert<D>(v); }
};

// Every destination dtype from source type S (equal dtypes go to the copy in cast.cu).
template <class S>
void cast_from(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  wick::dispatch(
      dst.dtype,
      [&]<class D>() {
        if constexpr (!std::is_same_v<D, S>) map_tiled<D, S>(ctx, Convert<D, S>{}, dst, src);
      },
      "cast");
}

}  // namespace wick::WICK_GPU_NS::kern
