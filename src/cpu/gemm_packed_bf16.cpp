// The VDPBF16PS scheme of the packed bf16 GEMM (Isa::Avx512Bf16, Note [bf16 GEMM]): its kernel, the
// packing of the operands' panels (shared with the AMX scheme for b), the rounded stores of a tile
// (Note [bf16 GEMM stores]), and the dot products of a weight's rows for products of a few rows
// (Note [bf16 dot products of a weight's rows]).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm_packed.h"
#include "cpu/parallel.h"

#if defined(WICK_PACKED_GEMM)
namespace wick::cpu::packed {

// Note [bf16 GEMM]
// c = a @ b for bf16 without widening the operands to f32 (below Isa::Avx512Bf16: f32 copies for
// OpenBLAS's sgemm). VDPBF16PS adds both products of a pair of bf16 lanes, a[2i] b[2i] + a[2i + 1]
// b[2i + 1], to a lane's f32 sum, so both operands are packed with the pairs of k adjacent (k padded
// to even with a zero): b in panels of kNR columns (per k-pair a 64-byte line per 16 columns), a in
// panels of kMR rows (per k-pair the rows' pairs, each broadcast to 16 lanes by the kernel); rows
// and columns past m and n are zero. A tile of kMR x kNR sums lives in 28 of the 32 vector registers.
// Isa::Amx has its own kernel and packing of a (Note [AMX GEMM]); the driver: Note [Packed GEMM
// blocking]. Each output is one f32 lane from 0 over the k-pairs in increasing order, a pair two
// fused multiply-adds (the odd element's first; bf16 products are exact in f32), rounded once to
// bf16 (bf16::from_f32). VDPBF16PS ignores MXCSR: denormal inputs count as zero and denormal results
// flush to zero, where the f32 path keeps both; within f32 accumulation's error bound.

// c (kMR x kNR f32, row stride ldc) = the tile's sums over kp k-pairs of the packed panels a and
// b, added to what c holds where `add`.
WICK_BF16 void tile_kernel(const uint16_t* a, const uint16_t* b, int64_t kp, float* c, int64_t ldc, bool add) {
  Acc<> acc;
  load_acc(acc, c, ldc, add);
  for (int64_t p = 0; p < kp; ++p) {
    __m512i bv[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) bv[v] = _mm512_loadu_si512(b + p * 2 * kNR + 32 * v);
#pragma GCC unroll 16
    for (int r = 0; r < kMR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + p * 2 * kMR + 2 * r, 4);
      const __m512i av = _mm512_set1_epi32(pair);
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)av, (__m512bh)bv[v]);
    }
  }
  store_acc(acc, c, ldc);
}

// Note [bf16 GEMM stores]
// store_tile rounds a tile's sums to bf16 by VCVTNE2PS2BF16, one instruction per row of 32. It
// rounds to nearest even and quiets NaN as bf16::from_f32 does, and treats denormal inputs as zero,
// which changes nothing here: the sums come out of VDPBF16PS or TDPBF16PS, which flush denormal
// results to zero.

