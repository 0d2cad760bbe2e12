// The GPU backend's reductions and last-dim normalisations (host code; kernels in
// kernels/reduce*.cu, softmax.cu, norm.cu).
#include <string>

#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

void GpuBackend::reduce(Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) {
  const kern::LaunchCtx ctx = enter(op_name(op).data());
  switch (op) {
    case Op::Sum:
    case Op::Mean:
      return kern::reduce_sum(ctx, *this, src, n_reduced, dst, op == Op::Mean);
    case Op::Min:
    case Op::Max:
      return kern::reduce_minmax(ctx, *this, src, n_reduced, dst, op == Op::Max);
    case Op::ArgMin:
    case Op::ArgMax:
      return kern::reduce_arg(ctx, *this, src, n_reduced, dst, op == Op::ArgMax);
    default:
      throw UnsupportedError("[" + std::string(op_name(op)) + "] is not a reduction (" + location() + ")");
  }
}

void GpuBackend::softmax(const TensorArg& src, const TensorArg& dst, bool log) {
  kern::softmax(enter(log ? "log_softmax" : "softmax"), *this, src, dst, log);
}

void GpuBackend::rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps) {
  kern::rms_norm(enter("rms_norm"), x, weight, dst, eps);
}

void GpuBackend::layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst,
                            double eps) {
  kern::layer_norm(enter("layer_norm"), x, weight, bias, dst, eps);
}

}  // namespace wick::WICK_GPU_NS
