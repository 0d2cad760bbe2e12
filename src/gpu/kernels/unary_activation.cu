// Unary activations: gelu, gelu_erf, silu, sigmoid, and powf / elu with their parameter (float
// dtypes only). Math in backend/elementwise_math.h, wrappers in elementwise.cuh.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {
// An op with one parameter, given in the compute type (ew::Powf, ew::Elu).
template <template <class> class F>
void with_param(const LaunchCtx& ctx, double p, const TensorArg& src, const TensorArg& dst) {
  cpu::dispatch_in<kFloatTypes>(
      src.dtype,
      [&]<class T>() {
        using C = compute_t<T>;
        unary_map<T>(ctx, F<C>{static_cast<C>(p)}, src, dst);
      },
      ctx.op);
}
}  // namespace

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
      return with_param<ew::Powf>(ctx, p0, src, dst), true;
    case Op::Elu:
      return with_param<ew::Elu>(ctx, p0, src, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
