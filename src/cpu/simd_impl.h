// Internal to the vector kernels of simd.h (the simd*.cpp files): the vector types, each level's
// operations (Ops), the algorithms several kernel files share (exp, the unary loop, lane folds and
// zips), and the declarations of every level's kernels, which simd.cpp puts in its tables.
//
// Each algorithm is written once over GCC / Clang vector types and instantiated inside functions
// whose target attributes differ (baseline: 4 lanes, AVX2: 8 lanes, AVX-512F: 16 lanes; the
// AVX512_BF16 level adds its own bf16 roundings); only the f16 conversions, the streaming stores
// and the level's operations (Ops: the widening loads, min / max, the exponent scaling, the
// narrowing) use intrinsics. Helpers called from the target functions are always_inline and use no
// intrinsics (the operations carry their level's target attribute), so that no copy of them
// compiled for a wider ISA can be merged into baseline code by the linker. Every file that includes
// this one is compiled with -ffp-contract=off (CMakeLists.txt): the levels give the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>

#include "cpu/simd.h"
#include "wick/scalar_types.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WICK_SIMD_X86 1
#include <immintrin.h>
#endif

// Vector arguments of always_inline helpers: GCC notes that their ABI would differ between ISAs,
// which does not matter for functions that are never called out of line.
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports its own AVX-512 conversion intrinsics (an undefined pass-through operand) as
// possibly uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define WICK_INLINE inline __attribute__((always_inline))
#ifdef WICK_SIMD_X86
#define WICK_AVX2 __attribute__((target("avx2,fma,f16c")))
#define WICK_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
// The AVX512_BF16 level, with BW and VL as detect() requires.
#define WICK_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#endif

namespace wick::cpu::simd::detail {

template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
  typedef uint32_t U __attribute__((vector_size(4 * W)));
  typedef uint16_t H __attribute__((vector_size(2 * W)));
  typedef uint64_t Q __attribute__((vector_size(4 * W)));
};

template <class V>
WICK_INLINE V load(const void* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));
  return v;
}
template <class V>
WICK_INLINE void store(void* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof(V));
}

// ---- the levels' operations ------------------------------------------------------------------
// Per level (Ops: OpsBase; OpsAvx2, OpsAvx512 and OpsAvx512Bf16 on x86-64),
// the operations that the generic vector code cannot express or that GCC 12 compiles poorly: a fused
// multiply-add (the baseline has no FMA instruction: std::fma a lane), the square root and PMULUDQ
// (each 64-bit lane's product of the low halves of a and b) of the random kernels; min / max as
// x86's MINPS / MAXPS (a < b ? a : b, a > b ? a : b: b where either is NaN); scale(e, n) = e * 2^n
// for an integer n in [-150, 128] and e in [0.5, 2), rounded once (only a subnormal result
// rounds); narrow, the low 16 bits of each 32-bit lane; to_bf16, bf16::from_f32 of each lane; and
// bf16, the widening load of W bf16 values. Each gives the same bits at every level.
//
// Note [Vector exp and bf16 operations]
// The exponentials (exp_v: exp, sigmoid, silu, gelu and softmax's exp_sum16) and the bf16
// conversions are generic vector code but for Ops, which each level implements with the
// instructions that the generic form does not compile to: one MINPS / MAXPS per clamp at every
// level; at AVX-512 one VSCALEFPS for the scaling by 2^n (e * 2^n rounded once, the bits of the
// two exact powers of scale_by_two_powers), one VPMOVDW to narrow and one VPMOVZXWD to widen. At
// Avx512Bf16 and Amx, VCVTNEPS2BF16 rounds to bf16 (rounding and NaN as bf16::from_f32; subnormal
// inputs, which it flushes, are rounded as the level below rounds them, in a branch). bf16
// arithmetic and the bf16 exponentials run in one pass that widens, computes in f32 and rounds once
// (arith_bf16, unary_bf16), not through f32 buffers. Every level gives the same bits.

