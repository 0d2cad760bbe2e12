// Unary activations: gelu, gelu_erf, silu, sigmoid, and powf / elu with their parameter (float
// dtypes only). Math in backend/elementwise_math.h, wrappers in elementwise.cuh.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

bool unary_activation(const LaunchCtx& ctx, Op op, double p0, const TensorArg& src, const TensorArg& dst) {
  switch (op) {
    case Op::Gelu:
      return unary_op<kFloatTypes, ew::Gelu>(ctx, src, dst), true;
    case Op::GeluErf:
      return unary_op<kFloatTypes, ew::GeluErf>(ctx, src, dst), true;
    case Op::Silu:
      return unary_op<kFloatTypes, ew::Silu>(ctx, src, dst), true;
    case Op::Sigmoid:
      return unary_op<kFloatTypes, ew::Sigmoid>(ctx, src, dst), true;
    case Op::Powf:
      cpu::dispatch_in<kFloatTypes>(
          src.dtype,
          [&]<class T>() {
            using C = compute_t<T>;
            unary_map<T>(ctx, ew::Powf<C>{static_cast<C>(p0)}, src, dst);
          },
          ctx.op);
      return true;
    case Op::Elu:
      cpu::dispatch_in<kFloatTypes>(
          src.dtype,
          [&]<class T>() {
            using C = compute_t<T>;
            unary_map<T>(ctx, ew::Elu<C>{static_cast<C>(p0)}, src, dst);
          },
          ctx.op);
      return true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
