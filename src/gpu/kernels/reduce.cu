// The reduction launcher: routes a Reduce row of the op table to its family (reduce_sum.cu,
// reduce_minmax.cu, reduce_arg.cu; Note [GPU reductions] in reduce.cuh).
#include <string>

#include "gpu/kernels/launch.h"

namespace wick::WICK_GPU_NS::kern {

void reduce(const LaunchCtx& base, Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) {
  const LaunchCtx ctx = base.with_op(op_name(op).data());
  switch (op) {
    case Op::Sum:
    case Op::Mean:
      return reduce_sum(ctx, src, n_reduced, dst, op == Op::Mean);
    case Op::Min:
    case Op::Max:
      return reduce_minmax(ctx, src, n_reduced, dst, op == Op::Max);
    case Op::ArgMin:
    case Op::ArgMax:
      return reduce_arg(ctx, src, n_reduced, dst, op == Op::ArgMax);
    default:
      throw UnsupportedError("[" + std::string(op_name(op)) + "] is not a reduction");
  }
}

}  // namespace wick::WICK_GPU_NS::kern
