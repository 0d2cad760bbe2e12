// Part 0 of the unary rows (unary.cuh).
#include "gpu/kernels/unary.cuh"

namespace wick::WICK_GPU_NS::kern {
template bool unary_part<0>(const LaunchCtx&, Op, const UnaryParams&, const TensorArg&, const TensorArg&);
}  // namespace wick::WICK_GPU_NS::kern
