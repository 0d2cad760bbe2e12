// wick's own packed GEMMs: bf16 on processors with AVX512_BF16 (Note [bf16 GEMM]) or AMX (Note [AMX
// GEMM]), f32 on AVX-512 (Note [f32 GEMM]).
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "wick/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WICK_PACKED_GEMM 1
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports its own AVX-512 intrinsics (an undefined pass-through operand) as possibly
// uninitialised, or (in a few inlined uses) uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace wick::cpu {

#if defined(WICK_PACKED_GEMM)
namespace {

// Note [bf16 GEMM]
// c = a @ b for bf16 without widening the operands to f32 (the path below Isa::Avx512Bf16: f32
// copies of a and b, OpenBLAS's sgemm into an f32 c, rounded to bf16). This is the scheme of both
// levels above, and the kernel of Isa::Avx512Bf16; Isa::Amx swaps in its own kernel and packing of
// a (Note [AMX GEMM]). VDPBF16PS (AVX512_BF16)
// takes 16 lanes of bf16 pairs from each operand and adds both products of a pair to the lane's
// f32 sum: a[2i] b[2i] + a[2i + 1] b[2i + 1]. So both operands are packed with the pairs of k
// adjacent (k padded to even with a zero):
//   b, in panels of kNR columns: for each k-pair p, the kNR columns' pairs (b[2p][j], b[2p+1][j]),
//     one 64-byte line per 16 columns;
//   a, in panels of kMR rows: for each k-pair p, the kMR rows' pairs (a[i][2p], a[i][2p+1]),
//     each broadcast to 16 lanes by the kernel;
// rows and columns past m and n are zero. A tile of kMR x kNR sums lives in 28 of the 32 vector
// registers; per k-pair the kernel loads kNR / 16 lines of b and kMR broadcasts of a for kMR *
// kNR / 16 VDPBF16PS, each 32 multiply-adds.
//
// Every operand (every batch, those that repeat under broadcasting packed once) is packed before
// the products start, in one parallel pass over panels; then one parallel pass over blocks of c
// (up to kMcPanels row panels by up to kNcPanels column panels: narrower, then shorter where
// that leaves fewer than about four blocks a thread; all batches of a bmm share the threads). A
// block walks k in blocks of
// at most kKcMax pairs (a panel of b then is 16 KiB and stays in L1 while the block's row panels
// of a, in L2, stream past it); between k blocks the sums wait in an f32 buffer of the thread,
// so that c is written once, rounded to bf16 once. Batches are packed in groups of at most
// kPackBytes (at least one product), which bounds the extra memory to the inputs' size. A c with
// unit stride down its columns is computed as c^T = b^T a^T, so that tiles are stored as rows.
// matmul hands many small batches to this in chunks from its own parallel_for, where the passes
// here run inline. OpenBLAS is not involved (nor its choice of team sizes, Note [One team size]).
// Where one block of rows covers all of a, b is not packed ahead (Note [bf16 GEMM packing of b]).
//
// Note [bf16 GEMM packing of b]
// Packing b ahead writes a copy as large as b and reads it back, which is worth it where several
// blocks of rows of c share each column panel. Where m fits one block of rows (kMcPanels row
// panels: 112 rows with VDPBF16PS, 256 with AMX), each panel of b is read by one block only, so the
// blocks pack their own: per k block, the block's column panels into a buffer of the thread (at
// most kNcPanels x kKcMax pairs x 128 bytes, 128 KiB), right before the products that read it,
// while it is in cache. This is the shape of a linear layer over a few tokens (m small, b a large
// weight) and of batches of small products. On the GPU machine's Xeon (AMX, 16 threads, three runs
// each of the probe scripts/probes/cpu_gemm.cpp): 1x(64x4096 @ 4096x4096) 0.88-1.33 -> 0.81-0.88
// ms (torch 0.85-1.18), 16x(128x128 @ 128x2048) 0.36-0.45 -> 0.28-0.32 ms (torch 0.30-0.33).
// Blocks spanning all rows of a taller a, with b packed by each block, were slower: bmm 4x(1024x128
// @ 128x1024) 0.27 -> 0.34 ms (a's panels then stream from L2 for every column panel, and each
// block writes c in narrower strips).
//   A block packs kPackChunk k-pairs of all its panels before the next pairs, so that a row of b is
// read in one run of up to kNcPanels * 64 bytes, not 64 bytes per panel in separate passes; and
// where a is a single row panel (m <= 32 with AMX, as a batch of decoding tokens), the column
// blocks are cut only until each thread has one: the product is a stream of b, which longer runs
// per row serve better than balance. Same machine, three runs each: bf16 [8, 1, 4096] @
// 4096x4096 (folded into 8 rows) 0.61-0.74 -> 0.50-0.56 ms (torch 0.51), 64x4096 @ 4096x4096
// 0.80-0.92 -> 0.70-0.83 ms (torch 1.09); each change alone gained about half of that.
//   A b whose unit stride runs down its columns (W^T of a linear layer's weight W stored [n, k])
// has its runs along k instead: there a block packs a panel's whole k block at once (each column
// read in one run of up to kKcMax pairs), and pack_panel (pack_f32 for f32) transposes 16 columns
// x 16 pairs at a time in registers, where it copied one 32-bit pair at a time before (as it did
// for a row-major a at Isa::Avx512Bf16). Same machine, three rounds each against the previous
// build and torch (scripts/probes/cpu_gemm.cpp "skinny"), bf16 x @ W^T with W 4096 x 4096: 16 rows
// 1.22-1.26 -> 0.55-0.56 ms (torch 0.50-0.57), 32 rows 1.21-1.24 -> 0.55-0.57 (0.47-0.66), 64 rows
// 1.25-1.29 -> 0.62-0.70 (0.74-0.81), 512 rows 6.12 -> 4.50 (5.60); f32 16 rows 1.37 -> 0.99
// (torch 5.75), 64 rows 2.79 -> 2.04 (4.76), the f32 change from the runs along k alone. On two
// Zen 4 cores (Isa::Avx512Bf16, beside another build) bf16 16 rows 5.8-6.1 -> 3.6-3.7 ms.
//
// Measured on one Zen 4 core (VDPBF16PS peak 234 GFLOP/s, f32 FMA 117): 2048^3 in 82 ms, 210
// GFLOP/s (widening + sgemm: 164 ms); tiles of 6 x 64, 8 x 48 and 12 x 32 and k blocks of 64 to
// 256 pairs were within 3%. Packing takes under 4% of the time there. For tiny products (m, n,
// k < 20) the padding to whole tiles and the bookkeeping per product cost more than widening for
// OpenBLAS (8^3: 215 ns a product against 185), and from about 24^3 up they cost less. On the GPU
// machine's Intel Xeon (family 6 model 207, 16 cores), VDPBF16PS does not outrun the f32 FMAs: one
// core took 292 ms for 2048^3 (59 GFLOP/s) against 167 ms widening for sgemm, 16 cores 28-36 ms
// against 18, so simd's detect() leaves Intel processors below this level (those with AMX go above
// it, to Isa::Amx).
//
// Accumulation order and rounding: each output is one f32 lane that starts at 0 and takes the
// k-pairs in increasing order, a pair's two products by VDPBF16PS, which Intel's manual defines
// as two fused multiply-adds, the odd element's product first (a product of two bf16 is exact in
// f32, so each pair costs at most two roundings of the sum, as in f32 accumulation). The result
// is rounded to nearest even into bf16 (NaN stays NaN), as bf16::from_f32. VDPBF16PS ignores
// MXCSR: it treats denormal inputs as zero (bf16 denormals, below 2^-126 in magnitude, count as
// +-0) and flushes denormal results to zero (a step whose sum falls below 2^-126 gives 0), where
// the f32 path keeps both. Results differ in the last bits from the f32 path, within the error
// bound of f32 accumulation that the matmul tests check.
constexpr int kMR = 14;
constexpr int kNV = 2;  // 16-lane vectors across a tile
constexpr int kNR = 16 * kNV;
constexpr int64_t kKcMax = 128;  // k-pairs of a k block (bf16)
constexpr int64_t kMcPanels = 8;
constexpr int64_t kNcPanels = 8;
constexpr int64_t kPackBytes = int64_t{32} << 20;
constexpr int64_t kPackChunk = 8;  // k steps a block packs across its panels of b at a time
constexpr int64_t kSourceChunk = 64;                   // k steps of b asked of a MatSource at a time
constexpr int64_t kSourceABytes = int64_t{512} << 10;  // packed a of a block's rows for one k block, b from a source

#define WICK_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define WICK_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define WICK_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define WICK_INLINE __attribute__((always_inline)) inline

// The first R rows of a kMR x kNR tile of f32 sums in registers: loaded from c (row stride ldc)
// where `add`, else 0; stored back to c.
template <int R = kMR>
using Acc = __m512[R][kNV];
template <int R>
WICK_AVX512 WICK_INLINE void load_acc(Acc<R>& acc, const float* c, int64_t ldc, bool add) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) acc[r][v] = add ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
}
template <int R>
WICK_AVX512 WICK_INLINE void store_acc(const Acc<R>& acc, float* c, int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

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
// results to zero. The rows went through simd's f32_to_bf16 before, one call per row of 32. On the
// GPU machine's Xeon (AMX, 16 threads), bmm 4 x (1024x128 @ 128x1024) took 0.36-0.37 ms that way
// and 0.24-0.25 ms this way in one run (0.20-0.21 ms with no stores to c at all), and 0.21-0.26 ms
// against torch's 0.25-0.26 in another (scripts/probes/cpu_gemm.cpp and .py).

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

// The first n (<= 16) lanes.
WICK_INLINE __mmask16 lanes16(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

// Transposes the 16 x 16 block r in registers: r[i][j] becomes r[j][i].
WICK_AVX512 WICK_INLINE void transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: (r_i[0], r_i+1[0], r_i[1], r_i+1[1]), (.. [2], .. [3])
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + c]: per 128-bit lane, element c of rows i..i+3
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {  // column 4 * lane + c: that lane of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    r[c] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + c] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + c] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(3, 1, 3, 1));
    r[12 + c] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(3, 1, 3, 1));
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

// Note [AMX GEMM]
// At Isa::Amx the tiles of AMX (Intel Xeons from Sapphire Rapids on) multiply: eight registers of
// up to 16 rows of 64 bytes each, shaped by a configuration (palette 1) that a thread loads with
// LDTILECFG before its first tile instruction and drops with TILERELEASE when its share of the
// blocks of c is done. TDPBF16PS c, a, b adds to a 16 x 16 tile of f32 sums c the products of a
// tile of a (16 rows, each the 32 elements of 16 k-pairs) and one of b (16 rows, one per k-pair,
// each the pairs of 16 columns): c[i][j] += a[i][2p] b[p][2j] + a[i][2p + 1] b[p][2j + 1] over the
// 16 pairs p, 8192 multiply-adds in one instruction. One configuration serves all tiles: the
// kernel's 32 x 32 block of c is 2 x 2 tiles (tmm0..3), the block's 32 rows of a two tiles (tmm4,
// tmm5) and its 32 columns of b two (tmm6, tmm7), so that it loads four tiles for every four
// TDPBF16PS, 16 k-pairs at a time.
//   b is packed as for VDPBF16PS (pack_panel, panels of kNR = 32 columns, per k-pair the columns'
//     pairs in 128 bytes): 16 pairs of 16 columns are a tile of 16 rows of 64 bytes at a stride of
//     128 bytes, the other 16 columns 64 bytes on;
//   a needs its k along the tile's rows instead (pack_rows): panels of kAmxMR = 32 rows, per block
//     of 32 k (16 pairs) the 32 rows' 32 elements, 64 bytes each, so that a block's two tiles lie
//     in 2 KiB at a stride of 64 bytes.
// k is padded with zeros to a multiple of 32 in both operands (so that a padded term is 0 * 0,
// never 0 * inf or 0 * NaN), rows past m and columns past n are zeros as before: every tile has
// the one shape and needs no configuration of its own. The blocking is that of Note [bf16 GEMM]
// with tiles of 32 x 32 and k blocks of a multiple of 16 pairs (at most kKcMax: a block's panel of
// b stays 16 KiB, as does each panel of a); TILESTORED puts a block's sums on the stack (one k
// block) or in the thread's sums buffer, TILELOADD brings them back for the next k block, and
// store_tile rounds them into c as at the level below.
//
// Accumulation order and rounding, as Intel's manual defines TDPBF16PS: per instruction and
// output, the products of the 16 pairs' even elements and those of their odd elements are summed
// in two f32 chains starting at 0, each step a fused multiply-add rounded to nearest even; the two
// sums are added, and that to the output's sum (the intrinsics guide describes a single chain per
// output instead, even product then odd, in the output's sum). Like VDPBF16PS it ignores MXCSR,
// treats denormal inputs as zero and flushes denormal results to zero, so the denormal cases of
// Note [bf16 GEMM] come out the same. Either way a k-pair costs at most two roundings of a sum
// (the two-chain form two more per 16 pairs), within the error bound of f32 accumulation that the
// tests check (they assume no order). Results differ in the last bits from the f32 path and from
// the VDPBF16PS kernel.
//
// Measured on the GPU machine's Intel Xeon (family 6 model 207, 16 cores; AMX peak 1024 bf16 flops
// per cycle per core), same run, against WICK_CPU_ISA=avx512 (widening for OpenBLAS's sgemm):
// matmul 2048^3 16.8 -> 4.84 ms (3.5 TFLOP/s; torch 5.85 ms in the benchmark run), bmm 4 x
// (1024x128 @ 128x1024) 1.97 -> 0.55 ms, conv2d N2 C64->64 56x56 3x3 bf16 3.09 -> 0.31 ms.
//   The blocking, measured later (scripts/probes/amx_blocking.cpp: operands packed as here, packing
// left out, 16 threads, 2048^3 and 512x4096x4096, three lent Xeons of that model): k blocks of 128
// to 1024 pairs, either loop order inside a block and blocks of 2x16 to 16x4 panels all came out
// within 4.2-6.0 TFLOP/s, their order changing from run to run; in the library (k blocks of 128,
// 256, 512 and 1024 pairs, both orders) 2048^3 took 4.3-5.5 ms with every choice. What limits is
// the tile loads, not the blocking: TDPBF16PS alone ran at its 1024 flops a cycle (2.3-2.4
// TFLOP/s a core), the 2 x 2 kernel on operands in L1 at 0.6-1.8 TFLOP/s on one core (by machine)
// and 0.6-0.8 with all 16 cores busy (scripts/probes/amx_kernels.cpp times the kernel's loads and
// products apart and together). On one machine its four products alone took 27 ns and its
// four tile loads alone 18, together 82: they wait on each other (a tile, it seems, is loaded only
// once the products reading its last contents are done). Other orders of the same loads and
// products, and 1x2, 2x1, 1x3 and 3x1 kernels that load one operand ahead into a spare tile, were
// faster in some of the probe's cases and slower in others, by up to 2x either way, none in all.
// Tile rows that straddle two cache lines load 4-5 times slower; every buffer here is 64-byte
// aligned (scratch) and every tile row starts at a multiple of 64 bytes in it. b's two tiles of a
// panel lie interleaved (rows 128 bytes apart); each tile in one 1 KiB piece (rows 64 bytes apart)
// made no difference in either probe (session 36, bench/RESULTS.md), where the same kernel on L1
// operands ran at 0.6-1.0 TFLOP/s a core on one lent machine and 1.3-1.9 on the next ones.
constexpr int kAmxMR = 32;
constexpr int64_t kAmxPairs = 16;  // k-pairs per tile

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

WICK_AMX void tiles_begin() { _tile_loadconfig(&kTileConfig); }
WICK_AMX void tiles_end() { _tile_release(); }

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

// Note [f32 GEMM]
// c = a @ b for f32 on processors with AVX-512F (Isa::Avx512 and above), in the scheme of Note
// [bf16 GEMM] with one element of k per step instead of a pair: b in panels of kNR = 32 columns
// (per k the panel's 32 values, two 64-byte lines), a in panels of kMR = 14 rows (per k the 14
// rows' values, each broadcast to 16 lanes by the kernel), a tile of 14 x 32 sums in 28 of the 32
// vector registers; per k the kernel loads two lines of b and broadcasts 14 values of a for 28
// FMAs. The driver is the same as for bf16 (blocks of c over the threads, batches packed in
// groups, b packed per block where one block of rows covers all of a), with k blocks of
// kF32KcMax steps, so that a panel of b (32 KiB) stays in L1 while the block's panels of a
// stream past it. Packing copies 16 lanes at a time where the lanes are adjacent in memory (a
// column-major a, a row-major b), transposes blocks of 16 lanes by 16 k in registers where each
// lane's k is adjacent (a row-major a, b = W^T of a row-major W), and copies element by element
// otherwise. (Gathers did the transposing first; on one Zen 4 core the transposes took a 64^3
// product from 8.1 to 6.3 us, against OpenBLAS's 4.6.)
//
// Accumulation order: each output is one chain of fused multiply-adds over k in increasing order,
// starting at 0 (a k block goes on from the sums the last one left), each step rounded to nearest
// even; denormals are kept (MXCSR as the process has it). OpenBLAS's sgemm, which serves f32 below
// Isa::Avx512, orders its sums its own way: results differ in the last bits, within the error
// bound of f32 accumulation that the tests check.
//
// Measured on the GPU machine's Xeon (16 threads, scripts/probes/cpu_gemm.sh: wick, then
// WICK_CPU_ISA=avx2 for OpenBLAS's SkylakeX sgemm, then torch, in each of 9 rounds on 5 lent
// machines; f32 had gone to OpenBLAS at every level before this kernel):
//   2048^3: 11.0-14.6 ms against OpenBLAS's 13.9-18.9 (11-32% faster in each round; torch
//     13.8-16.6);
//   64 x (1024x128 @ 128x1024): 14.3-17.8 against 17.4-22.4 (torch 33-55);
//   4 x (1024x128 @ 128x1024): 0.80-1.34 against 1.29-2.61 (torch 0.87-1.97);
//   512x4096 @ 4096x4096, and the same with b = W^T: 11.4-19.0 against 14.3-19.1 (torch 14.3-23);
//   8 x (1 x 4096) @ 4096x4096 (one GEMM of m = 8, memory-bound): 1.07-1.55 against 1.01-2.10
//     (faster in 6 of the 9 rounds; torch 0.49-1.58).
// Products under kOwnF32Min (2M) multiply-adds stay on OpenBLAS (matmul.cpp): 10000 x 8^3 took
// 0.36-0.38 ms against 0.12, 100 x 64^3 0.068-0.105 against 0.046-0.060 (a 14 x 32 tile around
// an 8 x 8 product is 7 times the work, and the packing, the tile copies and the bookkeeping of a
// call weigh more in small products). A batch of products under kOwnF32PerThread (4M) each goes
// one chunk of products a thread, each chunk one call (100 x 64^3 0.097-0.105 -> 0.068-0.075 ms
// before the threshold above); larger ones all in one call, as for bf16 (64 x (1024x128 @
// 128x1024): one chunk a thread 19.7-20.1 ms, one call 14.3-15.3).
// The convolutions run on this kernel too (Note [CPU conv on the packed GEMMs] in conv.cpp), with
// b made by a MatSource as it is packed. (A first try, the per-block GEMMs of Note [CPU conv blocks]
// handed over as they were, was slower than OpenBLAS: each block packed the weights again.)
constexpr int64_t kF32KcMax = 256;

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

// The kernel for the last row panel of a, where m is not a multiple of kMR: only its `rows` rows
// (each output's sum as in f32_kernel_rows<kMR>), so that the padding rows cost no multiply-adds
// (m = 64: four panels of 14 and one of 8, where 70 rows were computed before).
using F32Kernel = void (*)(const float*, const float*, int64_t, float*, int64_t, bool);
template <int... R>
constexpr std::array<F32Kernel, sizeof...(R) + 1> f32_kernels(std::integer_sequence<int, R...>) {
  return {nullptr, f32_kernel_rows<R + 1>...};
}
constexpr auto kF32Kernels = f32_kernels(std::make_integer_sequence<int, kMR>());
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

// A level's kernel and packing, for products of E whose elements are packed as P (S: E's storage,
// the bits for bf16). A step of k is `step` elements of k (a pair for bf16, one for f32).
template <class E, class S, class P>
struct Scheme {
  int64_t mr;         // rows of the kernel's tile and of a's packed panels
  int64_t step;       // elements of k per step of the packed operands
  int64_t step_mult;  // steps are padded with zeros to a multiple of this
  int64_t kc_max;     // steps of a k block (a multiple of step_mult)
  void (*pack_a)(const S* src, int64_t rows, int64_t k, int64_t sr, int64_t sk, int64_t steps, P* out);
  void (*pack_b)(const S* src, int64_t cols, int64_t k, int64_t sc, int64_t sk, int64_t steps, P* out);
  void (*kernel)(const P* a, const P* b, int64_t steps, float* c, int64_t ldc, bool add);
  // The kernel for the first `rows` (< mr) rows of a tile only, if the level has one.
  void (*kernel_part)(const P* a, const P* b, int64_t steps, float* c, int64_t ldc, bool add, int64_t rows);
  void (*store)(const float* c, int64_t ldc, int64_t mr, int64_t nr, E* d, int64_t rs, int64_t cs);
  bool tiles;  // the kernel runs on AMX tiles: each thread loads kTileConfig first
};
using Bf16Scheme = Scheme<bf16, uint16_t, uint16_t>;
constexpr Bf16Scheme kVnniScheme{.mr = kMR,
                                 .step = 2,
                                 .step_mult = 1,
                                 .kc_max = kKcMax,
                                 .pack_a = pack_panel<kMR>,
                                 .pack_b = pack_panel<kNR>,
                                 .kernel = tile_kernel,
                                 .kernel_part = nullptr,
                                 .store = store_tile,
                                 .tiles = false};
constexpr Bf16Scheme kAmxScheme{.mr = kAmxMR,
                                .step = 2,
                                .step_mult = kAmxPairs,
                                .kc_max = kKcMax,
                                .pack_a = pack_rows,
                                .pack_b = pack_panel<kNR>,
                                .kernel = amx_kernel,
                                .kernel_part = nullptr,
                                .store = store_tile,
                                .tiles = true};
using F32Scheme = Scheme<float, float, float>;
constexpr F32Scheme kF32Scheme{.mr = kMR,
                               .step = 1,
                               .step_mult = 1,
                               .kc_max = kF32KcMax,
                               .pack_a = pack_f32<kMR>,
                               .pack_b = pack_f32<kNR>,
                               .kernel = f32_kernel_rows<kMR>,
                               .kernel_part = f32_kernel_part,
                               .store = store_f32,
                               .tiles = false};
static_assert(kKcMax % kAmxPairs == 0 && kAmxMR >= kMR);

template <class T>
MatRef<T> transposed(const MatRef<T>& m) {
  return {m.p, m.cols, m.rows, m.cs, m.rs};
}

const uint16_t* storage(const bf16* p) { return &p->bits; }
const float* storage(const float* p) { return p; }

// A group of products: each product's c and the slots of its a and b among the group's distinct
// operands (packed once each).
template <class E>
struct Group {
  std::vector<MatRef<E>> cs;
  std::vector<int64_t> a_slot, b_slot;
  std::vector<MatRef<const E>> as, bs;
  std::vector<const MatSource<E>*> b_sources;               // by b slot
  std::vector<const void*> a_keys, b_keys;                  // by slot: the pointer, or b's source
  std::unordered_map<const void*, int64_t> seen_a, seen_b;  // slot by key
};

// Elements of the buffer that a source's rows go through (kSourceChunk steps of at most two).
constexpr int64_t kSourceRows = kSourceChunk * 2 * kNR;

// Packs steps q0..q1 of the column panel of b at column j0 (cols <= kNR columns) into out: from b
// itself, or through its source (when set) a chunk of kSourceChunk steps at a time, each chunk's
// rows made into buf (kSourceRows elements, in L1) and packed from there as a row-major b.
template <class E, class S, class P>
void pack_b_steps(const Scheme<E, S, P>& sch, const MatRef<const E>& b, const MatSource<E>* src, E* buf, int64_t j0,
                  int64_t cols, int64_t q0, int64_t q1, P* out) {
  const int64_t st = sch.step, k = b.rows;
  const int64_t chunk = src ? kSourceChunk : q1 - q0;
  for (int64_t r0 = q0; r0 < q1; r0 += chunk) {
    const int64_t r1 = std::min(q1, r0 + chunk), kk = std::min(k - st * r0, st * (r1 - r0));
    P* o = out + (r0 - q0) * st * kNR;
    if (kk <= 0) {  // steps of the zero padding only
      std::memset(o, 0, static_cast<size_t>((r1 - r0) * st * kNR) * sizeof(P));
    } else if (!src) {
      sch.pack_b(storage(b.p + st * r0 * b.rs + j0 * b.cs), cols, kk, b.cs, b.rs, r1 - r0, o);
    } else {
      src->rows(st * r0, kk, j0, cols, buf, kNR);
      sch.pack_b(storage(buf), cols, kk, 1, kNR, r1 - r0, o);
    }
  }
}

// The products of gemm_bf16 and gemm_f32 by scheme sch.
template <class E, class S, class P>
void gemm_packed(int64_t count, const std::function<GemmOf<E>(int64_t)>& product, const Scheme<E, S, P>& sch) {
  if (count <= 0) return;
  const GemmOf<E> first = product(0);
  const int64_t m = first.c.rows, n = first.c.cols, k = first.a.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t bi = 0; bi < count; ++bi) {
      const MatRef<E> c = product(bi).c;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c.p[i * c.rs + j * c.cs] = E(0.0f);
    }
    return;
  }
  // The kernel writes rows of c with unit stride at best: a c with unit stride down its columns
  // instead is computed as c^T = b^T a^T (unless b is made by a source).
  if (first.c.cs != 1 && first.c.rs == 1 && n > 1 && !first.b_source) {
    return gemm_packed<E, S, P>(
        count,
        [&](int64_t i) {
          const GemmOf<E> g = product(i);
          return GemmOf<E>{transposed(g.b), transposed(g.a), transposed(g.c)};
        },
        sch);
  }
  const int64_t mr = sch.mr, st = sch.step;
  auto pad_steps = [&](int64_t steps) { return (steps + sch.step_mult - 1) / sch.step_mult * sch.step_mult; };
  const int64_t kp = pad_steps((k + st - 1) / st);  // steps of the packed operands
  const int64_t mpan = (m + mr - 1) / mr, npan = (n + kNR - 1) / kNR;
  const int64_t a_elems = mpan * kp * st * mr, b_elems = npan * kp * st * kNR;  // one packed operand
  const int64_t nkc = (kp + sch.kc_max - 1) / sch.kc_max, kcp = pad_steps((kp + nkc - 1) / nkc);
  // Where one block of c spans all rows, the blocks pack their own columns of b (Note [bf16 GEMM
  // packing of b]). So do they where b comes from a source, with blocks of as many row panels as
  // keep a's part for one k block within kSourceABytes (Note [CPU conv on the packed GEMMs]).
  const bool own_b = mpan <= kMcPanels || first.b_source;
  const int64_t mc_max =
      first.b_source ? std::max<int64_t>(kMcPanels, kSourceABytes / (mr * kcp * st * static_cast<int64_t>(sizeof(P))))
                     : kMcPanels;
  // The slot of the operand with key p among a group's distinct ones so far, -1 if it is new (a
  // repeat of the last product's operand, as under a broadcast batch dim, needs no lookup).
  auto find = [](const auto& seen, const auto& keys, const auto& slots, const void* p) -> int64_t {
    if (!slots.empty() && keys[static_cast<size_t>(slots.back())] == p) return slots.back();
    const auto it = seen.find(p);
    return it == seen.end() ? -1 : it->second;
  };
  for (int64_t b0 = 0; b0 < count;) {
    // The group: products while the packed operands fit in kPackBytes (at least one).
    Group<E> g;
    int64_t elems = 0;
    for (int64_t bi = b0; bi < count; ++bi) {
      const GemmOf<E> pr = bi == 0 ? first : product(bi);
      if (!pr.b_source != !first.b_source)
        throw InvalidArgument("[gemm_packed] products with and without a source of b in one call");
      const void* a_key = pr.a.p;
      const void* b_key = pr.b_source ? static_cast<const void*>(pr.b_source) : pr.b.p;
      int64_t sa = find(g.seen_a, g.a_keys, g.a_slot, a_key), sb = find(g.seen_b, g.b_keys, g.b_slot, b_key);
      const int64_t more = (sa < 0 ? a_elems : 0) + (sb < 0 && !own_b ? b_elems : 0);
      if (!g.cs.empty() && (elems + more) * static_cast<int64_t>(sizeof(P)) > kPackBytes) break;
      elems += more;
      if (sa < 0) {
        sa = static_cast<int64_t>(g.as.size());
        g.seen_a.emplace(a_key, sa);
        g.as.push_back(pr.a);
        g.a_keys.push_back(a_key);
      }
      if (sb < 0) {
        sb = static_cast<int64_t>(g.bs.size());
        g.seen_b.emplace(b_key, sb);
        g.bs.push_back(pr.b);
        g.b_sources.push_back(pr.b_source);
        g.b_keys.push_back(b_key);
      }
      g.a_slot.push_back(sa);
      g.b_slot.push_back(sb);
      g.cs.push_back(pr.c);
    }
    b0 += static_cast<int64_t>(g.cs.size());
    const int64_t na = static_cast<int64_t>(g.as.size()), nb = own_b ? 0 : static_cast<int64_t>(g.bs.size());
    const int64_t nprod = static_cast<int64_t>(g.cs.size());
    const Scratch<P> packed = scratch<P>(elems);
    P* const pa = packed.get();
    P* const pb = pa + na * a_elems;
    // Pack: the row panels of every a, then the column panels of every b unless the blocks do.
    const int64_t a_units = na * mpan, units = a_units + nb * npan;
    parallel_for(units, std::max<int64_t>(1, kGrain / (kp * st * kNR)), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        if (u < a_units) {
          const MatRef<const E>& a = g.as[static_cast<size_t>(u / mpan)];
          const int64_t i0 = u % mpan * mr;
          sch.pack_a(storage(a.p + i0 * a.rs), std::min<int64_t>(mr, m - i0), k, a.rs, a.cs, kp, pa + u * kp * st * mr);
        } else {
          const int64_t v = u - a_units, slot = v / npan, j0 = v % npan * kNR;
          // (Never from a source: the blocks make their own, own_b.)
          pack_b_steps(sch, g.bs[static_cast<size_t>(slot)], static_cast<const MatSource<E>*>(nullptr),
                       static_cast<E*>(nullptr), j0, std::min<int64_t>(kNR, n - j0), 0, kp, pb + v * kp * st * kNR);
        }
      }
    });
    // Blocks of c: narrower column blocks until the threads have a few blocks each (one each for a
    // single row panel packing its own b: the product then streams b, best in long runs), then, where
    // b is packed ahead, shorter row blocks.
    int64_t ncp = kNcPanels, mcp = mc_max;
    const int64_t per_thread = own_b && mpan == 1 ? 1 : 4;
    auto blocks = [&] { return nprod * ((mpan + mcp - 1) / mcp) * ((npan + ncp - 1) / ncp); };
    while (ncp > 1 && blocks() < per_thread * num_threads()) ncp = (ncp + 1) / 2;
    while (!own_b && mcp > 1 && blocks() < per_thread * num_threads()) mcp = (mcp + 1) / 2;
    const int64_t mblocks = (mpan + mcp - 1) / mcp, nblocks = (npan + ncp - 1) / ncp;
    parallel_blocks(nprod * mblocks * nblocks, 1, [&](auto&& next) {  // Note [Dynamic blocks]
      // A tile's sums: on the stack for a single k block, else in the block's place in `sums`.
      alignas(64) float one_tile[kAmxMR * kNR];
      const int64_t ldc = nkc == 1 ? kNR : std::min(ncp, npan) * kNR;
      const Scratch<float> sums = nkc == 1 ? Scratch<float>() : scratch<float>(std::min(mcp, mpan) * mr * ldc);
      // The block's column panels of b for one k block, where the block packs them.
      const Scratch<P> bk = own_b ? scratch<P>(std::min(ncp, npan) * kcp * st * kNR) : Scratch<P>();
      const Scratch<E> src_rows = first.b_source ? scratch<E>(kSourceRows) : Scratch<E>();
      if (sch.tiles) tiles_begin();
      for (int64_t t = next(); t >= 0; t = next()) {
        const int64_t gi = t / (mblocks * nblocks), mb = t / nblocks % mblocks, nbk = t % nblocks;
        const MatRef<E>& c = g.cs[static_cast<size_t>(gi)];
        const P* a = pa + g.a_slot[static_cast<size_t>(gi)] * a_elems;
        const int64_t b_slot = g.b_slot[static_cast<size_t>(gi)];
        const MatRef<const E>& bm = g.bs[static_cast<size_t>(b_slot)];
        const MatSource<E>* const b_src = g.b_sources[static_cast<size_t>(b_slot)];
        const int64_t ip0 = mb * mcp, ip1 = std::min(mpan, ip0 + mcp);
        const int64_t jp0 = nbk * ncp, jp1 = std::min(npan, jp0 + ncp);
        for (int64_t p0 = 0; p0 < kp; p0 += kcp) {
          const int64_t p1 = std::min(kp, p0 + kcp);
          // Steps p0..p1 of panel jp at b_k + (jp - jp0) * b_stride * st * kNR: in the block's own
          // buffer, or in b packed ahead (all kp steps of a panel together).
          const int64_t b_stride = own_b ? p1 - p0 : kp;
          const P* b_k = own_b ? bk.get() : pb + b_slot * b_elems + (jp0 * kp + p0) * st * kNR;
          if (own_b) {
            // kPackChunk steps at a time across the block's panels, so that each row of b is read in
            // one run; a panel's steps at a time from a source, or where b's columns are its runs.
            const int64_t chunk = b_src || bm.cs != 1 ? p1 - p0 : kPackChunk;
            for (int64_t q0 = p0; q0 < p1; q0 += chunk) {
              const int64_t q1 = std::min(p1, q0 + chunk);
              for (int64_t jp = jp0; jp < jp1; ++jp)
                pack_b_steps(sch, bm, b_src, src_rows.get(), jp * kNR, std::min<int64_t>(kNR, n - jp * kNR), q0, q1,
                             bk.get() + ((jp - jp0) * b_stride + q0 - p0) * st * kNR);
            }
          }
          for (int64_t jp = jp0; jp < jp1; ++jp)
            for (int64_t ip = ip0; ip < ip1; ++ip) {
              float* tile = nkc == 1 ? one_tile : sums.get() + (ip - ip0) * mr * ldc + (jp - jp0) * kNR;
              const int64_t rows = std::min<int64_t>(mr, m - ip * mr);
              const P* ak = a + (ip * kp + p0) * st * mr;
              const P* bk_jp = b_k + (jp - jp0) * b_stride * st * kNR;
              if (rows < mr && sch.kernel_part) {
                sch.kernel_part(ak, bk_jp, p1 - p0, tile, ldc, p0 > 0, rows);
              } else {
                sch.kernel(ak, bk_jp, p1 - p0, tile, ldc, p0 > 0);
              }
              if (p1 == kp) {
                const int64_t j0 = jp * kNR;
                sch.store(tile, ldc, rows, std::min<int64_t>(kNR, n - j0), c.p + ip * mr * c.rs + j0 * c.cs, c.rs,
                          c.cs);
              }
            }
        }
      }
      if (sch.tiles) tiles_end();
    });
  }
}

