#include "cpu/cpu_backend.h"

namespace wick::cpu {

void CpuBackend::index_select(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) {
  throw UnsupportedError("[index_select] not implemented on cpu yet");
}

void CpuBackend::gather(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) {
  throw UnsupportedError("[gather] not implemented on cpu yet");
}

void CpuBackend::scatter(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim, bool add) {
  throw UnsupportedError("[scatter] not implemented on cpu yet");
}

void CpuBackend::index_add(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim) {
  throw UnsupportedError("[index_add] not implemented on cpu yet");
}

}  // namespace wick::cpu