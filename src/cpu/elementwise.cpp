#include "cpu/cpu_backend.h"

namespace wick::cpu {

void CpuBackend::unary(Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) {
  throw UnsupportedError("[unary] not implemented on cpu yet");
}

void CpuBackend::binary(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  throw UnsupportedError("[binary] not implemented on cpu yet");
}

void CpuBackend::where_cond(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  throw UnsupportedError("[where_cond] not implemented on cpu yet");
}

}  // namespace wick::cpu