// Note [AMX GEMM with the weight in place]
// A product of a few rows of a (tokens) with b = W^T, W a weight stored [n, k] whose rows are
// 64-byte aligned, runs as c^T = W a^T with W as the tiles' a operand, read where it lies: a tile
// of W is 16 of its rows, 32 elements (16 k-pairs) of each, which is the layout TILELOADD takes
// with W's row stride. W is then neither copied nor transposed (the packed GEMM transposes its
// panels into pairs of columns, Note [bf16 GEMM packing of b]); the rows of a, few, are packed once
// as b's panels are (pack_panel<kNR>, 32 rows of a to a panel, done by all threads in chunks of k).
// Each block is 32 rows of W against every panel of a: amx_tiles over the whole of k, and a 32 x 32
// tile of c^T stored transposed into c.
// Where k is not a multiple of 32 the last 32 elements of the rows come from a packed copy (pack_rows,
// zeros past k), as do the rows of W's last block where n is not a multiple of 32; a panel of 16
// rows of a or fewer runs the kernel on one 16-column half. Per output, the k-pairs
// come in the same blocks of 16 and the same order as in the packed GEMM with a and b in their own
// roles, and a product of two bf16 is exact: the results are the packed GEMM's, bit for bit.
//   Up to kInPlaceMaxRows rows of a; matmul sends products of 1 to 8 rows here too, ahead of its
// vector kernels (Note [CPU matrix-vector products] in matmul.cpp). On the lent Xeon (16 threads,
// three rounds of scripts/probes/cpu_gemm.cpp "wt" against the packed GEMM and the vector kernels,
// and cpu_gemm.py for torch; ms), W 4096 x 4096 (32 MiB: 0.19-0.20 ms at the copy rate):
//   rows of a      2          8          16         32         64         128
//   in place       0.22-0.25  0.22-0.27  0.22-0.26  0.29-0.33  0.45-0.52  0.78-0.93
//   before         0.34-0.37  0.62-0.68  0.51-0.57  0.46-0.59  0.59-0.67  0.88-1.14
//   torch          0.48-0.61  0.36-0.62  0.36-1.37  0.59-0.65  0.83-2.47  1.22-1.70
// At 256 rows the packed GEMM was as fast or faster (1.62-2.04 against 1.65-1.98). 16 rows against
// W 14336 x 4096: 0.58-0.69 ms (before 1.54-1.91, torch 1.56-1.96), against W 4096 x 14336: 0.76-
// 0.82 (2.12-3.79, 1.26-1.38); keys in attention, 32 x (16 x 128 @ (2048 x 128)^T): 0.116-0.129
// (0.169-0.202, 0.26-0.31). Prefetching W's rows 4, 8 or 16 blocks of k ahead was slower than
// leaving it to the hardware (16 rows: 0.21-0.22 ms without, 0.23-0.25 at 8 blocks).
constexpr int64_t kInPlaceMaxRows = 128;    // rows of a
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

