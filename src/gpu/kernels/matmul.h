// Host helpers shared by the GPU matmul (matmul.cu) and convolutions (conv.cu): the dtype a GEMM
// runs in, and how a strided matrix looks to column-major BLAS.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/backend.h"
#include "gpu/config.h"
#include "gpu/kernels/scratch.h"
#include "gpu/runtime/blas.h"

namespace wick::WICK_GPU_NS::kern {

// Note [GPU GEMM dtypes]
// f16, bf16, f32 and f64 go to BLAS as they are (accumulating in f32 / f64, Note [GPU GEMM
// precision] in src/gpu/runtime/blas.h). f8e4m3 has no BLAS type: its operands are widened to f16,
// which holds every f8e4m3 value exactly (3 mantissa bits, exponents 2^-9 .. 2^8), the GEMM writes
// f32, and one cast rounds that to f8e4m3: one rounding, as on the CPU.
inline DType gemm_input_dtype(DType t) { return t == DType::F8E4M3 ? DType::F16 : t; }

inline gpu::BlasType blas_type(DType t) {
  switch (t) {
    case DType::F16:
      return gpu::BlasType::F16;
    case DType::BF16:
      return gpu::BlasType::BF16;
    case DType::F64:
      return gpu::BlasType::F64;
    default:
      return gpu::BlasType::F32;
  }
}

// How BLAS (column-major) sees the matrix X[rows, cols] whose element (r, c) is at r * rs + c * cs:
// trans false: X itself is column-major with leading dimension ld (element at r + c * ld);
// trans true: X^T is (X is row-major, element at r * ld + c). A dim of size 1 never steps, so its
// stride is free, but ld must still be at least the stored column length (BLAS requires
// ld >= max(1, rows of the stored matrix)), which rules out overlapping rows such as stride 0.
struct ColView {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

inline ColView col_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  if (rows == 1 || rs == 1) {
    const int64_t ld = cols == 1 ? r1 : cs;
    if (ld >= r1) return {true, false, ld};
  }
  if (cols == 1 || cs == 1) {
    const int64_t ld = rows == 1 ? c1 : rs;
    if (ld >= c1) return {true, true, ld};
  }
  return {};
}

}  // namespace wick::WICK_GPU_NS::kern
