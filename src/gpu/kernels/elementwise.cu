// The elementwise launchers: unary and binary route an op of the table to the part that holds
// its row (unary.cuh, binary.cuh, compare.cu). Only the parts' declarations are seen here, so
// each part's kernels are compiled once, in its own file.
#include <string>
#include <utility>

#include "gpu/kernels/launch.h"

namespace wick::WICK_GPU_NS::kern {

namespace {
template <int... Parts>
bool any_unary_part(std::integer_sequence<int, Parts...>, const LaunchCtx& ctx, Op op, const UnaryParams& p,
                    const TensorArg& src, const TensorArg& dst) {
  return (unary_part<Parts>(ctx, op, p, src, dst) || ...);
}
template <int... Parts>
bool any_binary_part(std::integer_sequence<int, Parts...>, const LaunchCtx& ctx, Op op, const TensorArg& a,
                     const TensorArg& b, const TensorArg& dst) {
  return (binary_part<Parts>(ctx, op, a, b, dst) || ...);
}
}  // namespace

void unary(const LaunchCtx& base, Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const LaunchCtx ctx = base.with_op(op_name(op).data());
  if (any_unary_part(std::make_integer_sequence<int, kUnaryParts>{}, ctx, op, p, src, dst)) return;
  throw UnsupportedError("[unary] " + std::string(op_name(op)) + " is not a unary elementwise op");
}

void binary(const LaunchCtx& base, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const LaunchCtx ctx = base.with_op(op_name(op).data());
  if (any_binary_part(std::make_integer_sequence<int, kBinaryParts>{}, ctx, op, a, b, dst) ||
      compare_op(ctx, op, a, b, dst))
    return;
  throw UnsupportedError("[binary] " + std::string(op_name(op)) + " is not a binary elementwise op");
}

}  // namespace wick::WICK_GPU_NS::kern
