// Binary maximum and minimum (NaN propagates) on every dtype, pow on the float dtypes. Math in
// backend/elementwise_math.h, wrappers in elementwise.cuh.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

bool binary_minmax(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  switch (op) {
    case Op::Maximum:
      return binary_op<kAllTypes, ew::Maximum>(ctx, a, b, dst), true;
    case Op::Minimum:
      return binary_op<kAllTypes, ew::Minimum>(ctx, a, b, dst), true;
    case Op::Pow:
      return binary_op<kFloatTypes, ew::Pow>(ctx, a, b, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
