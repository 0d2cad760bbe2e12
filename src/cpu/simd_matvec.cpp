// The matrix-vector kernels of simd.h: dot_* over a matrix with unit stride along k (Note [Row dot
// products]) and axpy_* over one with unit stride along its rows (Note [Column dot products]), for
// bf16, f16 and f32 matrices against f32 vectors.
#include <algorithm>
#include <cstdint>

#include "cpu/simd_impl.h"
#include "wick/scalar_types.h"

namespace wick::cpu::simd::detail {
namespace {

// A load of W f32 lanes, as the widening loads below (Load of the kernels).
template <int W>
struct LoadF32 {
  WICK_INLINE typename Vec<W>::F operator()(const float* p) const { return load<typename Vec<W>::F>(p); }
};

// Note [Row dot products]
// out[j * ldo + r] = sum_i a[r * lda + i] * x_j[i] (simd.h), the matrix-vector products of matmul
// without a widened copy of the matrix. Each product is rounded to f32, then added (no FMA: the
// baseline has none, and one fused level would give other bits). The order is sum16_v's over the
// products: lane l (of 16) adds the products of elements l, l + 16, ... of the whole blocks of 16,
// the tail (k % 16 elements) goes in order into one more sum, then the lanes are added in halves (8,
// 4, 2, 1) and the tail last; every level adds the same numbers in the same order. R rows at a time
// share the loads of x and make R * 16 / W independent chains (hiding the add latency); G vectors at
// a time (kDotVecs) share the loads of the rows, so that a product of a few vectors reads the matrix
// from memory once. Every output is its own sum in the order above, whatever R, G and nv. Each group
// prefetches the next one into L2 (locality 2: prefetcht1): the hardware prefetchers lag on R short
// rows at once, and prefetching into L1 evicts the rows being read.
// Load gives W widened elements of a row; Scalar one element (for the tail).
template <int W, int R, int G, class T, class Load, class Scalar>
WICK_INLINE void dot_block_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, float* out,
                             int64_t ldo, int64_t r, Load ld, Scalar sc) {
  using F = typename Vec<W>::F;
  constexpr int kV = 16 / W;
  const int64_t k16 = k / 16 * 16;
  F acc[R][G][kV] = {};
  const T* row[R];
  for (int q = 0; q < R; ++q) row[q] = a + (r + q) * lda;
  const int64_t ahead = r + 2 * R <= rows ? R * lda : 0;  // (none past the last group)
  for (int64_t i = 0; i < k16; i += 16) {
    for (int q = 0; q < R; ++q) __builtin_prefetch(row[q] + ahead + i, 0, 2);
    for (int v = 0; v < kV; ++v) {
      F xv[G];
      for (int g = 0; g < G; ++g) xv[g] = load<F>(x + g * ldx + i + v * W);
      for (int q = 0; q < R; ++q) {
        const F av = ld(row[q] + i + v * W);
        for (int g = 0; g < G; ++g) acc[q][g][v] += av * xv[g];
      }
    }
  }
  for (int q = 0; q < R; ++q)
    for (int g = 0; g < G; ++g) {
      float lane[16];
      for (int v = 0; v < kV; ++v) store(lane + v * W, acc[q][g][v]);
      float tail = 0;
      for (int64_t i = k16; i < k; ++i) tail += sc(row[q][i]) * x[g * ldx + i];
      for (int w = 8; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
      out[g * ldo + r + q] = lane[0] + tail;
    }
}

template <int W, int R, int G, class T, class Load, class Scalar>
WICK_INLINE void dot_rows_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv,
                            float* out, int64_t ldo, Load ld, Scalar sc) {
  int64_t r = 0;
  for (; r + R <= rows; r += R) {
    int64_t j = 0;
    for (; j + G <= nv; j += G) dot_block_v<W, R, G>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
    for (; j < nv; ++j) dot_block_v<W, R, 1>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
  }
  for (; r < rows; ++r)
    for (int64_t j = 0; j < nv; ++j)
      dot_block_v<W, 1, 1>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
}

// Note [Column dot products]
// The other orientation: out[j * ldo + r] = sum_i a[i * lda + r] * x_j[i] (simd.h), a matrix with
// unit stride along its rows r, as x @ W for W stored [k, n]. The W lanes of a vector are W outputs,
// each summing its products in the order of i from 0 (each product rounded to f32, then added), so
// any split into vectors, and the scalar loop of the last rows, gives every output the same bits.
// kAxpyU vectors of outputs at a time share the broadcast x_j[i] as independent chains; a block reads
// a run of kAxpyU * W elements of each of the k rows, a strided walk that the hardware prefetchers
// follow poorly, so the run kAxpyAhead rows on is prefetched into L2. G vectors x_j at a time
// (kAxpyVecs) share each load. With more vectors than G, the rows go in chunks widened to f32 into
// a buffer in L1 (kAxpyChunkBytes) over which every group passes, the sums kept in memory between
// chunks (the same values in the same order): the matrix is read and widened once for all the
// vectors, and no pass walks its rows at a power-of-two stride (every run in the same L1 sets).
constexpr int kAxpyU = 8;
constexpr int64_t kAxpyAhead = 64;
constexpr int64_t kAxpyChunkBytes = 16384;
constexpr int kAxpyBatch = 16;  // vectors whose sums a block keeps at once

// The sums of G vectors (x_j = x + j * ldx) over `count` rows of a block of kAxpyU * W columns, its
// rows ldp apart from p, going on from `sums` (G runs of kAxpyU * W) unless `first`, and stored
// back there. pf, where not null: the block's run in the matrix row of p's first row, rows lda apart
// and pf_rows of them, prefetched kAxpyAhead rows ahead of the row being read (at most the last).
template <int W, int G, class P, class T, class Load>
WICK_INLINE void axpy_block_v(const P* p, int64_t ldp, int64_t count, const T* pf, int64_t lda, int64_t pf_rows,
                              const float* x, int64_t ldx, float* sums, bool first, Load ld) {
  using F = typename Vec<W>::F;
  F acc[G][kAxpyU];
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < kAxpyU; ++u) acc[g][u] = first ? F{} : load<F>(sums + (g * kAxpyU + u) * W);
  for (int64_t i = 0; i < count; ++i) {
    if (pf) {
      const char* ahead = reinterpret_cast<const char*>(pf + std::min(i + kAxpyAhead, pf_rows - 1) * lda);
      for (size_t b = 0; b < kAxpyU * W * sizeof(T); b += 64) __builtin_prefetch(ahead + b, 0, 2);
    }
    F xv[G];
    for (int g = 0; g < G; ++g) xv[g] = F{} + x[g * ldx + i];
    for (int u = 0; u < kAxpyU; ++u) {
      const F av = ld(p + i * ldp + u * W);
      for (int g = 0; g < G; ++g) acc[g][u] += av * xv[g];
    }
  }
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < kAxpyU; ++u) store(sums + (g * kAxpyU + u) * W, acc[g][u]);
}