// The first mr x nr (nr <= kNR) sums of the tile c (row stride ldc, kNR columns readable) rounded
// into d (strides rs, cs), as bf16::from_f32: to nearest even, NaN quieted (Note [bf16 GEMM
// stores]).
WICK_BF16 void store_tile(const float* c, int64_t ldc, int64_t mr, int64_t nr, bf16* d, int64_t rs, int64_t cs) {
  if (cs != 1) {
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t j = 0; j < nr; ++j) d[r * rs + j * cs] = bf16(c[r * ldc + j]);
    return;
  }
  static_assert(kNR == 32, "one VCVTNE2PS2BF16 per row of a tile");
  const __mmask32 cols = static_cast<__mmask32>(nr >= 32 ? ~0u : (1u << nr) - 1);
  for (int64_t r = 0; r < mr; ++r) {
    const __m512 lo = _mm512_loadu_ps(c + r * ldc), hi = _mm512_loadu_ps(c + r * ldc + 16);
    _mm512_mask_storeu_epi16(&d[r * rs].bits, cols, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

// Packs a panel of R lanes (rows of a, columns of b) for the kernel: out[(p * R + l) * 2 + s] =
// element (l, 2p + s), which is src[l * sl + i * sk] for lane l < lanes and i < k, else 0, for the
// kpad pairs p < kpad (at least (k + 1) / 2).
template <int R>
WICK_BF16 void pack_panel(const uint16_t* src, int64_t lanes, int64_t k, int64_t sl, int64_t sk, int64_t kpad,
                          uint16_t* out) {
  static_assert(R <= 32, "one 32-lane vector of 16-bit elements per k");
  const int64_t kp = (k + 1) / 2, k2 = k / 2;
  if (sl == 1 || lanes == 1) {
    // Lanes adjacent: the lanes of elements 2p and 2p + 1 interleaved, by two permutes.
    alignas(64) static constexpr uint16_t kLo[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i lo_idx = _mm512_load_si512(kLo), hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
    const __mmask32 in = static_cast<__mmask32>(lanes >= 32 ? ~0u : (1u << lanes) - 1);
    const __mmask32 out_lo = static_cast<__mmask32>(R >= 16 ? ~0u : (1u << (2 * R)) - 1);
    const __mmask32 out_hi = static_cast<__mmask32>(R <= 16 ? 0u : R >= 32 ? ~0u : (1u << (2 * (R - 16))) - 1);
    for (int64_t p = 0; p < kp; ++p) {
      const __m512i x = _mm512_maskz_loadu_epi16(in, src + 2 * p * sk);
      const __m512i y = p < k2 ? _mm512_maskz_loadu_epi16(in, src + (2 * p + 1) * sk) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi16(out + p * 2 * R, out_lo, _mm512_permutex2var_epi16(x, lo_idx, y));
      if (R > 16) _mm512_mask_storeu_epi16(out + p * 2 * R + 32, out_hi, _mm512_permutex2var_epi16(x, hi_idx, y));
    }
    std::memset(out + kp * 2 * R, 0, static_cast<size_t>((kpad - kp) * 2 * R) * sizeof(uint16_t));
    return;
  }
  if (sk == 1) {
    // Each lane's k adjacent (b = W^T of a row-major W, a row-major a): a pair is a 32-bit element
    // of its lane, and a panel the transpose of the lanes' rows of pairs, by blocks of 16 lanes x 16
    // pairs in registers (a missing odd element of the last pair loads as 0).
    for (int64_t l0 = 0; l0 < R; l0 += 16) {
      const __mmask16 out_mask = lanes16(R - l0);
      for (int64_t p0 = 0; p0 < kp; p0 += 16) {
        const int64_t left = k - 2 * p0;
        const __mmask32 in = static_cast<__mmask32>(left >= 32 ? ~0u : (1u << left) - 1);
        __m512 r[16];
#pragma GCC unroll 16
        for (int64_t l = 0; l < 16; ++l)
          r[l] = l0 + l < lanes ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(in, src + (l0 + l) * sl + 2 * p0))
                                : _mm512_setzero_ps();
        transpose16(r);
        const int64_t np = std::min<int64_t>(16, kp - p0);
        for (int64_t p = 0; p < np; ++p)
          _mm512_mask_storeu_ps(reinterpret_cast<float*>(out + (p0 + p) * 2 * R + 2 * l0), out_mask, r[p]);
      }
    }
    std::memset(out + kp * 2 * R, 0, static_cast<size_t>((kpad - kp) * 2 * R) * sizeof(uint16_t));
    return;
  }
  std::memset(out, 0, static_cast<size_t>(kpad * 2 * R) * sizeof(uint16_t));
  for (int64_t l = 0; l < lanes; ++l) {
    const uint16_t* s = src + l * sl;
    uint16_t* o = out + 2 * l;
    for (int64_t p = 0; p < k2; ++p) {
      o[p * 2 * R] = s[2 * p * sk];
      o[p * 2 * R + 1] = s[(2 * p + 1) * sk];
    }
    if (k2 < kp) o[k2 * 2 * R] = s[2 * k2 * sk];
  }
}

template void pack_panel<kMR>(const uint16_t*, int64_t, int64_t, int64_t, int64_t, int64_t, uint16_t*);
template void pack_panel<kNR>(const uint16_t*, int64_t, int64_t, int64_t, int64_t, int64_t, uint16_t*);

// Note [bf16 dot products of a weight's rows]
// At Isa::Avx512Bf16 (VDPBF16PS without AMX) a product of a few rows of a with b = W^T, W stored
// [n, k] with unit stride along k, is a set of dot products of W's rows with a's: a block of kDotW
// rows of W against up to kDotA rows of a keeps one 16-lane f32 sum per pair of rows in registers
// and per 32 elements of k loads each of its rows once. Each block reads all of a's rows again, so
// blocks take as many rows of W as the registers hold without spilling (4 x 6 sums). W is read as
// it lies, once; a's rows (copied once into rows of k rounded up to 32 with zeros, so that only W's
// last 32 elements need a masked load) stay in cache. Each output is the same sum in the same order
// whatever the number of rows of a (its lanes over k in steps of 32, then lane_sum), so a token's
// result does not depend on its batch (matmul sends single rows here too, Note [CPU matrix-vector
// products]). Rounding and denormals as Note [bf16 GEMM].
namespace {

constexpr int64_t kDotW = 4;  // rows of W per block
constexpr int kDotA = 6;      // rows of a per block, at most

// The sum of v's 16 lanes, in a fixed order (halves added, then their halves, ...).
WICK_AVX512 WICK_INLINE float lane_sum(__m512 v) {
  const __m256 h = _mm512_castps512_ps256(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2))));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 e = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(e, _mm_shuffle_ps(e, e, 1)));
}

