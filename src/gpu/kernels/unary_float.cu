// Unary float math: exp, log, sin, cos, tanh, sqrt, erf, recip (float dtypes only, as their
// op-table rows). Math in backend/elementwise_math.h, wrappers in elementwise.cuh.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

bool unary_float(const LaunchCtx& ctx, Op op, const TensorArg& src, const TensorArg& dst) {
  switch (op) {
    case Op::Exp:
      return unary_op<kFloatTypes, ew::Exp>(ctx, src, dst), true;
    case Op::Log:
      return unary_op<kFloatTypes, ew::Log>(ctx, src, dst), true;
    case Op::Sin:
      return unary_op<kFloatTypes, ew::Sin>(ctx, src, dst), true;
    case Op::Cos:
      return unary_op<kFloatTypes, ew::Cos>(ctx, src, dst), true;
    case Op::Tanh:
      return unary_op<kFloatTypes, ew::Tanh>(ctx, src, dst), true;
    case Op::Sqrt:
      return unary_op<kFloatTypes, ew::Sqrt>(ctx, src, dst), true;
    case Op::Erf:
      return unary_op<kFloatTypes, ew::Erf>(ctx, src, dst), true;
    case Op::Recip:
      return unary_op<kFloatTypes, ew::Recip>(ctx, src, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
