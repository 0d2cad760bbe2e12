#include "cpu/cpu_backend.h"

namespace wick::cpu {

void CpuBackend::reduce(Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) {
  throw UnsupportedError("[reduce] not implemented on cpu yet");
}

void CpuBackend::softmax(const TensorArg& src, const TensorArg& dst, bool log) {
  throw UnsupportedError("[softmax] not implemented on cpu yet");
}

void CpuBackend::rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps) {
  throw UnsupportedError("[rms_norm] not implemented on cpu yet");
}

void CpuBackend::layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst, double eps) {
  throw UnsupportedError("[layer_norm] not implemented on cpu yet");
}

void CpuBackend::cumsum(const TensorArg& src, const TensorArg& dst) {
  throw UnsupportedError("[cumsum] not implemented on cpu yet");
}

void CpuBackend::sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) {
  throw UnsupportedError("[sort] not implemented on cpu yet");
}

}  // namespace wick::cpu