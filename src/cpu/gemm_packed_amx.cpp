// The AMX scheme of the packed bf16 GEMM (Isa::Amx, Note [AMX GEMM]): the tile configuration, the
// kernel and the packing of a; and the product of a few rows with a weight read in place (Note [AMX
// GEMM with the weight in place]).
#include <algorithm>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm_packed.h"
#include "cpu/parallel.h"

#if defined(WICK_PACKED_GEMM)
namespace wick::cpu::packed {

// Note [AMX GEMM]
// At Isa::Amx the tiles multiply: eight registers of up to 16 rows of 64 bytes, shaped by one
// configuration (kTileConfig) that a thread loads before its first tile instruction and releases
// when its blocks are done. TDPBF16PS adds to a 16 x 16 tile of f32 sums the products of a tile of a
// (16 rows of 16 k-pairs) and one of b (16 k-pairs of 16 columns' pairs); the kernel's 32 x 32
// block of c is 2 x 2 tiles, loading two tiles of a and two of b per four TDPBF16PS. b is packed as
// for VDPBF16PS (pack_panel<kNR>), a with its k along the tile rows (pack_rows), k padded with zeros
// to a multiple of 32 in both (a padded term is 0 * 0, never 0 * inf), so every tile has one shape;
// every tile row starts 64-byte aligned (a row across two cache lines loads several times slower).
// Rounding (Intel's manual): per instruction and output, the 16 pairs' even and odd products are
// summed in two chains of fused multiply-adds from 0, then added to the output's sum; denormals
// flush to zero as with VDPBF16PS (Note [bf16 GEMM]). Within f32 accumulation's error bound; the
// last bits differ from the f32 path and from the VDPBF16PS kernel.
namespace {

// The tile configuration (LDTILECFG's 64-byte operand): palette 1, tiles 0..7 of 16 rows of 64
// bytes; the reserved bytes and tiles 8..15 must be 0. (A constant: GCC's _tile_loadconfig tells
// the compiler it reads only the first 8 bytes, so the object must not be written just before.)
struct alignas(64) TileConfig {
  uint8_t palette_id, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);
constexpr TileConfig kTileConfig = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

}  // namespace

WICK_AMX void tiles_begin() { _tile_loadconfig(&kTileConfig); }
WICK_AMX void tiles_end() { _tile_release(); }

namespace {

// c (32 x 32 f32, row stride ldc; 32 x 16 where !Two) = the sums over kp k-pairs (a multiple of 16)
// of 32 rows of a, tiles of 16 rows at a row stride of a_rs elements, each block of 16 pairs a_ks
// elements after the last, and a packed panel of b (pack_panel<kNR>), added to what c holds where
// `add`. Packed a (pack_rows) has a_rs = 32 and a_ks = 1024; a read in place (Note [AMX GEMM with
// the weight in place]) its row stride and 32. The thread must have loaded kTileConfig
// (tiles_begin). (GCC's tile macros take the register numbers as literals.)
template <bool Two>
WICK_AMX WICK_INLINE void amx_tiles(const uint16_t* a, int64_t a_rs, int64_t a_ks, const uint16_t* b, int64_t kp,
                                    float* c, int64_t ldc, bool add) {
  const int64_t cstride = ldc * static_cast<int64_t>(sizeof(float)), a_stride = a_rs * 2;  // bytes
  constexpr int64_t b_stride = 2 * kNR * 2;
  if (add) {
    _tile_loadd(0, c, cstride);
    _tile_loadd(2, c + 16 * ldc, cstride);
    if (Two) {
      _tile_loadd(1, c + 16, cstride);
      _tile_loadd(3, c + 16 * ldc + 16, cstride);
    }
  } else {
    _tile_zero(0);
    _tile_zero(2);
    if (Two) {
      _tile_zero(1);
      _tile_zero(3);
    }
  }
  for (int64_t p = 0; p < kp; p += kAmxPairs) {
    const uint16_t* ap = a + p / kAmxPairs * a_ks;  // the 32 rows' 32 elements of pairs p..p+15
    const uint16_t* bp = b + p * 2 * kNR;           // pairs p..p+15 of the 32 columns
    _tile_loadd(4, ap, a_stride);
    _tile_loadd(6, bp, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    if (Two) {
      _tile_loadd(7, bp + 32, b_stride);
      _tile_dpbf16ps(1, 4, 7);
    }
    _tile_loadd(5, ap + 16 * a_rs, a_stride);
    _tile_dpbf16ps(2, 5, 6);
    if (Two) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cstride);
  _tile_stored(2, c + 16 * ldc, cstride);
  if (Two) {
    _tile_stored(1, c + 16, cstride);
    _tile_stored(3, c + 16 * ldc + 16, cstride);
  }
}

}  // namespace

// The scheme's kernel: packed panels of a (pack_rows) and b (pack_panel<kNR>).
WICK_AMX void amx_kernel(const uint16_t* a, const uint16_t* b, int64_t kp, float* c, int64_t ldc, bool add) {
  amx_tiles<true>(a, 2 * kAmxPairs, kAmxMR * 2 * kAmxPairs, b, kp, c, ldc, add);
}

// Packs a panel of kAmxMR rows of a for amx_kernel: out[(i / 32 * 32 + l) * 32 + i % 32] = element
// (l, i), which is src[l * sr + i * sk] for row l < rows and i < k, else 0, for i < 2 * kpad (kpad a
// multiple of 16, at least (k + 1) / 2).
WICK_BF16 void pack_rows(const uint16_t* src, int64_t rows, int64_t k, int64_t sr, int64_t sk, int64_t kpad,
                         uint16_t* out) {
  constexpr int64_t kb_elems = kAmxMR * 2 * kAmxPairs;  // one block of 32 k
  const int64_t nkb = kpad / kAmxPairs;
  if (sk == 1) {  // rows contiguous: 64-byte loads, masked past k
    for (int64_t kb = 0; kb < nkb; ++kb) {
      const int64_t left = k - kb * 32;
      const __mmask32 in = static_cast<__mmask32>(left >= 32 ? ~0u : left <= 0 ? 0u : (1u << left) - 1);
      for (int64_t l = 0; l < kAmxMR; ++l) {
        const __m512i x = l < rows ? _mm512_maskz_loadu_epi16(in, src + l * sr + kb * 32) : _mm512_setzero_si512();
        _mm512_storeu_si512(out + kb * kb_elems + l * 32, x);
      }
    }
    return;
  }
  std::memset(out, 0, static_cast<size_t>(nkb * kb_elems) * sizeof(uint16_t));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t l = 0; l < rows; ++l) out[i / 32 * kb_elems + l * 32 + i % 32] = src[l * sr + i * sk];
}

// Note [AMX GEMM with the weight in place]
// A product of a few rows of a (tokens) with b = W^T, W a weight stored [n, k] whose rows are
// 64-byte aligned, runs as c^T = W a^T with W as the tiles' a operand, read where it lies (a tile of
// W is 16 of its rows, 16 k-pairs of each: TILELOADD at W's row stride), so W is neither copied nor
// transposed. The few rows of a are packed once as b's panels are (pack_panel<kNR>, by all threads
// in chunks of k). Each block is 32 rows of W against every panel of a over the whole of k, its
// 32 x 32 tile of c^T stored transposed into c. Where k is not a multiple of 32 the last 32
// elements of the rows come from a packed copy (pack_rows, zeros past k), as do the rows of W's
// last block where n is not a multiple of 32. Per output the k-pairs come in the same blocks of 16
// and the same order as in the packed GEMM, and a product of two bf16 is exact: the results are the
// packed GEMM's, bit for bit. Up to kInPlaceMaxRows rows of a (beyond, the packed GEMM is as fast);
// matmul sends products of 1 to 8 rows here too (Note [CPU matrix-vector products] in matmul.cpp).
namespace {

constexpr int64_t kInPlacePackPairs = 256;  // k-pairs of a panel of a packed at a time

// The 32 x 32 tile t of c^T (row stride kNR: rows j of W, columns i of a), its first `rows` x `cols`,
// into c at (i, j) = d[i * rs + j * cs], rounded as store_tile rounds.
WICK_BF16 void store_tile_transposed(const float* t, int64_t rows, int64_t cols, bf16* d, int64_t rs, int64_t cs) {
  if (rs == 1) return store_tile(t, kNR, rows, cols, d, cs, rs);  // c^T has unit stride along its rows
  if (cs != 1) {
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t i = 0; i < cols; ++i) d[i * rs + j * cs] = bf16(t[j * kNR + i]);
    return;
  }
  for (int64_t j0 = 0; j0 < rows; j0 += 16)
    for (int64_t i0 = 0; i0 < cols; i0 += 16) {
      __m512 r[16];
#pragma GCC unroll 16
      for (int64_t j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(t + (j0 + j) * kNR + i0);
      transpose16(r);
      const __mmask16 js = lanes16(rows - j0);
      for (int64_t i = 0; i < std::min<int64_t>(16, cols - i0); ++i)
        _mm256_mask_storeu_epi16(&d[(i0 + i) * rs + j0].bits, js, (__m256i)_mm512_cvtneps_pbh(r[i]));
    }
}

// The tile (32 x 32 f32, row stride kNR; the first 16 columns where !Two) of c^T for the 32 rows of
// W at w (row stride ldw), against the packed panel of a at ap (kp pairs): the first `full` pairs
// read in place and the rest from wpack (pack_rows of the pairs from `full` on); all from wpack
// where `packed` (pack_rows of the rows' whole k).
template <bool Two>
WICK_AMX void amx_weight_block(const uint16_t* w, int64_t ldw, bool packed, int64_t full, int64_t kp,
                               const uint16_t* wpack, const uint16_t* ap, float* tile) {
  constexpr int64_t packed_rs = 2 * kAmxPairs, packed_ks = kAmxMR * 2 * kAmxPairs;
  if (packed) return amx_tiles<Two>(wpack, packed_rs, packed_ks, ap, kp, tile, kNR, false);
  if (full > 0) amx_tiles<Two>(w, ldw, 2 * kAmxPairs, ap, full, tile, kNR, false);
  if (full < kp) amx_tiles<Two>(wpack, packed_rs, packed_ks, ap + full * 2 * kNR, kp - full, tile, kNR, full > 0);
}

}  // namespace

// gemm_bf16's products (at least one) at Isa::Amx, each bf16_weight_as_is.
void amx_gemm_in_place(const std::vector<Bf16Gemm>& all) {
  const int64_t count = static_cast<int64_t>(all.size());
  const int64_t m = all[0].c.rows, n = all[0].c.cols, k = all[0].a.cols;
  const int64_t kp = (k + 2 * kAmxPairs - 1) / (2 * kAmxPairs) * kAmxPairs;  // pairs of the packed a
  const int64_t full = k / (2 * kAmxPairs) * kAmxPairs;                      // pairs of W read in place
  const int64_t apan = (m + kNR - 1) / kNR, a_elems = apan * kp * 2 * kNR;
  const int64_t nblk = (n + kAmxMR - 1) / kAmxMR;
  const int64_t per_group = std::max<int64_t>(1, kPackBytes / (a_elems * 2));
  for (int64_t g0 = 0; g0 < count; g0 += per_group) {
    const int64_t gn = std::min(per_group, count - g0);
    const Bf16Gemm* prods = all.data() + g0;
    const Scratch<uint16_t> pa = scratch<uint16_t>(gn * a_elems);
    const int64_t chunks = (kp + kInPlacePackPairs - 1) / kInPlacePackPairs;
    parallel_for(gn * apan * chunks, 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t pi = u / (apan * chunks), ip = u / chunks % apan, q0 = u % chunks * kInPlacePackPairs;
        const MatRef<const bf16>& a = prods[pi].a;
        const int64_t i0 = ip * kNR, kk = std::min(k - 2 * q0, 2 * kInPlacePackPairs);
        uint16_t* out = pa.get() + pi * a_elems + (ip * kp + q0) * 2 * kNR;
        pack_panel<kNR>(storage(a.p + i0 * a.rs + 2 * q0 * a.cs), std::min<int64_t>(kNR, m - i0), kk, a.rs, a.cs,
                        std::min(kInPlacePackPairs, kp - q0), out);
      }
    });
    parallel_blocks(gn * nblk, 1, [&](auto&& next) {  // Note [Dynamic blocks]
      alignas(64) float tile[kAmxMR * kNR];
      const Scratch<uint16_t> wpack = scratch<uint16_t>(kp * 2 * kAmxMR);  // a block's rows or the tail of k
      tiles_begin();
      for (int64_t t = next(); t >= 0; t = next()) {
        const int64_t pi = t / nblk, j0 = t % nblk * kAmxMR, rows = std::min<int64_t>(kAmxMR, n - j0);
        const Bf16Gemm& g = prods[pi];
        const uint16_t* w = storage(g.b.p + j0 * g.b.cs);  // row j of W: column j0 + j of b
        const bool packed = rows < kAmxMR;
        if (packed) {
          pack_rows(w, rows, k, g.b.cs, 1, kp, wpack.get());
        } else if (full < kp) {
          pack_rows(w + 2 * full, rows, k - 2 * full, g.b.cs, 1, kAmxPairs, wpack.get());
        }
        for (int64_t ip = 0; ip < apan; ++ip) {
          const uint16_t* ap = pa.get() + pi * a_elems + ip * kp * 2 * kNR;
          const int64_t cols = std::min<int64_t>(kNR, m - ip * kNR);
          if (cols > 16) {
            amx_weight_block<true>(w, g.b.cs, packed, full, kp, wpack.get(), ap, tile);
          } else {
            amx_weight_block<false>(w, g.b.cs, packed, full, kp, wpack.get(), ap, tile);
          }
          store_tile_transposed(tile, rows, cols, g.c.p + ip * kNR * g.c.rs + j0 * g.c.cs, g.c.rs, g.c.cs);
        }
      }
      tiles_end();
    });
  }
}

}  // namespace wick::cpu::packed
#endif