// Note [bf16 dot products of a weight's rows]
// At Isa::Avx512Bf16 (VDPBF16PS, no AMX: AMD's Zen 4 and later) a product of a few rows of a with
// b = W^T, W stored [n, k] with unit stride along k, is a set of dot products of W's rows with a's:
// a block of kDotW rows of W against up to kDotA rows of a keeps one 16-lane f32 sum per pair of
// rows in registers, and per 32 elements of k loads each of its W rows once and each row of a once
// (VDPBF16PS multiplies 16 pairs of the two and adds them to the sum's lanes); the lanes are added
// at the end. W is read as it lies, once, and a's rows (copied once into rows of k rounded up to 32
// with zeros, so that only W's last 32 elements need a masked load) stay in cache. The packed GEMM
// instead transposes W into panels of pairs of columns, and its tiles of 14 rows of a leave most of
// a second tile empty for 16 rows. Each output is the same sum in the same order whatever the number
// of rows of a: its lanes over k in steps of 32, then lane_sum; so a token's result does
// not depend on the batch it comes in (matmul sends single rows here too, Note [CPU
// matrix-vector products]). Rounding and denormals as Note [bf16 GEMM]: each
// VDPBF16PS step two fused multiply-adds per lane, denormal inputs and results flushed to zero.
//   Each block of W's rows reads all of a's rows again, from L2 where they do not fit L1 (16 rows
// of 4096: 128 KiB), so the blocks take as many rows of W as the registers allow: 4 rows of W by 6
// of a, 24 sums. On two Zen 4 cores (scripts/probes/cpu_gemm.cpp "wt", one run each; ms), W 4096 x
// 4096: rows of a 8: 1.23-1.43 (the vector kernels of Note [CPU matrix-vector products] 1.94),
// 16: 1.84-2.03 (packed GEMM 3.63), 32: 3.62-3.85 (4.70), 64: 6.41-6.71 (6.87); 16 rows against W
// 14336 x 4096 6.69-7.67 (12.6), against 4096 x 14336 6.82-8.14 (12.7). Blocks of 2 rows of W by 12 of a
// took 2.51 ms for 16 rows and 12.0 for 64; 6 by 4 spilled (4.32 for 16 rows).
constexpr int64_t kDotW = 4;         // rows of W per block
constexpr int kDotA = 6;             // rows of a per block, at most
constexpr int64_t kDotMaxRows = 64;  // rows of a
constexpr int64_t kDotMinK = 256;    // below, the lanes' final sums take a large share of the time

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

}  // namespace

