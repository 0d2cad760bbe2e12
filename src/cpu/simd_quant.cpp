// The quantized mat-vec of simd_quant.h: the driver that packs chunks of x and runs a level's tile
// kernels over them (Note [Quantized mat-vec kernels] in simd_quant_impl.h), and the choice of level.
#include "cpu/simd_quant.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "cpu/simd_quant_impl.h"

namespace wick::cpu::simd {
namespace {

using detail::kQChunkFloats;
using detail::q_chunk_elems;
using detail::QTileArgs;
using detail::QTiles;

// qmatvec_f32 with the tiles of one format: the rows of x in passes of at most the largest tile
// (balanced), each padded to the next compiled tile; per pass, k in chunks of x packed for it.
void drive(const QTiles& tiles, int64_t block_elems, int64_t block_bytes, const uint8_t* w, int64_t w_stride,
           int64_t j0, int64_t j1, int64_t k, const float* x, int64_t ldx, int64_t m, float* out, int64_t ldo) {
  if (j1 <= j0 || m <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(out + i * ldo + j0, out + i * ldo + j1, 0.0f);
    return;
  }
  int max_rows = 1;
  for (int t = 1; t <= kQMatVecMaxRows; ++t)
    if (tiles.tile[t] != nullptr) max_rows = t;
  const int64_t passes = (m + max_rows - 1) / max_rows;
  alignas(64) float xp[kQChunkFloats];
  int64_t i0 = 0;
  for (int64_t p = 0; p < passes; ++p) {
    const int mp = static_cast<int>((m - i0 + (passes - p) - 1) / (passes - p));
    int tm = mp;
    while (tiles.tile[tm] == nullptr) ++tm;
    const int64_t c = q_chunk_elems(block_elems, tm);
    std::fill(xp + mp * c, xp + tm * c, 0.0f);
    for (int64_t c0 = 0; c0 < k; c0 += c) {
      const int64_t ce = std::min(c, k - c0);
      for (int i = 0; i < mp; ++i)
        std::memcpy(xp + i * c, x + (i0 + i) * ldx + c0, static_cast<size_t>(ce) * sizeof(float));
      const QTileArgs a{w + j0 * w_stride + c0 / block_elems * block_bytes,
                        w_stride,
                        j1 - j0,
                        ce / block_elems,
                        xp,
                        out + i0 * ldo + j0,
                        ldo,
                        mp,
                        c0 == 0};
      tiles.tile[tm](a);
    }
    i0 += mp;
  }
}

#ifdef WICK_SIMD_X86
template <QFormat F, bool kAvx512>
void qmatvec_entry(const uint8_t* w, int64_t w_stride, int64_t j0, int64_t j1, int64_t k, const float* x, int64_t ldx,
                   int64_t m, float* out, int64_t ldo) {
  const QTiles* tiles = kAvx512 ? detail::qtiles_avx512(F) : detail::qtiles_avx2(F);
  drive(*tiles, qformat_info(F).block_elems, qformat_info(F).block_bytes, w, w_stride, j0, j1, k, x, ldx, m, out, ldo);
}

template <bool kAvx512>
QMatVecFn level_entry(QFormat f) {
  const QTiles* tiles = kAvx512 ? detail::qtiles_avx512(f) : detail::qtiles_avx2(f);
  if (tiles == nullptr) return nullptr;
  switch (f) {
#define WICK_X(e, name, id, elems, bytes) \
  case QFormat::e:                        \
    return qmatvec_entry<QFormat::e, kAvx512>;
    WICK_QFORMATS(WICK_X)
#undef WICK_X
  }
  return nullptr;
}
#endif

}  // namespace

QMatVecFn qmatvec_kernel(QFormat format, Isa isa) {
  (void)kernels(isa);  // throws above detected()
#ifdef WICK_SIMD_X86
  if (isa >= Isa::Avx512) return level_entry<true>(format);
  if (isa == Isa::Avx2) return level_entry<false>(format);
#endif
  return nullptr;
}

bool qmatvec_f32(QFormat format, const uint8_t* w, int64_t w_stride, int64_t j0, int64_t j1, int64_t k, const float* x,
                 int64_t ldx, int64_t m, float* out, int64_t ldo) {
  static const std::array<QMatVecFn, kNumQFormats> kFns = [] {
    std::array<QMatVecFn, kNumQFormats> fns{};
    for (int f = 0; f < kNumQFormats; ++f) fns[f] = qmatvec_kernel(static_cast<QFormat>(f), active());
    return fns;
  }();
  const QMatVecFn fn = kFns[static_cast<int>(format)];
  if (fn == nullptr || m > kQMatVecMaxRows) return false;
  fn(w, w_stride, j0, j1, k, x, ldx, m, out, ldo);
  return true;
}

}  // namespace wick::cpu::simd
