// The GPU backend's elementwise ops: unary (with and without parameters), binary, comparisons and
// where_cond. Host glue only; the kernels are in kernels/unary_*.cu, binary_*.cu, compare.cu and
// where.cu, each a family that compiles on its own.
#include <string>

#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

void GpuBackend::unary(Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const kern::LaunchCtx ctx = enter(op_name(op).data());
  if (kern::unary_float(ctx, op, src, dst) || kern::unary_activation(ctx, op, p0, src, dst) ||
      kern::unary_exact(ctx, op, src, dst) || kern::unary_affine(ctx, op, p0, p1, src, dst))
    return;
  throw UnsupportedError("[unary] " + std::string(op_name(op)) + " is not a unary elementwise op");
}

void GpuBackend::binary(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const kern::LaunchCtx ctx = enter(op_name(op).data());
  if (kern::binary_arith(ctx, op, a, b, dst) || kern::binary_minmax(ctx, op, a, b, dst) ||
      kern::compare(ctx, op, a, b, dst))
    return;
  throw UnsupportedError("[binary] " + std::string(op_name(op)) + " is not a binary elementwise op");
}

void GpuBackend::where_cond(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  kern::where_cond(enter("where_cond"), cond, t, f, dst);
}

}  // namespace wick::WICK_GPU_NS