// axpy_block_v for nj vectors: G at a time, then the rest one by one.
template <int W, int G, class P, class T, class Load>
WICK_INLINE void axpy_groups_v(const P* p, int64_t ldp, int64_t count, const T* pf, int64_t lda, int64_t pf_rows,
                               const float* x, int64_t ldx, int64_t nj, float* sums, bool first, Load ld) {
  constexpr int64_t kRun = kAxpyU * W;
  int64_t j = 0;
  for (; j + G <= nj; j += G)
    axpy_block_v<W, G>(p, ldp, count, pf, lda, pf_rows, x + j * ldx, ldx, sums + j * kRun, first, ld);
  for (; j < nj; ++j) axpy_block_v<W, 1>(p, ldp, count, pf, lda, pf_rows, x + j * ldx, ldx, sums + j * kRun, first, ld);
}

template <int W, int G, class T, class Load, class Scalar>
WICK_INLINE void axpy_rows_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv,
                             float* out, int64_t ldo, Load ld, Scalar sc) {
  using F = typename Vec<W>::F;
  constexpr int64_t kRun = kAxpyU * W;
  constexpr int64_t kChunk = kAxpyChunkBytes / (kRun * 4);
  int64_t r = 0;
  for (; r + kRun <= rows; r += kRun) {
    for (int64_t j0 = 0; j0 < nv; j0 += kAxpyBatch) {
      const int64_t nj = std::min<int64_t>(kAxpyBatch, nv - j0);
      const float* xb = x + j0 * ldx;
      alignas(64) float sums[kAxpyBatch * kRun];
      if (nj <= G) {  // one pass over the matrix as it is
        axpy_groups_v<W, G>(a + r, lda, k, a + r, lda, k, xb, ldx, nj, sums, true, ld);
      } else {
        alignas(64) float chunk[kChunk * kRun];
        for (int64_t i0 = 0; i0 == 0 || i0 < k; i0 += kChunk) {  // (one empty pass for k == 0: sums of 0)
          const int64_t count = std::min(kChunk, k - i0);
          for (int64_t i = 0; i < count; ++i) {
            const T* row = a + (i0 + i) * lda + r;
            const char* ahead = reinterpret_cast<const char*>(a + std::min(i0 + i + kAxpyAhead, k - 1) * lda + r);
            for (size_t b = 0; b < kRun * sizeof(T); b += 64) __builtin_prefetch(ahead + b, 0, 2);
            for (int u = 0; u < kAxpyU; ++u) store(chunk + i * kRun + u * W, ld(row + u * W));
          }
          axpy_groups_v<W, G>(chunk, kRun, count, static_cast<const T*>(nullptr), 0, 1, xb + i0, ldx, nj, sums, i0 == 0,
                              LoadF32<W>{});
        }
      }
      for (int64_t j = 0; j < nj; ++j) std::copy_n(sums + j * kRun, kRun, out + (j0 + j) * ldo + r);
    }
  }
  for (int64_t j = 0; j < nv; ++j) {
    const float* xj = x + j * ldx;
    float* oj = out + j * ldo;
    int64_t c = r;
    for (; c + W <= rows; c += W) {
      F acc = {};
      for (int64_t i = 0; i < k; ++i) acc += ld(a + i * lda + c) * (F{} + xj[i]);
      store(oj + c, acc);
    }
    for (; c < rows; ++c) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += sc(a[i * lda + c]) * xj[i];
      oj[c] = acc;
    }
  }
}

