#include "cpu/cpu_backend.h"

namespace wick::cpu {

void CpuBackend::matmul(const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  throw UnsupportedError("[matmul] not implemented on cpu yet");
}

}  // namespace wick::cpu