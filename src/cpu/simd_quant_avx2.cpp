// The quantized mat-vec tiles of the AVX2 level (Note [Quantized mat-vec kernels] in
// simd_quant_impl.h): 8 lanes, 16 registers, tiles of up to 8 rows of x.
#include <cstdint>

#include "cpu/simd_quant_impl.h"

namespace wick::cpu::simd::detail {

#ifdef WICK_SIMD_X86
namespace {

// The level's operations of the decoders (simd_quant_impl.h): lut by two VPERMPS (the low three
// bits of each index) and a blend on bit 3.
struct QOpsAvx2 {
  using F = Vec<8>::F;
  using I = Vec<8>::I;
  WICK_AVX2 I u8(const uint8_t* p) const {
    return reinterpret_cast<I>(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  WICK_AVX2 I i8(const uint8_t* p) const {
    return reinterpret_cast<I>(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static constexpr bool kRegLut = false;
  WICK_AVX2 F lut(const I& idx, const float* table) const {
    const __m256i i = reinterpret_cast<__m256i>(idx);
    const __m256 lo = _mm256_permutevar8x32_ps(_mm256_load_ps(table), i);
    const __m256 hi = _mm256_permutevar8x32_ps(_mm256_load_ps(table + 8), i);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(i, 28)));
  }
  WICK_AVX2 F fma(const F& a, const F& b, const F& c) const { return _mm256_fmadd_ps(a, b, c); }
  WICK_AVX2 float f16(const uint8_t* p) const { return _cvtsh_ss(q_u16(p)); }
};

template <class D, int M>
struct TileAvx2 {
  WICK_AVX2 __attribute__((flatten)) static void run(const QTileArgs& a) { qtile_v<8, D, M>(QOpsAvx2{}, a); }
};

}  // namespace

const QTiles* qtiles_avx2(QFormat f) { return QTileTable<TileAvx2, 1, 2, 3, 4, 5, 6, 7, 8>::get(f); }
#endif

}  // namespace wick::cpu::simd::detail