// Rows at a time: 2 on the baseline, whose 16 registers hold 4 vectors of sums per row; 4 above.
// Vectors at a time: 4 at 16 lanes (16 of AVX-512's 32 registers hold sums), 2 at 8 (8 of AVX2's
// 16), 1 on the baseline. The column kernel: kAxpyU vectors of sums per x_j, 2 x_j at 16 lanes.
template <int W>
constexpr int kDotRows = W == 4 ? 2 : 4;
template <int W>
constexpr int kDotVecs = W == 16  ? 4
                         : W == 8 ? 2
                                  : 1;
template <int W>
constexpr int kAxpyVecs = W == 16 ? 2 : 1;

// The scalar widening of one element, for the generic formats.
struct ScalarBf16 {
  WICK_INLINE float operator()(uint16_t h) const {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }
};
struct ScalarF16 {
  WICK_INLINE float operator()(uint16_t h) const { return f16::to_f32(h); }
};
struct ScalarF32 {
  WICK_INLINE float operator()(float f) const { return f; }
};
// The baseline has no f16 conversion instruction: lane by lane, as f16_to_f32_base.
struct LoadF16Base {
  WICK_INLINE Vec<4>::F operator()(const uint16_t* p) const {
    float f[4];
    for (int l = 0; l < 4; ++l) f[l] = f16::to_f32(p[l]);
    return load<Vec<4>::F>(f);
  }
};

// The kernels Kernels::dot_* and axpy_* of one type at W lanes, with the level's loads.
#define WICK_DOT(T, suffix, W, ATTR, LOAD, SCALAR)                                                                   \
  ATTR __attribute__((flatten)) void dot_##suffix(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x,  \
                                                  int64_t ldx, int64_t nv, float* out, int64_t ldo) {                \
    dot_rows_v<W, kDotRows<W>, kDotVecs<W>>(a, lda, rows, k, x, ldx, nv, out, ldo, LOAD{}, SCALAR{});                \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void axpy_##suffix(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, \
                                                   int64_t ldx, int64_t nv, float* out, int64_t ldo) {               \
    axpy_rows_v<W, kAxpyVecs<W>>(a, lda, rows, k, x, ldx, nv, out, ldo, LOAD{}, SCALAR{});                           \
  }

}  // namespace

// ---- the levels ------------------------------------------------------------------------------

WICK_DOT(uint16_t, bf16_base, 4, , LoadBf16<4>, ScalarBf16)
WICK_DOT(uint16_t, f16_base, 4, , LoadF16Base, ScalarF16)
WICK_DOT(float, f32_base, 4, , LoadF32<4>, ScalarF32)

#ifdef WICK_SIMD_X86
namespace {
// The f16 loads of the matrix-vector kernels (see LoadBf16Avx2 in simd_impl.h).
struct LoadF16Avx2 {
  WICK_AVX2 Vec<8>::F operator()(const uint16_t* p) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct LoadF16Avx512 {
  WICK_AVX512 Vec<16>::F operator()(const uint16_t* p) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
}  // namespace

WICK_DOT(uint16_t, bf16_avx2, 8, WICK_AVX2, LoadBf16Avx2, ScalarBf16)
WICK_DOT(uint16_t, f16_avx2, 8, WICK_AVX2, LoadF16Avx2, ScalarF16)
WICK_DOT(float, f32_avx2, 8, WICK_AVX2, LoadF32<8>, ScalarF32)
WICK_DOT(uint16_t, bf16_avx512, 16, WICK_AVX512, LoadBf16Avx512, ScalarBf16)
WICK_DOT(uint16_t, f16_avx512, 16, WICK_AVX512, LoadF16Avx512, ScalarF16)
WICK_DOT(float, f32_avx512, 16, WICK_AVX512, LoadF32<16>, ScalarF32)
#endif

}  // namespace wick::cpu::simd::detail
