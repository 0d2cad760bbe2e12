// The BLAS shim: one strided-batched GEMM under wick's own names, over cuBLAS (CUDA build) or
// rocBLAS (ROCm build). Like runtime.h, this header names no vendor type.
//
// Note [GPU GEMM precision]
// Every GEMM accumulates in f32 (f16, bf16, f32 operands) or f64 (f64 operands) and rounds once to
// the output type, as the CPU backend does. On NVIDIA, cuBLAS is told not to reduce in the output
// type (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) and f32 GEMMs do not use TF32 unless the
// user opts in: environment variable WICK_ALLOW_TF32=1 (read once, at the first GEMM), or
// set_allow_tf32(true) below from code inside the library. TF32 rounds the inputs to
// 10 mantissa bits, so f32 results then differ from the CPU's by about 1e-3 relative. rocBLAS has
// no TF32 mode on the architectures wick builds for; the switch does nothing there.
#pragma once

#include <cstdint>

#include "gpu/config.h"

namespace wick::WICK_GPU_NS::gpu {

enum class BlasType { F16, BF16, F32, F64 };

// One operand of a column-major GEMM: op(X) is X (trans false) or X^T, X stored column-major with
// leading dimension ld; matrix i of a batch starts batch_stride elements after matrix i - 1
// (0: every batch shares one matrix).
struct GemmOperand {
  const void* data = nullptr;
  BlasType type = BlasType::F32;
  bool trans = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

struct GemmOutput {
  void* data = nullptr;
  BlasType type = BlasType::F32;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// For each of `batch` matrices: C[m, n] = op(A)[m, k] op(B)[k, n] (column-major, C overwritten).
// Runs on `stream` (the backend's gpu::Stream::native()) of `device`, which must be current.
// The accumulation type follows Note [GPU GEMM precision]: f64 when the operands are f64, f32
// otherwise; A and B share a type; C is that type or f32 (for a widened result rounded later).
// Requires m, n, k, batch > 0. Sizes past 2^31 - 1: the CUDA build uses cuBLAS's 64-bit
// interface; the ROCm build splits m, n and batch into pieces rocBLAS's int can address, and
// throws UnsupportedError when k or a leading dimension does not fit.
void gemm_strided_batched(void* stream, int device, int64_t m, int64_t n, int64_t k, const GemmOperand& a,
                          const GemmOperand& b, const GemmOutput& c, int64_t batch, const char* op);

// The TF32 switch of Note [GPU GEMM precision] (process-wide; default off unless WICK_ALLOW_TF32=1).
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace wick::WICK_GPU_NS::gpu
