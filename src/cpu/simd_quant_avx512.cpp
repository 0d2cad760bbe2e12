// The quantized mat-vec tiles of the AVX-512F level (Note [Quantized mat-vec kernels] in
// simd_quant_impl.h): 16 lanes, 32 registers, tiles of up to 16 rows of x.
#include <cstdint>

#include "cpu/simd_quant_impl.h"

namespace wick::cpu::simd::detail {

#ifdef WICK_SIMD_X86
namespace {

// The level's operations of the decoders (simd_quant_impl.h): lut by VPERMPS, which reads the low
// four bits of each index.
struct QOpsAvx512 {
  using F = Vec<16>::F;
  using I = Vec<16>::I;
  WICK_AVX512 I u8(const uint8_t* p) const {
    return reinterpret_cast<I>(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  WICK_AVX512 I i8(const uint8_t* p) const {
    return reinterpret_cast<I>(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static constexpr bool kRegLut = true;
  WICK_AVX512 F lutv(const I& idx, const F& table) const {
    return _mm512_permutexvar_ps(reinterpret_cast<__m512i>(idx), table);
  }
  WICK_AVX512 F lut(const I& idx, const float* table) const { return lutv(idx, _mm512_load_ps(table)); }
  WICK_AVX512 F fma(const F& a, const F& b, const F& c) const { return _mm512_fmadd_ps(a, b, c); }
  WICK_AVX512 float f16(const uint8_t* p) const { return _cvtsh_ss(q_u16(p)); }
};

template <class D, int M>
struct TileAvx512 {
  WICK_AVX512 __attribute__((flatten)) static void run(const QTileArgs& a) { qtile_v<16, D, M>(QOpsAvx512{}, a); }
};

}  // namespace

const QTiles* qtiles_avx512(QFormat f) {
  return QTileTable<TileAvx512, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16>::get(f);
}
#endif

}  // namespace wick::cpu::simd::detail