// sums[r * A + i] = the dot product of row r < R of W (at w, row stride ldw, k elements) and row i
// of a (at x, row stride ldx, k rounded up to 32 readable, zeros past k).
template <int R, int A>
WICK_BF16 void dot_block(const uint16_t* w, int64_t ldw, const uint16_t* x, int64_t ldx, int64_t k, float* sums) {
  __m512 acc[R][A];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < A; ++i) acc[r][i] = _mm512_setzero_ps();
  int64_t p = 0;
  for (;; p += 32) {
    const bool last = p + 32 > k;
    if (last && p >= k) break;
    const __mmask32 in = last ? static_cast<__mmask32>((1u << (k - p)) - 1) : ~__mmask32{0};
    __m512i wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(in, w + r * ldw + p);
#pragma GCC unroll 16
    for (int i = 0; i < A; ++i) {
      const __m512i xv = _mm512_loadu_si512(x + i * ldx + p);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][i] = _mm512_dpbf16_ps(acc[r][i], (__m512bh)wv[r], (__m512bh)xv);
    }
    if (last) break;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < A; ++i) sums[r * A + i] = lane_sum(acc[r][i]);
}

// dot_block with R and A (<= kDotA) chosen at run time.
template <int R, int... As>
void dot_block_for(int a_rows, std::integer_sequence<int, As...>, const uint16_t* w, int64_t ldw, const uint16_t* x,
                   int64_t ldx, int64_t k, float* sums) {
  (void)((a_rows == As + 1 ? (dot_block<R, As + 1>(w, ldw, x, ldx, k, sums), true) : false) || ...);
}

}  // namespace

// gemm_bf16's products (at least one) at Isa::Avx512Bf16, each bf16_weight_as_is (Note [bf16 dot
// products of a weight's rows]).
void bf16_row_dots(const std::vector<Bf16Gemm>& prods) {
  const int64_t m = prods[0].c.rows, n = prods[0].c.cols, k = prods[0].a.cols;
  const int64_t ldx = (k + 31) / 32 * 32;
  const int64_t groups = (m + kDotA - 1) / kDotA;  // of a's rows, as even as may be
  const int64_t wblocks = (n + kDotW - 1) / kDotW;
  const Scratch<uint16_t> xs = scratch<uint16_t>(m * ldx);
  const bf16* last_a = nullptr;
  for (const Bf16Gemm& g : prods) {
    if (g.a.p != last_a) {  // (a broadcast a repeats)
      for (int64_t i = 0; i < m; ++i) {
        uint16_t* row = xs.get() + i * ldx;
        const bf16* src = g.a.p + i * g.a.rs;
        if (g.a.cs == 1) {
          std::memcpy(row, src, static_cast<size_t>(k) * sizeof(uint16_t));
        } else {
          for (int64_t p = 0; p < k; ++p) row[p] = src[p * g.a.cs].bits;
        }
        std::memset(row + k, 0, static_cast<size_t>(ldx - k) * sizeof(uint16_t));
      }
      last_a = g.a.p;
    }
    parallel_for(wblocks, std::max<int64_t>(1, kGrain / (kDotW * k * m)), [&](int64_t b0, int64_t b1) {
      float sums[kDotW * kDotA];
      for (int64_t bi = b0; bi < b1; ++bi) {
        const int64_t j0 = bi * kDotW, wr = std::min(kDotW, n - j0);
        const uint16_t* w = storage(g.b.p + j0 * g.b.cs);
        for (int64_t gi = 0; gi < groups; ++gi) {
          const int64_t i0 = m * gi / groups, ar = m * (gi + 1) / groups - i0;
          const uint16_t* x = xs.get() + i0 * ldx;
          const auto as = std::make_integer_sequence<int, kDotA>();
          if (wr == kDotW) {
            dot_block_for<kDotW>(static_cast<int>(ar), as, w, g.b.cs, x, ldx, k, sums);
          } else {
            for (int64_t r = 0; r < wr; ++r)
              dot_block_for<1>(static_cast<int>(ar), as, w + r * g.b.cs, g.b.cs, x, ldx, k, sums + r * ar);
          }
          for (int64_t r = 0; r < wr; ++r)
            for (int64_t i = 0; i < ar; ++i) g.c.p[(i0 + i) * g.c.rs + (j0 + r) * g.c.cs] = bf16(sums[r * ar + i]);
        }
      }
    });
  }
}

}  // namespace wick::cpu::packed
#endif
