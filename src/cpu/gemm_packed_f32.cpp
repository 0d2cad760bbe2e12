// The f32 scheme of the packed GEMMs (Isa::Avx512 and above, Note [f32 GEMM]): the kernel, whole
// and for the last rows of a, the packing of the operands' panels and the stores of a tile.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "cpu/gemm_packed.h"

#if defined(WICK_PACKED_GEMM)
namespace wick::cpu::packed {

// Note [f32 GEMM]
// c = a @ b for f32 with AVX-512F, in the scheme of Note [bf16 GEMM] with one element of k per step
// instead of a pair: b in panels of kNR = 32 columns (per k two 64-byte lines), a in panels of kMR
// = 14 rows (per k the rows' values, each broadcast to 16 lanes by the kernel), a tile of 14 x 32
// sums in 28 of the 32 vector registers, k blocks of kF32KcMax steps (a panel of b, 32 KiB, stays
// in L1). Packing copies 16 lanes at a time where the lanes are adjacent in memory, transposes
// blocks of 16 lanes by 16 k in registers where each lane's k is adjacent, and copies element by
// element otherwise. Each output is one chain of fused multiply-adds over k in increasing order from
// 0, each step rounded to nearest even, denormals kept; OpenBLAS's sgemm, which serves f32 below
// Isa::Avx512 and products under kOwnF32Min multiply-adds (where a 14 x 32 tile around a small
// product, the packing and the bookkeeping of a call weigh more), orders its sums its own way,
// within the same error bound. The convolutions run on this kernel too, b made by a MatSource as it
// is packed (Note [CPU conv on the packed GEMMs] in conv.cpp).

// The first R rows of c (kMR x kNR f32, row stride ldc) = the tile's sums over ks steps of k of the
// packed panels a and b (pack_f32), added to what c holds where `add`.
template <int R>
WICK_AVX512 void f32_kernel_rows(const float* a, const float* b, int64_t ks, float* c, int64_t ldc, bool add) {
  Acc<R> acc;
  load_acc<R>(acc, c, ldc, add);
  for (int64_t p = 0; p < ks; ++p) {
    __m512 bv[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) bv[v] = _mm512_loadu_ps(b + p * kNR + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[p * kMR + r]);
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  store_acc<R>(acc, c, ldc);
}
template void f32_kernel_rows<kMR>(const float*, const float*, int64_t, float*, int64_t, bool);

// The kernel for the last row panel of a, where m is not a multiple of kMR: only its `rows` rows
// (each output's sum as in f32_kernel_rows<kMR>), so that the padding rows cost no multiply-adds.
namespace {
using F32Kernel = void (*)(const float*, const float*, int64_t, float*, int64_t, bool);
template <int... R>
constexpr std::array<F32Kernel, sizeof...(R) + 1> f32_kernels(std::integer_sequence<int, R...>) {
  return {nullptr, f32_kernel_rows<R + 1>...};
}
constexpr auto kF32Kernels = f32_kernels(std::make_integer_sequence<int, kMR>());
}  // namespace

void f32_kernel_part(const float* a, const float* b, int64_t ks, float* c, int64_t ldc, bool add, int64_t rows) {
  kF32Kernels[static_cast<size_t>(rows)](a, b, ks, c, ldc, add);
}

// Packs a panel of R lanes (rows of a, columns of b) for f32_kernel_rows: out[i * R + l] = element
// (l, i), which is src[l * sl + i * sk] for lane l < lanes and i < k, else 0, for i < kpad (at
// least k).
template <int R>
WICK_AVX512 void pack_f32(const float* src, int64_t lanes, int64_t k, int64_t sl, int64_t sk, int64_t kpad,
                          float* out) {
  static_assert(R <= 32, "two 16-lane vectors per k");
  if (sl == 1 || lanes == 1) {  // the lanes of one k adjacent: vector copies
    const __mmask16 in_lo = lanes16(lanes), in_hi = lanes16(lanes - 16);
    const __mmask16 out_lo = lanes16(R), out_hi = lanes16(R - 16);
    for (int64_t i = 0; i < k; ++i) {
      _mm512_mask_storeu_ps(out + i * R, out_lo, _mm512_maskz_loadu_ps(in_lo, src + i * sk));
      if (R > 16) _mm512_mask_storeu_ps(out + i * R + 16, out_hi, _mm512_maskz_loadu_ps(in_hi, src + i * sk + 16));
    }
  } else if (sk == 1) {  // each lane's k adjacent: blocks of 16 lanes x 16 k, transposed in registers
    for (int64_t l0 = 0; l0 < R; l0 += 16) {
      const __mmask16 out_mask = lanes16(R - l0);
      for (int64_t i0 = 0; i0 < k; i0 += 16) {
        const __mmask16 in = lanes16(k - i0);
        __m512 r[16];
#pragma GCC unroll 16
        for (int64_t l = 0; l < 16; ++l)
          r[l] = l0 + l < lanes ? _mm512_maskz_loadu_ps(in, src + (l0 + l) * sl + i0) : _mm512_setzero_ps();
        transpose16(r);
        const int64_t n = std::min<int64_t>(16, k - i0);
        for (int64_t i = 0; i < n; ++i) _mm512_mask_storeu_ps(out + (i0 + i) * R + l0, out_mask, r[i]);
      }
    }
  } else {
    for (int64_t i = 0; i < k; ++i)
      for (int64_t l = 0; l < R; ++l) out[i * R + l] = l < lanes ? src[l * sl + i * sk] : 0.0f;
  }
  std::memset(out + k * R, 0, static_cast<size_t>((kpad - k) * R) * sizeof(float));
}
template void pack_f32<kMR>(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, float*);
template void pack_f32<kNR>(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, float*);

// The first mr x nr (nr <= kNR) sums of the tile c (row stride ldc) into d (strides rs, cs).
WICK_AVX512 void store_f32(const float* c, int64_t ldc, int64_t mr, int64_t nr, float* d, int64_t rs, int64_t cs) {
  if (cs != 1) {
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t j = 0; j < nr; ++j) d[r * rs + j * cs] = c[r * ldc + j];
    return;
  }
  static_assert(kNR == 32, "two vectors per row of a tile");
  const __mmask16 lo = lanes16(nr), hi = lanes16(nr - 16);
  for (int64_t r = 0; r < mr; ++r) {
    _mm512_mask_storeu_ps(d + r * rs, lo, _mm512_loadu_ps(c + r * ldc));
    _mm512_mask_storeu_ps(d + r * rs + 16, hi, _mm512_loadu_ps(c + r * ldc + 16));
  }
}

}  // namespace wick::cpu::packed
#endif
