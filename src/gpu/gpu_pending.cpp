// Backend methods the GPU does not implement yet. implements() is false for their ops, so the
// front ends reject them before they get here (UnsupportedError naming op, dtype and device); these
// bodies are the second line, for callers that reach the backend directly.
#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

void GpuBackend::not_implemented(Op op, DType dtype) const {
  throw UnsupportedError("[" + std::string(op_name(op)) + "] " + std::string(dtype_name(dtype)) +
                         " is not implemented on " + location() + " yet");
}

void GpuBackend::unary(Op op, double, double, const TensorArg& src, const TensorArg&) {
  not_implemented(op, src.dtype);
}
void GpuBackend::binary(Op op, const TensorArg& a, const TensorArg&, const TensorArg&) { not_implemented(op, a.dtype); }
void GpuBackend::where_cond(const TensorArg&, const TensorArg& t, const TensorArg&, const TensorArg&) {
  not_implemented(Op::WhereCond, t.dtype);
}
void GpuBackend::cumsum(const TensorArg& src, const TensorArg&) { not_implemented(Op::Cumsum, src.dtype); }
void GpuBackend::sort(const TensorArg& src, const TensorArg& values, const TensorArg&, bool) {
  not_implemented(values.defined() ? Op::Sort : Op::Argsort, src.dtype);
}

}  // namespace wick::WICK_GPU_NS
