// Vector kernels of the CPU backend's quantized matrix-vector product (CpuBackend::qmatmul for few
// rows of x), chosen at run time like the kernels of simd.h: AVX2 (with FMA and F16C) and AVX-512F
// levels; the baseline has none (the scalar codec path runs there). See Note [Quantized mat-vec
// kernels] in simd_quant_impl.h.
#pragma once

#include <cstdint>

#include "cpu/simd.h"
#include "wick/qformat.h"

namespace wick::cpu::simd {

// out[i * ldo + j] = sum_e x[i * ldx + e] * W[j][e] for rows j in [j0, j1) of W and i in [0, m):
// W's row j at w + j * w_stride (blocks of the format), k elements per row (a whole number of
// blocks), x f32, 0 <= m <= kQMatVecMaxRows. Each weight is decoded to the f32 value of
// Codec<F>::dequantize_sub (the same bits) and multiplied with x in f32 (FMA), the sums in an order of
// their own: the result is within f32 accumulation error of the exact dot product.
using QMatVecFn = void (*)(const uint8_t* w, int64_t w_stride, int64_t j0, int64_t j1, int64_t k, const float* x,
                           int64_t ldx, int64_t m, float* out, int64_t ldo);

inline constexpr int64_t kQMatVecMaxRows = 16;

// The kernel of `format` at level `isa`, or null where that level has none; throws
// wick::UnsupportedError above detected() (as kernels(isa)).
QMatVecFn qmatvec_kernel(QFormat format, Isa isa);

// qmatvec_kernel(format, active()) on these arguments. Returns false (nothing written) when there
// is no vector kernel for the format at the active level, or m > kQMatVecMaxRows.
bool qmatvec_f32(QFormat format, const uint8_t* w, int64_t w_stride, int64_t j0, int64_t j1, int64_t k, const float* x,
                 int64_t ldx, int64_t m, float* out, int64_t ldo);

}  // namespace wick::cpu::simd
