// Unary ops defined on integers too: neg, sqr, abs, ceil, floor, round, sign, relu. Math in
// backend/elementwise_math.h, wrappers in elementwise.cuh.
//
// Where the shared functor is the identity for a dtype (ceil, floor and round of integers; abs
// and relu of unsigned integers) the op is a same-dtype copy (cast.cu), so those dtypes are not
// instantiated here a second time.
#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

// The functor for the dtypes in Mask; every other dtype of the op's row is the identity.
template <uint32_t Mask, class F>
void unary_or_copy(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  if ((Mask & dtype_bit(src.dtype)) != 0)
    unary_op<Mask, F>(ctx, src, dst);
  else
    cast(ctx, src, dst);
}
}  // namespace

bool unary_exact(const LaunchCtx& ctx, Op op, const TensorArg& src, const TensorArg& dst) {
  switch (op) {
    case Op::Neg:
      return unary_op<kSignedTypes, ew::Neg>(ctx, src, dst), true;
    case Op::Sqr:
      return unary_op<kAllTypes, ew::Sqr>(ctx, src, dst), true;
    case Op::Sign:
      return unary_op<kAllTypes, ew::Sign>(ctx, src, dst), true;
    case Op::Abs:
      return unary_or_copy<kSignedTypes, ew::Abs>(ctx, src, dst), true;
    case Op::Relu:
      return unary_or_copy<kSignedTypes, ew::Relu>(ctx, src, dst), true;
    case Op::Ceil:
      return unary_or_copy<kFloatTypes, ew::Ceil>(ctx, src, dst), true;
    case Op::Floor:
      return unary_or_copy<kFloatTypes, ew::Floor>(ctx, src, dst), true;
    case Op::Round:
      return unary_or_copy<kFloatTypes, ew::Round>(ctx, src, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
