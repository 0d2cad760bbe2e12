// Part 0 of the binary rows (binary.cuh).
#include "gpu/kernels/binary.cuh"

namespace wick::WICK_GPU_NS::kern {
template bool binary_part<0>(const LaunchCtx&, Op, const TensorArg&, const TensorArg&, const TensorArg&);
}  // namespace wick::WICK_GPU_NS::kern
