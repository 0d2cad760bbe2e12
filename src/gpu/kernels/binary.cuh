// The binary rows of the op table on the GPU (add ... pow), generated from WICK_BINARY_OPS: each
// row runs its functor (backend/elementwise_math.h, shared with the CPU) in the compute type,
// rounded once, instantiated only for the dtypes of its row. binary_<part>.cu instantiate one
// part each; the comparisons are in compare.cu.
#pragma once

#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

template <int Part>
bool binary_part(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  switch (op) {
#define WICK_X(name, str, kind, mask, F)                               \
  case Op::name:                                                       \
    if constexpr (static_cast<int>(Op::name) % kBinaryParts == Part) { \
      binary_op<mask, ew::F>(ctx, a, b, dst);                          \
      return true;                                                     \
    } else {                                                           \
      return false;                                                    \
    }
    WICK_BINARY_OPS(WICK_X)
#undef WICK_X
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