// e * 2^n as two exact powers of two (n = a + b, each half a normal power): e * 2^a is exact, the
// second product rounds once, where the result is subnormal.
template <int W>
WICK_INLINE typename Vec<W>::F scale_by_two_powers(const typename Vec<W>::F& e, const typename Vec<W>::F& n) {
  using F = typename Vec<W>::F;
  using I = typename Vec<W>::I;
  using U = typename Vec<W>::U;
  // (A NaN lane converts to some integer; its e is NaN, so the scale does not matter. The scale is
  // built in unsigned arithmetic, which wraps rather than overflows for such a lane.)
  const I ni = __builtin_convertvector(n, I);
  const I a = ni >> 1, b = ni - a;
  const F sa = reinterpret_cast<F>((reinterpret_cast<U>(a) + 127u) << 23);
  const F sb = reinterpret_cast<F>((reinterpret_cast<U>(b) + 127u) << 23);
  return e * sa * sb;
}

// bf16::from_f32 of each lane (Ops::to_bf16 below the AVX512_BF16 level): round to nearest even on
// the dropped 16 bits (a carry into the exponent gives inf when due); NaN keeps its top bits with
// the quiet bit set.
template <int W, class Ops>
WICK_INLINE typename Vec<W>::H round_bf16_v(const typename Vec<W>::F& x, const Ops& ops) {
  using U = typename Vec<W>::U;
  const U u = reinterpret_cast<U>(x);
  const U r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const U q = (u >> 16) | 0x40u;
  return ops.narrow((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

// The widening load of W bf16 values (OpsBase::bf16, and the matrix-vector kernels' at 4 lanes).
template <int W>
struct LoadBf16 {
  WICK_INLINE typename Vec<W>::F operator()(const uint16_t* p) const {
    using U = typename Vec<W>::U;
    return reinterpret_cast<typename Vec<W>::F>(__builtin_convertvector(load<typename Vec<W>::H>(p), U) << 16);
  }
};

struct OpsBase {
  using F = Vec<4>::F;
  F fma(const F& a, const F& b, const F& c) const {
    F r;
    for (int l = 0; l < 4; ++l) r[l] = std::fma(a[l], b[l], c[l]);
    return r;
  }
  F sqrt(const F& x) const {
    F r;
    for (int l = 0; l < 4; ++l) r[l] = std::sqrt(x[l]);
    return r;
  }
  Vec<4>::Q mul_even(const Vec<4>::Q& a, const Vec<4>::Q& b) const {
#ifdef WICK_SIMD_X86
    return reinterpret_cast<Vec<4>::Q>(_mm_mul_epu32(reinterpret_cast<__m128i>(a), reinterpret_cast<__m128i>(b)));
#else
    return (a & 0xffffffffu) * (b & 0xffffffffu);
#endif
  }
#ifdef WICK_SIMD_X86
  F min(const F& a, const F& b) const { return _mm_min_ps(a, b); }
  F max(const F& a, const F& b) const { return _mm_max_ps(a, b); }
#else
  F min(const F& a, const F& b) const { return a < b ? a : b; }
  F max(const F& a, const F& b) const { return a > b ? a : b; }
#endif
  F scale(const F& e, const F& n) const { return scale_by_two_powers<4>(e, n); }
  Vec<4>::H narrow(const Vec<4>::U& u) const { return __builtin_convertvector(u, Vec<4>::H); }
  Vec<4>::H to_bf16(const F& x) const { return round_bf16_v<4>(x, *this); }
  F bf16(const uint16_t* p) const { return LoadBf16<4>{}(p); }
};

#ifdef WICK_SIMD_X86

// The widening loads above the baseline (Ops::bf16, and the matrix-vector kernels' Load): bf16 by a
// zero extension and a shift (GCC 12 compiles the generic LoadBf16 at 8 and 16 lanes into several
// shuffles a vector), f16 (LoadF16Avx2 / Avx512 in simd_matvec.cpp) through F16C / AVX-512F. Like the Ops they
// carry their level's target and are not always_inline (an always_inline call is checked in the
// generic code itself, which has no target); the kernels (flatten) inline them.
struct LoadBf16Avx2 {
  WICK_AVX2 Vec<8>::F operator()(const uint16_t* p) const {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
};
struct LoadBf16Avx512 {
  WICK_AVX512 Vec<16>::F operator()(const uint16_t* p) const {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  }
};

// The operations of OpsBase at 8 and 16 lanes.
struct OpsAvx2 {
  using F = Vec<8>::F;
  WICK_AVX2 F fma(const F& a, const F& b, const F& c) const { return _mm256_fmadd_ps(a, b, c); }
  WICK_AVX2 F sqrt(const F& x) const { return _mm256_sqrt_ps(x); }
  WICK_AVX2 Vec<8>::Q mul_even(const Vec<8>::Q& a, const Vec<8>::Q& b) const {
    return reinterpret_cast<Vec<8>::Q>(_mm256_mul_epu32(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
  }
  WICK_AVX2 F min(const F& a, const F& b) const { return _mm256_min_ps(a, b); }
  WICK_AVX2 F max(const F& a, const F& b) const { return _mm256_max_ps(a, b); }
  WICK_AVX2 F scale(const F& e, const F& n) const { return scale_by_two_powers<8>(e, n); }
  WICK_AVX2 Vec<8>::H narrow(const Vec<8>::U& u) const { return __builtin_convertvector(u, Vec<8>::H); }
  WICK_AVX2 Vec<8>::H to_bf16(const F& x) const { return round_bf16_v<8>(x, *this); }
  WICK_AVX2 F bf16(const uint16_t* p) const { return LoadBf16Avx2{}(p); }
};
struct OpsAvx512 {
  using F = Vec<16>::F;
  WICK_AVX512 F fma(const F& a, const F& b, const F& c) const { return _mm512_fmadd_ps(a, b, c); }
  WICK_AVX512 F sqrt(const F& x) const { return _mm512_sqrt_ps(x); }
  WICK_AVX512 Vec<16>::Q mul_even(const Vec<16>::Q& a, const Vec<16>::Q& b) const {
    return reinterpret_cast<Vec<16>::Q>(_mm512_mul_epu32(reinterpret_cast<__m512i>(a), reinterpret_cast<__m512i>(b)));
  }
  WICK_AVX512 F min(const F& a, const F& b) const { return _mm512_min_ps(a, b); }
  WICK_AVX512 F max(const F& a, const F& b) const { return _mm512_max_ps(a, b); }
  // VSCALEFPS: e * 2^floor(n), rounded once.
  WICK_AVX512 F scale(const F& e, const F& n) const { return _mm512_scalef_ps(e, n); }
  WICK_AVX512 Vec<16>::H narrow(const Vec<16>::U& u) const {
    return reinterpret_cast<Vec<16>::H>(_mm512_cvtepi32_epi16(reinterpret_cast<__m512i>(u)));
  }
  WICK_AVX512 Vec<16>::H to_bf16(const F& x) const { return round_bf16_v<16>(x, *this); }
  WICK_AVX512 F bf16(const uint16_t* p) const { return LoadBf16Avx512{}(p); }
};

// The AVX512_BF16 level's operations: OpsAvx512's, with bf16 rounded by VCVTNEPS2BF16 (Note [Vector
// exp and bf16 operations]).
struct OpsAvx512Bf16 : OpsAvx512 {
  // The instruction rounds to nearest even and quiets NaN as bf16::from_f32 does, but takes a
  // subnormal input as zero (DAZ), whatever MXCSR says: lanes with a zero exponent and a nonzero
  // mantissa are rounded as OpsAvx512 rounds them, in a branch that ordinary data never takes.
  WICK_AVX512BF16 Vec<16>::H to_bf16(const F& x) const {
    const __m512i u = reinterpret_cast<__m512i>(x);
    __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
    const __mmask16 sub = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)), u,
                                                      _mm512_set1_epi32(0x007fffff));
    if (sub != 0) h = _mm256_mask_blend_epi16(sub, h, reinterpret_cast<__m256i>(OpsAvx512::to_bf16(x)));
    return reinterpret_cast<Vec<16>::H>(h);
  }
};
#endif

// ---- exp -------------------------------------------------------------------------------------
// exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a part exact in f32 times
// small n and a correction), e^r on |r| <= ln(2)/2 by the degree-7 polynomial 1 + r + r^2 P(r) of
// Cephes' expf. 2^n is applied exactly, with one rounding in the subnormal range (the level's
// Ops::scale), so that results between the largest f32 and the smallest subnormal come out right.
template <int W, class Ops>
WICK_INLINE typename Vec<W>::F exp_v(const typename Vec<W>::F& x_in, const Ops& ops) {
  using F = typename Vec<W>::F;
  // Beyond these, the result is inf or 0 anyway; clamping keeps n small. NaN passes through the
  // clamps (Ops::min / max return their second operand then) and propagates through the arithmetic.
  const F x = ops.max(F{} - 104.0f, ops.min(F{} + 89.0f, x_in));
  const F shifter = F{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  F n = x * 1.44269504088896341f + shifter;
  n = n - shifter;
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const F r2 = r * r;
  return ops.scale(r2 * p + r + 1.0f, n);  // n in [-150, 128]
}

// exp(x) (Unary::Exp), or x / (1 + exp(-k * g(x))) with g the identity (sigmoid numerator 1, silu
// x) or the gelu cubic.
template <int W, Unary A, class Ops>
WICK_INLINE typename Vec<W>::F act_v(const typename Vec<W>::F& x, const Ops& ops) {
  using F = typename Vec<W>::F;
  if constexpr (A == Unary::Exp) {
    return exp_v<W>(x, ops);
  } else if constexpr (A == Unary::Gelu) {
    const F z = (x + 0.044715f * x * x * x) * -1.59576912160573071176f;
    return x / (exp_v<W>(z, ops) + 1.0f);
  } else if constexpr (A == Unary::Silu) {
    return x / (exp_v<W>(-x, ops) + 1.0f);
  } else {
    return (F{} + 1.0f) / (exp_v<W>(-x, ops) + 1.0f);
  }
}

// Runs f over whole vectors of W elements of T, each loaded by ld (to f32 lanes) and stored by st,
// then the tail through a zero-padded vector (the same arithmetic for every element, wherever it
// sits).
template <int W, class T, class F, class Ld, class St>
WICK_INLINE void unary_v(const T* in, T* out, int64_t n, F f, Ld ld, St st) {
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto a = f(ld(in + i)), b = f(ld(in + i + W));
    st(out + i, a);
    st(out + i + W, b);
  }
  for (; i + W <= n; i += W) st(out + i, f(ld(in + i)));
  if (i < n) {
    T buf[W] = {};
    __builtin_memcpy(buf, in + i, static_cast<size_t>(n - i) * sizeof(T));
    st(buf, f(ld(buf)));
    __builtin_memcpy(out + i, buf, static_cast<size_t>(n - i) * sizeof(T));
  }
}

template <int W, class F>
WICK_INLINE void unary_f32(const float* in, float* out, int64_t n, F f) {
  using V = typename Vec<W>::F;
  unary_v<W>(
      in, out, n, f, [](const float* p) __attribute__((always_inline)) { return load<V>(p); },
      [](float* p, const V& v) __attribute__((always_inline)) { store(p, v); });
}

// ---- lane folds and zips ---------------------------------------------------------------------

// Lane l of v rotated down by H lanes: lane l takes lane (l + H) mod W.
template <int W, int H, class V, std::size_t... I>
WICK_INLINE V rotate_lanes(const V& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, ((I + H) % W)...);
}

// v's W lanes merged into lane 0 in halves: lane l with lane l + W / 2, then with l + W / 4, ...
template <int W, int H = W / 2, class V, class Merge>
WICK_INLINE void fold_lanes(V& v, Merge merge) {
  if constexpr (H >= 1) {
    v = merge(rotate_lanes<W, H>(v, std::make_index_sequence<W>()), v);
    fold_lanes<W, H / 2>(v, merge);
  }
}

// Lanes [H * N / 2, H * N / 2 + N / 2) of x and y interleaved: x's first, then y's, lane by lane.
template <int N, int H, class X, std::size_t... I>
WICK_INLINE X zip(const X& x, const X& y, std::index_sequence<I...>) {
  return __builtin_shufflevector(x, y, (I % 2 ? N + H * N / 2 + I / 2 : H * N / 2 + I / 2)...);
}
// The even (E = 0) or odd (E = 1) lanes of the 2N lanes x, y.
template <int N, int E, class X, std::size_t... I>
WICK_INLINE X unzip(const X& x, const X& y, std::index_sequence<I...>) {
  return __builtin_shufflevector(x, y, (2 * I + E)...);
}

// ---- the kernels of each level -----------------------------------------------------------------
// Defined in simd_elementwise.cpp, simd_rows.cpp, simd_memory.cpp, simd_random.cpp and
// simd_matvec.cpp (suffix L: base, avx2, avx512, each with its level's target attribute ATTR), put
// in the tables of simd.cpp; the members of Kernels (simd.h) of the same names.
#define WICK_SIMD_DECLARE(L, ATTR)                                                                                     \
  ATTR void f32_to_f16_##L(const float* in, uint16_t* out, int64_t n);                                                 \
  ATTR void f16_to_f32_##L(const uint16_t* in, float* out, int64_t n);                                                 \
  ATTR void f32_to_bf16_##L(const float* in, uint16_t* out, int64_t n);                                                \
  ATTR void bf16_to_f32_##L(const uint16_t* in, float* out, int64_t n);                                                \
  ATTR void exp_##L(const float* in, float* out, int64_t n);                                                           \
  ATTR void sigmoid_##L(const float* in, float* out, int64_t n);                                                       \
  ATTR void silu_##L(const float* in, float* out, int64_t n);                                                          \
  ATTR void gelu_##L(const float* in, float* out, int64_t n);                                                          \
  ATTR float max_##L(const float* x, int64_t n);                                                                       \
  ATTR float min_##L(const float* x, int64_t n);                                                                       \
  ATTR float sum16_##L(const float* x, int64_t n);                                                                     \
  ATTR float exp_sum16_##L(const float* in, float* out, int64_t n, float shift);                                       \
  ATTR void scale_##L(float* x, int64_t n, float s);                                                                   \
  ATTR float sumsq16_##L(const float* x, int64_t n, float shift);                                                      \
  ATTR void norm_##L(const float* in, float* out, int64_t n, float shift, float s, const float* w, const float* b);    \
  ATTR void unary_bf16_##L(Unary op, const uint16_t* in, uint16_t* out, int64_t n);                                    \
  ATTR void arith_bf16_##L(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out,      \
                           int64_t n);                                                                                 \
  ATTR void fill_##L(void* dst, int64_t nbytes, uint64_t pattern, bool stream);                                        \
  ATTR void dot_bf16_##L(const uint16_t* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx,         \
                         int64_t nv, float* out, int64_t ldo);                                                         \
  ATTR void dot_f16_##L(const uint16_t* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx,          \
                        int64_t nv, float* out, int64_t ldo);                                                          \
  ATTR void dot_f32_##L(const float* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv, \
                        float* out, int64_t ldo);                                                                      \
  ATTR void axpy_bf16_##L(const uint16_t* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx,        \
                          int64_t nv, float* out, int64_t ldo);                                                        \
  ATTR void axpy_f16_##L(const uint16_t* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx,         \
                         int64_t nv, float* out, int64_t ldo);                                                         \
  ATTR void axpy_f32_##L(const float* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx,            \
                         int64_t nv, float* out, int64_t ldo);                                                         \
  ATTR void philox_##L(const uint32_t* keys, uint64_t first, int64_t nblocks, uint32_t* words);                        \
  ATTR void uniform_##L(const uint32_t* w, float* out, int64_t n, float lo, float span, float up);                     \
  ATTR void normal_##L(const uint32_t* w, float* out, int64_t n, float mean, float std);                               \
  ATTR void transpose_##L(const void* src, int64_t lds, void* dst, int64_t ldd, int64_t rows, int64_t cols, int esize);

WICK_SIMD_DECLARE(base, )
#ifdef WICK_SIMD_X86
WICK_SIMD_DECLARE(avx2, WICK_AVX2)
WICK_SIMD_DECLARE(avx512, WICK_AVX512)
// The kernels of the AVX512_BF16 level that differ from AVX-512F's: those that round to bf16.
WICK_AVX512BF16 void f32_to_bf16_avx512bf16(const float* in, uint16_t* out, int64_t n);
WICK_AVX512BF16 void unary_bf16_avx512bf16(Unary op, const uint16_t* in, uint16_t* out, int64_t n);
WICK_AVX512BF16 void arith_bf16_avx512bf16(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy,
                                           uint16_t* out, int64_t n);
#endif

}  // namespace wick::cpu::simd::detail
