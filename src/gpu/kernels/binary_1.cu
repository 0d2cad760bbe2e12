// Part 1 of the binary rows (binary.cuh).
#include "gpu/kernels/binary.cuh"

namespace wick::WICK_GPU_NS::kern {
template bool binary_part<1>(const LaunchCtx&, Op, const TensorArg&, const TensorArg&, const TensorArg&);
}  // namespace wick::WICK_GPU_NS::kern
