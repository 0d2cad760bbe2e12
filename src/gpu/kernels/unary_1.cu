// Part 1 of the unary rows (unary.cuh).
#include "gpu/kernels/unary.cuh"

namespace wick::WICK_GPU_NS::kern {
template bool unary_part<1>(const LaunchCtx&, Op, const UnaryParams&, const TensorArg&, const TensorArg&);
}  // namespace wick::WICK_GPU_NS::kern