bool bf16_weight_as_is(const Bf16Gemm& g, simd::Isa isa) {
  if (isa > simd::detected() || g.b_source || g.c.rows <= 0 || g.c.cols <= 0 || g.a.cols <= 0 || g.b.rs != 1)
    return false;
  if (isa >= simd::Isa::Amx)  // Note [AMX GEMM with the weight in place]
    return g.c.rows <= kInPlaceMaxRows && g.b.cs > 0 && g.b.cs % 32 == 0 &&
           reinterpret_cast<uintptr_t>(g.b.p) % 64 == 0;
  // Note [bf16 dot products of a weight's rows]
  return isa == simd::Isa::Avx512Bf16 && g.c.rows <= kDotMaxRows && g.a.cols >= kDotMinK;
}

void gemm_bf16(int64_t count, const std::function<Bf16Gemm(int64_t)>& product, simd::Isa isa) {
  if (isa < simd::Isa::Avx512Bf16 || isa > simd::detected())
    throw UnsupportedError(std::string("gemm_bf16: no bf16 GEMM kernel at level ") + simd::isa_name(isa) +
                           " on this cpu (" + simd::isa_name(simd::detected()) + ")");
  // The products, kept for the unpacked paths while each of them can take one.
  std::vector<Bf16Gemm> prods;
  bool as_is = count > 0;
  for (int64_t i = 0; as_is && i < count; ++i) {
    prods.push_back(product(i));
    as_is = bf16_weight_as_is(prods.back(), isa);
  }
  if (as_is) return isa >= simd::Isa::Amx ? amx_gemm_in_place(prods) : bf16_row_dots(prods);
  gemm_packed(count, product, isa >= simd::Isa::Amx ? kAmxScheme : kVnniScheme);
}

void gemm_f32(int64_t count, const std::function<F32Gemm(int64_t)>& product, simd::Isa isa) {
  if (isa < simd::Isa::Avx512 || isa > simd::detected())
    throw UnsupportedError(std::string("gemm_f32: no f32 GEMM kernel at level ") + simd::isa_name(isa) +
                           " on this cpu (" + simd::isa_name(simd::detected()) + ")");
  gemm_packed(count, product, kF32Scheme);
}

#else
// simd::detected() reaches Isa::Avx512 and above only on x86-64, so matmul and conv never call
// these elsewhere.
void gemm_bf16(int64_t, const std::function<Bf16Gemm(int64_t)>&, simd::Isa) {
  throw UnsupportedError("gemm_bf16: the bf16 GEMM kernels need an x86-64 processor with AVX512_BF16 or AMX");
}
bool bf16_weight_as_is(const Bf16Gemm&, simd::Isa) { return false; }
void gemm_f32(int64_t, const std::function<F32Gemm(int64_t)>&, simd::Isa) {
  throw UnsupportedError("gemm_f32: the f32 GEMM kernel needs an x86-64 processor with AVX-512");
}
#endif

}  // namespace wick::cpu
