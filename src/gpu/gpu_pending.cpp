// Backend methods the GPU does not implement yet. implements() is false for their ops, so the
// front ends reject them before they get here (UnsupportedError naming op, dtype and device); these
// bodies are the second line, for callers that reach the backend directly.
#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

void GpuBackend::not_implemented(Op op, DType dtype) const {
  throw UnsupportedError("[" + std::string(op_name(op)) + "] " + std::string(dtype_name(dtype)) +
                         " is not implemented on " + location() + " yet");
}

void GpuBackend::reduce(Op op, const TensorArg& src, int, const TensorArg&) { not_implemented(op, src.dtype); }
void GpuBackend::softmax(const TensorArg& src, const TensorArg&, bool log) {
  not_implemented(log ? Op::LogSoftmax : Op::Softmax, src.dtype);
}
void GpuBackend::rms_norm(const TensorArg& x, const TensorArg&, const TensorArg&, double) {
  not_implemented(Op::RmsNorm, x.dtype);
}
void GpuBackend::layer_norm(const TensorArg& x, const TensorArg&, const TensorArg&, const TensorArg&, double) {
  not_implemented(Op::LayerNorm, x.dtype);
}

}  // namespace wick::WICK_GPU_NS
