// Binary arithmetic: add, sub, mul, div on every dtype (integers wrap; see Note [Integer
// elementwise semantics]). Math in backend/elementwise_math.h, wrappers in elementwise.cuh.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

bool binary_arith(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  switch (op) {
    case Op::Add:
      return binary_op<kAllTypes, ew::Add>(ctx, a, b, dst), true;
    case Op::Sub:
      return binary_op<kAllTypes, ew::Sub>(ctx, a, b, dst), true;
    case Op::Mul:
      return binary_op<kAllTypes, ew::Mul>(ctx, a, b, dst), true;
    case Op::Div:
      return binary_op<kAllTypes, ew::Div>(ctx, a, b, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
