// The GPU backend's scan and sort entry points (host code; kernels in kernels/scan.cu, sort.cu).
#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

void GpuBackend::cumsum(const TensorArg& src, const TensorArg& dst) { kern::cumsum(enter("cumsum"), *this, src, dst); }

void GpuBackend::sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) {
  kern::sort(enter(values.data ? "sort" : "argsort"), *this, src, values, indices, descending);
}

}  // namespace wick::WICK_GPU_NS
